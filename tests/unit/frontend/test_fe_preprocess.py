"""Preprocessor: includes, macros, conditionals, and the line map that
makes later errors point at the original file:line."""


import pytest

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import load_program
from testbed.p4model.frontend.preprocess import PACKAGE_INCLUDE_DIR, preprocess


def write(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def lines(src):
    return [l for l in src.text.splitlines() if l.strip()]


def test_object_and_function_macros(tmp_path):
    f = write(tmp_path, "a.p4", "#define W 8\n#define ADD(a, b) ((a) + (b))\nbit<W> x = ADD(1, W);\n")
    assert lines(preprocess(f)) == ["bit<8> x = ((1) + (8));"]


def test_macro_call_spanning_lines_keeps_line_count(tmp_path):
    f = write(tmp_path, "a.p4", "#define F(a, b) a+b\nx = F(1,\n 2);\ny;\n")
    src = preprocess(f)
    assert src.text.splitlines()[1].replace(" ", "") == "x=1+2;"
    # `y;` still maps to line 4
    idx = src.text.splitlines().index("y;")
    assert src.origins[idx] == (str(f), 4)


def test_stringify_and_paste(tmp_path):
    f = write(tmp_path, "a.p4", '#define S(x) #x\n#define CAT(a, b) a ## b\nS(hi) CAT(foo, bar)\n')
    assert lines(preprocess(f)) == ['"hi" foobar']


def test_undef_and_defines_argument(tmp_path):
    f = write(tmp_path, "a.p4", "#define A 1\n#undef A\nA B\n")
    assert lines(preprocess(f, defines={"B": "2"})) == ["A 2"]


def test_conditionals(tmp_path):
    text = """#define V 3
#if V > 2 && defined(V)
yes1
#elif V == 3
no1
#else
no2
#endif
#ifdef NOPE
no3
#elif defined NOPE || V
yes2
#endif
#ifndef NOPE
#if 0
no4
#else
yes3
#endif
#endif
"""
    assert lines(preprocess(write(tmp_path, "a.p4", text))) == ["yes1", "yes2", "yes3"]


def test_comments_and_continuations(tmp_path):
    text = '/* multi\nline */ a // tail\n#define LONG 1 + \\\n 2\nb = LONG; "// not a comment"\n'
    src = preprocess(write(tmp_path, "a.p4", text))
    assert lines(src) == [" a  ", 'b = 1 +  2; "// not a comment"']
    idx = [i for i, l in enumerate(src.text.splitlines()) if l.startswith("b =")][0]
    assert src.origins[idx][1] == 5


def test_include_relative_then_dirs_then_package(tmp_path):
    write(tmp_path, "inc/x.p4", "from_inc_dir\n")
    write(tmp_path, "sub/y.p4", '#include "z.p4"\n')
    write(tmp_path, "sub/z.p4", "from_relative\n")
    main = write(tmp_path, "main.p4", '#include "sub/y.p4"\n#include <x.p4>\n#include <core.p4>\n')
    src = preprocess(main, include_dirs=[tmp_path / "inc"])
    assert "from_relative" in src.text and "from_inc_dir" in src.text
    assert str(PACKAGE_INCLUDE_DIR / "core.p4") in src.files


def test_include_guard(tmp_path):
    write(tmp_path, "g.p4", "#ifndef G\n#define G\nonce\n#endif\n")
    main = write(tmp_path, "m.p4", '#include "g.p4"\n#include "g.p4"\n')
    assert lines(preprocess(main)) == ["once"]


def test_include_cycle_is_an_error(tmp_path):
    write(tmp_path, "a.p4", '#include "b.p4"\n')
    write(tmp_path, "b.p4", '\n#include "a.p4"\n')
    with pytest.raises(P4Error) as e:
        preprocess(tmp_path / "a.p4")
    assert str(e.value).startswith(f"{tmp_path / 'b.p4'}:2:1: include cycle")


def test_missing_include(tmp_path):
    f = write(tmp_path, "a.p4", '\n\n#include "nope.p4"\n')
    with pytest.raises(P4Error, match=r"a\.p4:3:1: #include file not found: nope\.p4"):
        preprocess(f)


@pytest.mark.parametrize("text,msg", [
    ("#if 1\n", "unterminated #if"),
    ("#endif\n", "#endif without #if"),
    ("#else\n", "#else without #if"),
    ("#error stop here\n", "#error stop here"),
    ("#frobnicate\n", "unknown preprocessor directive"),
    ("#define F(a) a\nF(1, 2)\n", "macro F expects 1 arguments, got 2"),
    ("#if 1 +\n#endif\n", "invalid #if expression"),
])
def test_directive_errors(tmp_path, text, msg):
    with pytest.raises(P4Error, match=msg):
        preprocess(write(tmp_path, "a.p4", text))


def test_errors_after_preprocessing_point_at_original_lines(tmp_path):
    write(tmp_path, "types.p4", "// a comment\n\nheader h_t {\n    bit<8> a;\n    bogus_t b;\n}\n")
    main = write(tmp_path, "main.p4", '#include <core.p4>\n#define X 1\n#include "types.p4"\n')
    with pytest.raises(P4Error) as e:
        load_program(main)
    assert str(e.value) == f"{tmp_path / 'types.p4'}:5:5: syntax error: unexpected 'bogus_t', " + str(e.value).split("unexpected 'bogus_t', ")[1]
    assert "\n" not in str(e.value)


def test_self_referential_macro_does_not_loop(tmp_path):
    f = write(tmp_path, "a.p4", "#define A A + 1\n#define B C\n#define C B\nA B\n")
    assert lines(preprocess(f)) == ["A + 1 B"]
