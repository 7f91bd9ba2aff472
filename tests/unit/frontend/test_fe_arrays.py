"""Arrays of non-header types (`bit<8>[16] arr`, the C-style field
`bit<8> arr[16]`, arrays of arrays `T[N][M]`): their types and the one-line
`file:line:col` errors for what P4 refuses (bit-exact behaviour on the wire:
tests/p4programs/fe_arrays*.p4 and their STF files)."""

import re

import pytest

from fe_util import BLOCKS, PRELUDE, apply_stmts, program_with_ingress
from testbed.cli import main
from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir

LOCATED = re.compile(r"^snippet\.p4:(?P<line>\d+):(?P<col>\d+): (?P<msg>[^\n]+)$")
ARRAYS = """
typedef bit<8> Byte;
struct S { bit<8> v; }
struct arrays_t {
    bit<8>[4] arr;
    bit<8> carr[4];
    bit<4>[2][3] n;
    int<8>[2] s;
    bool[3] f;
    Byte[2] b;
    bit<16>[2] w;
    S[2] q;
}
"""


def _types():
    p = program_with_ingress("arrays_t a; apply { }", ARRAYS)
    decls = {d.name: d.type for d in p.declarations if isinstance(d, ir.TypeDeclRef)}
    return {f.name: f.type for f in decls["arrays_t"].fields}


def test_both_spellings_are_one_type():
    t = _types()
    assert t["arr"] == t["carr"] == ir.ArrayT(ir.BitT(8), 4)
    assert str(t["arr"]) == "bit<8>[4]" and t["arr"].bit_width() == 32
    assert t["b"] == ir.ArrayT(ir.BitT(8), 2)              # through a typedef name
    assert t["s"].element == ir.BitT(8, True) and t["f"].bit_width() == 3


def test_an_array_of_arrays_reads_left_to_right():
    # T[2][3] is (T[2])[3]: three elements, each a bit<4>[2], as p4c's grammar reads it
    n = _types()["n"]
    assert n == ir.ArrayT(ir.ArrayT(ir.BitT(4), 2), 3) and str(n) == "bit<4>[2][3]" and n.bit_width() == 24
    s = apply_stmts("arrays_t a; a.n[2][1] = 1; meta.x[3:0] = a.n[meta.x][meta.x]; a.q[1].v = 3;", ARRAYS)
    assert s[1].lhs.type == ir.BitT(4) and s[1].lhs.base.type == ir.ArrayT(ir.BitT(4), 2)
    assert [s[1].lhs.index.value, s[1].lhs.base.index.value] == [1, 2]
    assert s[2].rhs.type == ir.BitT(4) and s[3].lhs.name == "v" and s[3].lhs.base.type.name == "S"


def test_whole_arrays_assign_and_compare_when_their_types_are_equal():
    s = apply_stmts("arrays_t a; arrays_t b; a.arr = b.carr; meta.f = a.arr == b.arr; "
                    "bit<8>[4] local = a.arr;", ARRAYS)
    assert s[2].lhs.type == s[2].rhs.type
    assert s[3].rhs.op == "==" and s[3].rhs.type == ir.BoolT()
    assert s[4].var.type == ir.ArrayT(ir.BitT(8), 4)


@pytest.mark.parametrize("body,top,message", [
    ("arrays_t a; apply { a.arr[4] = 1; }", ARRAYS, r"index 4 out of bounds for bit<8>\[4\]"),
    ("arrays_t a; apply { meta.x = a.carr[9]; }", ARRAYS, r"index 9 out of bounds for bit<8>\[4\]"),
    ("arrays_t a; apply { a.n[2][2] = 1; }", ARRAYS, r"index 2 out of bounds for bit<4>\[2\]"),
    ("arrays_t a; apply { a.arr = a.arr + a.arr; }", ARRAYS, r"operator \+ cannot be applied to bit<8>\[4\]"),
    ("arrays_t a; apply { a.arr = 0; }", ARRAYS, r"cannot use an integer where bit<8>\[4\] is expected"),
    ("arrays_t a; apply { a.arr = a.w; }", ARRAYS, r"type mismatch: expected bit<8>\[4\], got bit<16>\[2\]"),
    ("arrays_t a; apply { meta.z = a.arr; }", ARRAYS, r"type mismatch: expected bit<32>, got bit<8>\[4\]"),
    ("arrays_t a; apply { meta.f = a.arr == a.w; }", ARRAYS, r"cannot compare bit<8>\[4\] with bit<16>\[2\]"),
    ("arrays_t a; apply { meta.x = a.arr[7:0]; }", ARRAYS, r"cannot slice a value of type bit<8>\[4\]"),
    ("arrays_t a; apply { meta.z = (bit<32>)a.arr; }", ARRAYS, r"cannot cast bit<8>\[4\] to bit<32>"),
    ("arrays_t a; apply { meta.x = a.arr[meta.f]; }", ARRAYS, r"array index must be a number, not bool"),
    ("arrays_t a; apply { meta.x = a.arr.next; }", ARRAYS, r"array bit<8>\[4\] has no member 'next'"),
    ("apply { }", "struct Z { bit<8>[0] z; }", r"array size must be a positive constant"),
    ("apply { }", "const bit<8> K = 0; header Z { bit<8> z[K]; }", r"array size must be a positive constant"),
    ("apply { }", "header Z { bool b; error[2] e; }", r"header field 'e' cannot have type error\[2\]"),
])
def test_errors_are_one_located_line(body, top, message):
    with pytest.raises(P4Error) as info:
        program_with_ingress(body, top)
    text = str(info.value)
    m = LOCATED.match(text)
    assert m, f"not one file:line:col line: {text!r}"
    assert re.search(message, m.group("msg")), text


def test_p4check_of_a_bad_array_is_one_line_no_traceback(tmp_path, capsys):
    bad = tmp_path / "bad_array.p4"
    bad.write_text(PRELUDE + "header a_t { bit<8>[2] a; }\n" + BLOCKS
                   + "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
                   + "    a_t v;\n    apply { v.a[2] = 1; }\n}\nV1Switch(P(), VC(), I(), E(), CC(), D()) main;\n")
    line = bad.read_text().splitlines().index("    apply { v.a[2] = 1; }") + 1
    assert main(["p4check", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert err[0].endswith(f"{bad}:{line}:13: index 2 out of bounds for bit<8>[2]"), err
