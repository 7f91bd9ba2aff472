"""Control-plane names as p4c computes them for P4Info."""

from pathlib import Path

import pytest

from fe_util import BLOCKS, PRELUDE
from testbed.p4model.frontend import ir, load_program, load_source

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


def load(text):
    return load_source(PRELUDE + BLOCKS + text, "names.p4")


@pytest.fixture(scope="module")
def nested():
    return load("""
@name(".top_action") action top_a() { }
action plain_top() { }
control Sub(inout headers hdr, inout metadata meta) {
    counter(8, CounterType.packets) c;
    action s() { c.count(0); }
    @name("renamed") table t { key = { meta.x: exact; } actions = { s; plain_top; } }
    @name(".global_t") table g { actions = { s; } }
    apply { t.apply(); g.apply(); }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Sub() first;
    @name("second_sub") Sub() second;
    register<bit<8>>(4) r;
    @name("ctr") counter(4, CounterType.bytes) c2;
    action a() { top_a(); }
    @name("act_b") action b() { }
    table t { key = { meta.x: exact @name("mx"); hdr.h.d[7:0] : ternary; hdr.stack[1].isValid() : exact; }
              actions = { a; b; top_a; } }
    apply { t.apply(); first.apply(hdr, meta); second.apply(hdr, meta); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")


def by_name(decl, kind):
    return {d.name: d for d in decl.locals if isinstance(d, kind)}


def test_objects_in_a_top_level_block_use_the_control_type_name(nested):
    ing = nested.block("ingress").type.decl
    assert by_name(ing, ir.TableDecl)["t"].cp_name == "I.t"
    assert by_name(ing, ir.Instance)["r"].cp_name == "I.r"
    assert by_name(ing, ir.Instance)["c2"].cp_name == "I.ctr"
    actions = by_name(ing, ir.ActionDecl)
    assert actions["a"].cp_name == "I.a" and actions["b"].cp_name == "I.act_b"


def test_top_level_actions_keep_their_own_name(nested):
    t = by_name(nested.block("ingress").type.decl, ir.TableDecl)["t"]
    assert [r.action.cp_name for r in t.actions] == ["I.a", "I.act_b", "top_action"]
    assert nested.find(ir.ActionDecl, "plain_top").cp_name == "plain_top"
    assert nested.find(ir.ActionDecl, "NoAction").cp_name == "NoAction"


def test_sub_control_instances_are_prefixed_by_instance_name(nested):
    ing = nested.block("ingress").type.decl
    insts = by_name(ing, ir.Instance)
    first, second = insts["first"].type.decl, insts["second"].type.decl
    assert first is not second            # specialised per instance
    assert by_name(first, ir.TableDecl)["t"].cp_name == "I.first.renamed"
    assert by_name(second, ir.TableDecl)["t"].cp_name == "I.second_sub.renamed"
    assert by_name(first, ir.TableDecl)["g"].cp_name == "global_t"
    assert by_name(first, ir.Instance)["c"].cp_name == "I.first.c"
    assert by_name(first, ir.ActionDecl)["s"].cp_name == "I.first.s"
    assert by_name(second, ir.ActionDecl)["s"].cp_name == "I.second_sub.s"


def test_key_names_are_source_text_or_name_annotation(nested):
    t = by_name(nested.block("ingress").type.decl, ir.TableDecl)["t"]
    assert [k.name for k in t.keys] == ["mx", "hdr.h.d[7:0]", "hdr.stack[1].isValid()"]
    assert t.keys[1].expr.type == ir.BitT(8)


def test_value_set_and_parser_instances():
    p = load_program(PROGRAMS / "fe_kitchen_sink.p4")
    parser = p.block("parser").type.decl
    vs = [d for d in parser.locals if isinstance(d, ir.ValueSetDecl)][0]
    assert vs.cp_name == "MyParser.custom_types" and vs.size == 4 and vs.element_type == ir.BitT(16)


def test_inline_table_property_instances():
    p = load_program(PROGRAMS / "fe_kitchen_sink.p4")
    tables = {t.name: t for t in p.block("ingress").type.decl.tables()}
    assert tables["profiled"].implementation.cp_name == "implementation"
    assert tables["ecmp"].implementation.cp_name == "MyIngress.ecmp_selector"
    assert tables["colours"].meters.cp_name == "MyIngress.flow_meter"
    acl = [i for i in p.block("ingress").type.decl.instances() if i.name == "acl_inst"][0]
    assert acl.type.decl.tables()[0].counters.cp_name == "MyIngress.acl_inst.acl_hits"


def test_named_inline_implementation_is_global():
    p = load("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action a() { }
    table t { key = { meta.x: selector; } actions = { a; }
              @name("ap_ws") implementation = action_selector(HashAlgorithm.identity, 32w1024, 32w10); }
    apply { t.apply(); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")
    impl = p.block("ingress").type.decl.tables()[0].implementation
    assert impl.cp_name == "ap_ws" and impl.type.decl.name == "action_selector"
    assert [a.value for a in impl.args] == [5, 1024, 10]


def test_key_names_follow_p4c_key_name_generator():
    """p4c's KeyNameGenerator: `e & mask` with spaces, constants in their
    written base without width or leading zeros, slices and indexes
    compact, isValid() kept (P4Info maps it to $valid$)."""
    from fe_util import program_with_ingress
    p = program_with_ingress("""
        table t {
            key = { hdr.h.d & 32w0x00FF_FF00 : ternary; hdr.h.d[ 7 : 0 ] : exact;
                    hdr.stack[1].a : exact; hdr.h.isValid() : exact;
                    hdr.h.a & 0b0011 : ternary; meta.y & 16 : ternary;
                    hdr.h.a + 1 : exact @name("plus"); }
            actions = { NoAction; }
        }
        apply { t.apply(); }
    """)
    t = by_name(p.block("ingress").type.decl, ir.TableDecl)["t"]
    assert [k.name for k in t.keys] == ["hdr.h.d & 0xffff00", "hdr.h.d[7:0]", "hdr.stack[1].a",
                                        "hdr.h.isValid()", "hdr.h.a & 0b11", "meta.y & 16", "plus"]


# ---- instances passed as constructor arguments (p4c's issue1566-bmv2 shape)

def p4info_names(program):
    from testbed.p4model.p4info import generate
    info = generate(program)
    return {kind: sorted(e.preamble.name for e in getattr(info, kind))
            for kind in ("tables", "actions", "counters", "registers")}


def test_shared_control_argument_keeps_its_declaration_name():
    """p4c names an object inside a control passed as a constructor
    argument after the place the control was declared, once, however many
    controls apply it (issue1566-bmv2.p4info.txtpb: cIngress.E.c1.stats,
    E applied directly, c1 passed to two controls)."""
    program = load("""
control step_t(inout bit<8> v);
control Inner(inout bit<8> v) {
    counter(16, CounterType.packets) stats;
    apply { v = v + 1; stats.count((bit<32>)v); }
}
control Outer1(inout bit<8> v)(step_t c) { apply { c.apply(v); } }
control Outer2(inout bit<8> v)(step_t c) { apply { v = v << 1; c.apply(v); } }
control Both(inout bit<8> v) {
    Inner() c1;
    Outer1(c1) o1;
    Outer2(c1) o2;
    apply { o1.apply(v); o2.apply(v); }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { Both.apply(meta.x); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")
    assert p4info_names(program)["counters"] == ["I.Both.c1.stats"]
    both = next(i for i in program.block("ingress").type.decl.apply.stmts[0].call.instance.type.decl.locals
                if isinstance(i, ir.Instance) and i.name == "o2")
    (apply_c,) = [s for s in both.type.decl.apply.stmts if isinstance(s, ir.CallStmt)]
    assert apply_c.call.instance.cp_name == "I.Both.c1"     # the very instance c1, not a copy


def test_table_in_control_argument_is_named_where_declared():
    names = p4info_names(load_program(PROGRAMS / "fe_ctor_instances.p4"))
    assert names["tables"] == ["I.lk.t"]
    assert names["actions"] == ["I.lk.set", "NoAction"]
    assert names["registers"] == ["I.hits"]
