"""The vertical slice: tests/p4programs/basic_ipv4.p4 loads into the IR the
compiler, P4Info and the STF runner rely on."""

from pathlib import Path

import pytest

from testbed.p4model.frontend import ir, load_program

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


@pytest.fixture(scope="module")
def program():
    return load_program(PROGRAMS / "basic_ipv4.p4")


def test_blocks_in_v1switch_order(program):
    roles = [(role, inst.type.decl.name) for role, inst in program.blocks]
    assert roles == [("parser", "MyParser"), ("verify_checksum", "MyVerifyChecksum"),
                     ("ingress", "MyIngress"), ("egress", "MyEgress"),
                     ("compute_checksum", "MyComputeChecksum"), ("deparser", "MyDeparser")]
    assert program.main.name == "main"
    assert isinstance(program.block("parser").type, ir.ParserT)


def test_parser_states_and_select(program):
    parser = program.block("parser").type.decl
    assert [s.name for s in parser.states] == ["start", "parse_ethernet", "parse_ipv4"]
    assert parser.state("start").transition == "parse_ethernet"
    sel = parser.state("parse_ethernet").transition
    assert isinstance(sel, ir.Select)
    (case_value, target), (default, target2) = sel.cases
    assert isinstance(case_value, ir.Const) and case_value.value == 0x800
    assert case_value.type == ir.BitT(16)
    assert target == "parse_ipv4"
    assert isinstance(default, ir.KeysetDefault) and target2 == "accept"
    extract = parser.state("parse_ethernet").stmts[0].call
    assert isinstance(extract, ir.ExternMethodCall)
    assert extract.method.name == "extract" and len(extract.method.params) == 1
    assert extract.type_args[0].name == "ethernet_t"


def test_table_and_actions(program):
    ingress = program.block("ingress").type.decl
    table = ingress.tables()[0]
    assert table.cp_name == "MyIngress.ipv4_lpm"
    assert [(k.name, k.match_kind, k.expr.type) for k in table.keys] == [("hdr.ipv4.dstAddr", "lpm", ir.BitT(32))]
    assert [a.action.cp_name for a in table.actions] == ["MyIngress.set_nhop", "MyIngress.drop", "NoAction"]
    assert table.default_action.action.name == "drop" and not table.default_is_const
    assert table.size == 1024
    set_nhop = ingress.actions()[1]
    assert [(p.name, p.type, p.direction) for p in set_nhop.params] == [
        ("dstAddr", ir.BitT(48), ""), ("port", ir.BitT(9), "")]


def test_ttl_decrement_is_typed(program):
    set_nhop = program.block("ingress").type.decl.actions()[1]
    ttl = set_nhop.body.stmts[3]
    assert isinstance(ttl, ir.Assign)
    assert isinstance(ttl.rhs, ir.Binary) and ttl.rhs.op == "-"
    assert ttl.rhs.right.type == ir.BitT(8) and ttl.rhs.right.value == 1


def test_mark_to_drop_overload_with_argument(program):
    drop = program.block("ingress").type.decl.actions()[0]
    call = drop.body.stmts[0].call
    assert isinstance(call, ir.ExternFunctionCall)
    assert call.decl.name == "mark_to_drop" and len(call.args) == 1


def test_update_checksum(program):
    ck = program.block("compute_checksum").type.decl
    call = ck.apply.stmts[0].call
    assert call.decl.name == "update_checksum"
    cond, data, checksum, algo = call.args
    assert isinstance(cond, ir.BuiltinCall) and cond.name == "isValid"
    assert isinstance(data, ir.ListExpr) and len(data.items) == 11
    assert isinstance(checksum, ir.Member) and checksum.name == "hdrChecksum"
    assert isinstance(algo, ir.Const) and algo.type.name == "HashAlgorithm"
    assert algo.type.members[algo.value] == "csum16"
    assert call.type_args[1] == ir.BitT(16)


def test_deparser_emits(program):
    dep = program.block("deparser").type.decl
    assert [s.call.method.name for s in dep.apply.stmts] == ["emit", "emit"]


def test_error_and_match_kinds(program):
    assert program.error_type.members[:3] == ["NoError", "PacketTooShort", "NoMatch"]
    assert program.match_kind_type.members == ["exact", "ternary", "lpm", "range", "optional", "selector"]
