"""Arrays of non-header types (`bit<8>[16] arr`, the C-style field
`bit<8> arr[16]`): their types, how element accesses lower to slices of the
array's bits (element 0 in the most significant bits, first on the wire), and
the one-line `file:line:col` errors for what P4 or this target refuses."""

import re

import pytest

from fe_util import BLOCKS, PRELUDE, apply_stmts, program_with_ingress
from testbed.cli import main
from testbed.p4model.errors import P4Error, P4Unsupported
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
}
"""


def _types():
    p = program_with_ingress("arrays_t a; apply { }", ARRAYS)
    decls = {d.name: d.type for d in p.declarations if isinstance(d, ir.TypeDeclRef)}
    return {f.name: f.type for f in decls["arrays_t"].fields}


def test_both_spellings_are_one_type_of_the_elements_bits():
    t = _types()
    assert t["arr"] == t["carr"] == ir.ArrayT(32, False, ir.BitT(8), 4)
    assert str(t["arr"]) == "bit<8>[4]" and t["arr"].bit_width() == 32
    # T[2][3] is (T[2])[3]: three elements, each a bit<4>[2]
    assert t["n"] == ir.array_of(ir.array_of(ir.BitT(4), 2), 3) and t["n"].width == 24
    assert str(t["n"]) == "bit<4>[2][3]"
    assert t["s"].element == ir.BitT(8, True) and not t["s"].signed
    assert t["f"].width == 3 and t["b"] == ir.array_of(ir.BitT(8), 2)
    assert t["arr"] != ir.BitT(32)          # an array is not its bits for the type checker


def test_constant_index_is_a_slice_element_zero_most_significant():
    s = apply_stmts("arrays_t a; meta.x = a.arr[0]; meta.x = a.arr[3]; a.arr[1] = 7; "
                    "meta.x[3:0] = a.n[1][0]; meta.s = a.s[1]; meta.f = a.f[2];", ARRAYS)
    assert (s[1].rhs.hi, s[1].rhs.lo) == (31, 24)
    assert (s[2].rhs.hi, s[2].rhs.lo) == (7, 0)
    assert isinstance(s[3].lhs, ir.Slice) and (s[3].lhs.hi, s[3].lhs.lo) == (23, 16)
    nested = s[4].rhs                              # n[1] is bits [15:8]; its element 0 is [15:12]
    assert isinstance(nested, ir.Slice) and (nested.hi, nested.lo) == (15, 12)
    assert isinstance(s[5].rhs, ir.Cast) and s[5].rhs.type == ir.BitT(8, True)
    assert (s[5].rhs.operand.hi, s[5].rhs.operand.lo) == (7, 0)
    assert isinstance(s[6].rhs, ir.Cast) and s[6].rhs.type == ir.BoolT()


def test_run_time_index_reads_under_a_bound_and_writes_under_an_if():
    s = apply_stmts("arrays_t a; meta.x = a.arr[meta.x]; a.arr[meta.x] = 1; a.s[meta.x] = -1;", ARRAYS)
    read = s[1].rhs
    assert isinstance(read, ir.Mux) and read.cond.op == "<" and read.cond.right.value == 4
    write = s[2]
    assert isinstance(write, ir.If) and write.cond.right.value == 4
    assert isinstance(write.then, ir.Assign) and write.then.lhs.name == "arr"
    assert isinstance(s[3], ir.If)


def test_whole_arrays_assign_and_compare_when_their_types_are_equal():
    s = apply_stmts("arrays_t a; arrays_t b; a.arr = b.carr; meta.f = a.arr == b.arr; "
                    "bit<8>[4] local = a.arr;", ARRAYS)
    assert s[2].lhs.type == s[2].rhs.type
    assert s[3].rhs.op == "==" and s[3].rhs.type == ir.BoolT()
    assert s[4].var.type == ir.array_of(ir.BitT(8), 4)


@pytest.mark.parametrize("body,top,message", [
    ("arrays_t a; apply { a.arr[4] = 1; }", ARRAYS, r"index 4 out of bounds for bit<8>\[4\] \(0 to 3\)"),
    ("arrays_t a; apply { meta.x = a.carr[9]; }", ARRAYS, r"index 9 out of bounds for bit<8>\[4\]"),
    ("arrays_t a; apply { a.arr = a.arr + a.arr; }", ARRAYS, r"operator \+ cannot be applied to bit<8>\[4\]"),
    ("arrays_t a; apply { a.arr = 0; }", ARRAYS, r"type mismatch: expected bit<8>\[4\], got int"),
    ("arrays_t a; apply { a.arr = a.w; }", ARRAYS, r"type mismatch: expected bit<8>\[4\], got bit<16>\[2\]"),
    ("arrays_t a; apply { meta.z = a.arr; }", ARRAYS, r"type mismatch: expected bit<32>, got bit<8>\[4\]"),
    ("arrays_t a; apply { meta.f = a.arr == a.w; }", ARRAYS, r"cannot compare bit<8>\[4\] with bit<16>\[2\]"),
    ("arrays_t a; apply { meta.x = a.arr[7:0]; }", ARRAYS, r"cannot slice a value of type bit<8>\[4\]"),
    ("arrays_t a; apply { meta.z = (bit<32>)a.arr; }", ARRAYS, r"cannot cast bit<8>\[4\] to bit<32>"),
    ("arrays_t a; apply { meta.x = a.arr[meta.f]; }", ARRAYS, r"array index must be a number, not bool"),
    ("apply { }", "struct Z { bit<8>[0] z; }", r"the size of bit<8>\[...\] must be a positive constant"),
    ("apply { }", "const bit<8> K = 0; header Z { bit<8> z[K]; }", r"the size of bit<8>\[...\] must be a positive"),
    ("apply { }", "struct Z { varbit<8>[2] z; }", r"array elements cannot have type varbit<8>"),
    ("apply { }", "header Z { bool b; error[2] e; }", r"array elements cannot have type error"),
])
def test_errors_are_one_located_line(body, top, message):
    with pytest.raises(P4Error) as info:
        program_with_ingress(body, top)
    text = str(info.value)
    m = LOCATED.match(text)
    assert m, f"not one file:line:col line: {text!r}"
    assert re.search(message, m.group("msg")), text


@pytest.mark.parametrize("body,top,message", [
    ("arrays_t a; apply { }", ARRAYS + "struct Q { S[2] q; }", r"array type S\[2\]"),
    ("arrays_t a; apply { a.n[meta.x][0] = 1; }", ARRAYS, r"an array that is itself selected with a run-time"),
    ("arrays_t a; action w(out bit<8> v) { v = 1; } apply { w(a.arr[meta.x]); }", ARRAYS,
     r"at a run-time index as an out argument"),
])
def test_unsupported_is_one_located_line(body, top, message):
    with pytest.raises(P4Unsupported) as info:
        program_with_ingress(body, top)
    assert LOCATED.match(str(info.value)) and re.search(message, str(info.value)), str(info.value)


def test_p4check_of_a_bad_array_is_one_line_no_traceback(tmp_path, capsys):
    bad = tmp_path / "bad_array.p4"
    bad.write_text(PRELUDE + "header a_t { bit<8>[2] a; }\n" + BLOCKS
                   + "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
                   + "    a_t v;\n    apply { v.a[2] = 1; }\n}\nV1Switch(P(), VC(), I(), E(), CC(), D()) main;\n")
    line = bad.read_text().splitlines().index("    apply { v.a[2] = 1; }") + 1
    assert main(["p4check", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert err[0].endswith(f"{bad}:{line}:13: index 2 out of bounds for bit<8>[2] (0 to 1)"), err
