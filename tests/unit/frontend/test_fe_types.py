"""Type inference, implicit casts and constant folding."""

import pytest

from fe_util import apply_stmts, program_with_ingress
from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir
from testbed.p4model.frontend import types as T


def rhs(body, top=""):
    return apply_stmts(body, top)[-1].rhs


@pytest.mark.parametrize("text,value,t", [
    ("42", 42, ir.IntLitT()), ("0x2A", 42, ir.IntLitT()), ("0b101010", 42, ir.IntLitT()),
    ("0o52", 42, ir.IntLitT()), ("0d42", 42, ir.IntLitT()), ("1_000", 1000, ir.IntLitT()),
    ("8w42", 42, ir.BitT(8)), ("16w0xFFFF", 0xFFFF, ir.BitT(16)), ("8s0x7f", 127, ir.BitT(8, True)),
    ("8s255", -1, ir.BitT(8, True)), ("4w0b1111", 15, ir.BitT(4)),
])
def test_integer_literals(text, value, t):
    c = T.parse_int_literal(text, None)
    assert (c.value, c.type) == (value, t)


def test_literal_that_does_not_fit():
    with pytest.raises(P4Error, match="does not fit in bit<8>"):
        T.parse_int_literal("8w256", None)


def test_unsized_literal_takes_width_of_other_operand():
    e = rhs("meta.x = meta.x + 300;")
    assert isinstance(e, ir.Binary) and e.type == ir.BitT(8)
    assert e.right.type == ir.BitT(8) and e.right.value == 300 % 256


def test_constant_folding_of_arithmetic_and_consts():
    top = "const bit<8> K = 250; const int N = 3;"
    e = rhs("meta.x = K + 10 + N * 2;", top)
    assert isinstance(e, ir.Const) and e.type == ir.BitT(8) and e.value == (250 + 10 + 6) % 256
    assert rhs("meta.z = (bit<32>)(1 << 20) | 32w1;").value == (1 << 20) | 1
    assert rhs("meta.y = 8w0xAB ++ 8w0xCD;").value == 0xABCD
    assert rhs("meta.x = 8w200 |+| 8w100;").value == 255
    assert rhs("meta.x = 8w10 |-| 8w20;").value == 0
    assert rhs("meta.s = 8s100 |+| 8s100;").value == 127
    assert rhs("meta.s = -8s128 |-| 8s1;").value == -128
    assert rhs("meta.x = 16w0xABCD[11:4];").value == 0xBC
    assert rhs("meta.x = (bit<8>)16w0x1234;").value == 0x34
    assert rhs("meta.s = (int<8>)8w0xFF;").value == -1
    assert rhs("meta.x = ~8w0x0F;").value == 0xF0
    assert rhs("meta.x = -8w1;").value == 255
    assert rhs("meta.f = 8w3 > 8w2 && !(1 == 2);").value is True
    assert rhs("meta.x = true ? 8w1 : 8w2;").value == 1


def test_bit_width_mismatch_is_an_error():
    with pytest.raises(P4Error, match=r"operands have different types bit<8> and bit<16> \(width mismatch\)"):
        apply_stmts("meta.x = meta.x + meta.y;")


def test_concat_and_shift_types():
    e = rhs("meta.y = meta.x ++ hdr.h.a;")
    assert e.type == ir.BitT(16) and e.op == "++"
    e = rhs("meta.x = meta.x << hdr.h.a;")
    assert e.type == ir.BitT(8) and e.right.type == ir.BitT(8)
    e = rhs("meta.s = meta.s >> 2;")
    assert e.type == ir.BitT(8, True)


def test_serializable_enum_converts_to_underlying():
    top = "enum bit<8> Sel { A = 1, B = 7 }"
    e = rhs("meta.f = meta.x == Sel.B;", top)
    assert isinstance(e, ir.Binary) and e.op == "=="
    assert e.right.value == 7 and e.right.type == ir.BitT(8)
    e = rhs("meta.x = (bit<8>)Sel.B;", top)
    assert e.value == 7 and e.type == ir.BitT(8)


def test_plain_enum_members_are_indices():
    top = "enum Colour { RED, GREEN, BLUE } struct s_t { Colour c; }"
    stmts = apply_stmts("s_t v; v.c = Colour.BLUE;", top)
    c = stmts[-1].rhs
    assert isinstance(c, ir.Const) and c.value == 2 and c.type.name == "Colour"


def test_error_and_match_kind_members():
    e = rhs("meta.f = sm.parser_error == error.StackOutOfBounds;")
    assert e.right.value == 3 and isinstance(e.right.type, ir.ErrorT)


def test_min_size_in_bits_and_bytes_fold():
    assert rhs("meta.z = (bit<32>)hdr.h.minSizeInBits();").value == 64
    assert rhs("meta.z = (bit<32>)h_t.minSizeInBytes();").value == 8


def test_stack_size_folds_and_last_index_stays():
    assert rhs("meta.z = hdr.stack.size;").value == 2
    e = program_with_ingress("apply { }")
    parser = e.block("parser").type.decl
    assert parser.states[0].name == "start"


def test_typedef_resolved_and_newtype_kept():
    top = "typedef bit<8> byte_t; type bit<9> port_t; struct s_t { byte_t b; port_t p; }"
    stmts = apply_stmts("s_t v; v.b = 1; v.p = (port_t)sm.ingress_port;", top)
    assert stmts[1].lhs.type == ir.BitT(8)
    assert isinstance(stmts[2].lhs.type, ir.NewT) and stmts[2].lhs.type.base == ir.BitT(9)
    assert isinstance(stmts[2].rhs, ir.Cast)


def test_list_assigned_to_struct_becomes_struct_expression():
    top = "struct pair_t { bit<8> a; bit<16> b; }"
    stmts = apply_stmts("pair_t p = { 1, 2 }; pair_t q = { b = 5, a = 6 }; q = pair_t { a = 1, b = 2 };", top)
    init = stmts[0].init
    assert isinstance(init, ir.StructExpr) and init.fields["b"].type == ir.BitT(16)
    assert stmts[1].init.fields["a"].value == 6
    assert isinstance(stmts[2].rhs, ir.StructExpr)


def test_header_assignment_from_list_and_validity_calls():
    stmts = apply_stmts("hdr.h = { 1, 2, 3, 4 }; hdr.h.setInvalid(); meta.f = hdr.h.isValid();")
    assert isinstance(stmts[0].rhs, ir.StructExpr)
    assert stmts[1].call.name == "setInvalid"
    assert stmts[2].rhs.name == "isValid" and stmts[2].rhs.type == ir.BoolT()


def test_mux_with_unsized_branch():
    e = rhs("meta.x = meta.f ? 8w1 : 2;")
    assert isinstance(e, ir.Mux) and e.if_false.type == ir.BitT(8)


def test_implicit_cast_of_argument_to_parameter_type():
    stmts = apply_stmts("mark_to_drop(sm); truncate(100);")
    assert stmts[1].call.args[0].type == ir.BitT(32)


def test_size_methods_fold_with_varbit():
    top = "header v_t { bit<8> len; varbit<64> opts; } struct vs { v_t v; }"
    s = apply_stmts("vs x; meta.z = (bit<32>)x.v.minSizeInBits(); meta.z = (bit<32>)x.v.maxSizeInBytes();", top)
    assert s[1].rhs.value == 8 and s[2].rhs.value == 9
