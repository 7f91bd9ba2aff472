"""Bad programs fail with one line `file:line:col: message`, never a
traceback; random token soups raise nothing but P4Error."""

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.p4model.errors import P4Error, P4Unsupported
from testbed.p4model.frontend import load_source, load_program

BAD = sorted((Path(__file__).parent / "bad").glob("*.p4"))
LOCATED = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+): (?P<msg>[^\n]+)$")


def expected_of(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("// error: "), f"{path.name}: first line must be '// error: <substring>'"
    return first[len("// error: "):]


@pytest.mark.parametrize("path", BAD, ids=[p.name for p in BAD])
def test_bad_program_reports_one_located_line(path):
    with pytest.raises(P4Error) as info:
        load_program(path)
    text = str(info.value)
    assert "internal front-end error" not in text
    m = LOCATED.match(text)
    assert m, f"not a one-line file:line:col message: {text!r}"
    expected = expected_of(path)
    located = f"{m.group('line')}:{m.group('col')}: {m.group('msg')}"
    assert expected in located, f"{text!r} does not contain {expected!r}"


def test_corpus_is_not_empty():
    assert len(BAD) >= 25


def test_unsupported_is_its_own_class():
    with pytest.raises(P4Unsupported) as info:
        load_program(Path(__file__).parent / "bad" / "generic_control.p4")
    assert ": unsupported: " in str(info.value)


def test_missing_file_is_a_p4error(tmp_path):
    with pytest.raises(P4Error, match="no such file"):
        load_program(tmp_path / "nope.p4")


TOKENS = ["control", "parser", "state", "transition", "select", "table", "key", "actions", "apply",
          "action", "header", "struct", "{", "}", "(", ")", "<", ">", ">>", "[", "]", ";", ":", ",",
          ".", "=", "==", "+", "-", "&&&", "..", "|+|", "++", "?", "@name(\"x\")", "@", "bit", "<8>",
          "x", "y", "h_t", "8w3", "0x1F", "default", "_", "if", "else", "switch", "exit", "return",
          "extern", "typedef", "enum", "const", "#include <core.p4>", "#define A 1", "A", "\n",
          "\"s\"", "V1Switch", "main", "error", "entries", "value_set", "tuple", "varbit", "/*", "*/",
          "//", "#if", "#endif", "int", "in", "out", "inout", "true", "!", "~", "(bit<8>)"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_token_soup_raises_only_p4error(tokens):
    text = "#include <core.p4>\n#include <v1model.p4>\n" + " ".join(tokens)
    try:
        load_source(text, "soup.p4")
    except P4Error as e:
        assert "\n" not in str(e) and "internal front-end error" not in str(e)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_arbitrary_text_raises_only_p4error(text):
    try:
        load_source(text, "text.p4")
    except P4Error as e:
        assert "\n" not in str(e) and "internal front-end error" not in str(e)


# Python object dumps that must never reach a user: `<testbed.x.Y object at
# 0x...>`, dataclass reprs such as `ControlT(decl=...)`, `Loc(file=...)`.
REPR_LEAK = re.compile(r"<testbed\.|object at 0x|\b[A-Z]\w*\((?:[a-z_]+=|'[^']*'\))|\bLoc\(")


def _messages_of_bad_corpus():
    for path in BAD:
        try:
            load_program(path)
        except P4Error as exc:
            yield path.name, str(exc)


def test_messages_name_types_in_p4_spelling():
    """Every message of the bad-program corpus spells types as P4 does
    (`tuple<bit<8>, bit<16>>`, `step_t`), never as a Python repr."""
    leaks = [(name, text) for name, text in _messages_of_bad_corpus() if REPR_LEAK.search(text)]
    assert not leaks


def test_type_str_spells_every_type_kind():
    from testbed.p4model.frontend import ir
    decl = ir.ControlDecl("ctl_t", [])
    kinds = [ir.TupleT((ir.BitT(8), ir.BoolT())), ir.ControlT(decl), ir.ParserT(ir.ParserDecl("prs_t", [])),
             ir.SetT(ir.BitT(4)), ir.DontCareT(), ir.StackT(ir.HeaderT("h_t", []), 3),
             ir.TableApplyResultT("t"), ir.ActionEnumT("t"), ir.PackageT(ir.PackageDecl("V1Switch", [])),
             ir.ExternT(ir.ExternDecl("register", ["T"], []), [ir.BitT(8)])]
    spelled = [ir.type_str(t) for t in kinds]
    assert spelled[:3] == ["tuple<bit<8>, bool>", "ctl_t", "prs_t"]
    assert spelled[3:6] == ["set<bit<4>>", "_", "h_t[3]"]
    assert not [s for s in spelled if REPR_LEAK.search(s)]
