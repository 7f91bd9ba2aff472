"""Parsing and lowering of each construct, checked on the IR the compiler
executes (tests/p4programs/fe_kitchen_sink.p4 plus small snippets)."""

from pathlib import Path

import pytest

from fe_util import apply_stmts, ingress, program_with_ingress
from testbed.p4model.errors import P4Error, P4Unsupported
from testbed.p4model.frontend import ir, load_program

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


@pytest.fixture(scope="module")
def sink():
    return load_program(PROGRAMS / "fe_kitchen_sink.p4")


def test_types_declared(sink):
    decls = {d.name: d.type for d in sink.declarations if isinstance(d, ir.TypeDeclRef)}
    assert isinstance(decls["mac_t"], ir.BitT) and decls["mac_t"].width == 48
    assert isinstance(decls["ipv4_addr_t"], ir.NewT)
    assert decls["EtherType"].values == {"IPV4": 0x800, "VLAN": 0x8100, "MPLS": 0x8847}
    assert decls["Colour"].members == ["RED", "GREEN", "BLUE"] and decls["Colour"].underlying is None
    assert isinstance(decls["l4_t"], ir.UnionT)
    assert decls["ipv4_options_t"].has_varbit()
    hdrs = decls["headers"]
    assert hdrs.field("mpls").type == ir.StackT(decls["mpls_t"], 4)
    assert decls["metadata"].field("pair").type == ir.TupleT((ir.BitT(8), ir.BoolT()))
    assert sink.error_type.members[-2:] == ["BadVersion", "TooManyLabels"]
    pkt_in = decls["packet_in_t"]
    assert ir.find_annotation(pkt_in.annotations, "controller_header").args == ["packet_in"]
    field_list = ir.find_annotation(decls["metadata"].field("preserved").annotations, "field_list")
    assert field_list.args == [1, 2]


def test_consts_fold(sink):
    consts = {d.name: d.value for d in sink.declarations if isinstance(d, ir.ConstDecl)}
    assert consts["PROTO_UDP"].value == 17 and consts["PROTO_UDP"].type == ir.BitT(8)
    assert consts["BIG"].value == 1 << 40 and consts["BIG"].type == ir.IntLitT()


def test_parser_constructs(sink):
    p = sink.block("parser").type.decl
    start = p.state("start").transition
    kinds = [type(k).__name__ for k, _ in start.cases]
    assert kinds == ["Const", "KeysetMask", "KeysetRange", "KeysetValueSet", "KeysetDefault"]
    assert start.cases[2][0].lo.value == 0x9000 and start.cases[2][0].hi.type == ir.BitT(16)
    mpls = p.state("parse_mpls")
    assert isinstance(mpls.stmts[0].call.args[0], ir.Member) and mpls.stmts[0].call.args[0].name == "next"
    verify = mpls.stmts[2].call
    assert verify.decl.name == "verify" and verify.args[1].value == sink.error_type.members.index("TooManyLabels")
    assert mpls.transition.keys[0].base.name == "last"
    ipv4 = p.state("parse_ipv4")
    look = ipv4.stmts[0].init
    assert look.method.name == "lookahead" and look.type == ir.BitT(4)
    ext2 = ipv4.stmts[3].call
    assert ext2.method.name == "extract" and len(ext2.args) == 2 and ext2.args[1].type == ir.BitT(32)
    tup = ipv4.transition.cases
    assert isinstance(tup[0][0], ir.KeysetTuple) and tup[0][0].items[1].type == ir.BitT(13)
    assert isinstance(tup[1][0].items[1], ir.KeysetDefault)
    sub = p.state("parse_udp").stmts[0].call
    assert isinstance(sub, ir.SubApply) and sub.instance.name == "sub"
    assert p.state("parse_tcp").transition == "reject"
    assert [type(l).__name__ for l in p.locals] == ["ValueSetDecl", "Instance", "Var"]
    assert p.local_inits[0].init.value == 0


def test_table_properties(sink):
    ing = sink.block("ingress").type.decl
    tables = {t.name: t for t in ing.tables()}
    l2 = tables["l2"]
    assert l2.default_is_const and l2.default_action.action.name == "NoAction"
    assert l2.size == 512 and l2.idle_timeout
    assert ir.find_annotation(l2.actions[2].annotations, "defaultonly") is not None
    ecmp = tables["ecmp"]
    assert [k.match_kind for k in ecmp.keys] == ["lpm", "selector", "selector"]
    assert ecmp.default_is_implicit and ecmp.default_action.action.name == "NoAction"
    colours = tables["colours"]
    assert colours.actions[0].args[0].name == "colour"          # directional arg bound
    assert not colours.entries_are_const
    entry = colours.entries[0]
    assert entry.keys[0].value == 1 and entry.action.args[0].value == 5 and not entry.is_const
    assert entry.priority == 1
    acl = [i for i in ing.instances() if i.name == "acl_inst"][0]
    acl_t = acl.type.decl.tables()[0]
    assert [e.priority for e in acl_t.entries] == [10, 9]     # p4c: previous - priority_delta
    assert [e.is_const for e in acl_t.entries] == [False, True] and not acl_t.entries_are_const
    assert [type(k).__name__ for k in acl_t.entries[0].keys] == ["KeysetMask", "KeysetDefault", "KeysetRange", "Const"]
    assert acl.args[0].value == 511      # constructor argument
    deny = acl.type.decl.actions()[0]
    assert deny.body.stmts[0].rhs.value == 511    # ctor param folded


def test_control_statements(sink):
    ing = sink.block("ingress").type.decl
    stmts = ing.apply.stmts
    call_names = [s.call.decl.name if isinstance(s, ir.CallStmt) and isinstance(s.call, ir.ExternFunctionCall)
                  else None for s in stmts]
    for name in ("hash", "random", "digest", "clone_preserving_field_list", "resubmit_preserving_field_list",
                 "log_msg", "assert", "truncate"):
        assert name in call_names
    log_calls = [s.call for s in stmts if isinstance(s, ir.CallStmt) and getattr(s.call, "decl", None)
                 and s.call.decl.name == "log_msg"]
    assert [len(c.args) for c in log_calls] == [2, 1]
    digest = stmts[call_names.index("digest")].call
    assert digest.type_args[0].name == "digest_t" and isinstance(digest.args[1], ir.StructExpr)
    hash_call = stmts[call_names.index("hash")].call
    o, t, d, m = hash_call.type_args
    assert (o, t, m) == (ir.BitT(16), ir.BitT(16), ir.BitT(16))
    assert d == ir.TupleT((ir.BitT(32), ir.BitT(32)))
    if_stmt = [s for s in stmts if isinstance(s, ir.If)][0]
    sw = if_stmt.then.stmts[0]
    assert isinstance(sw, ir.Switch) and isinstance(sw.expr.base, ir.TableApply)
    assert [[getattr(l, "name", l) for l in c.labels] for c in sw.cases] == [["forward"], ["drop", "default"]]
    assert isinstance(sw.cases[1].body.stmts[0], ir.Exit)
    assert isinstance(if_stmt.otherwise, ir.If) and isinstance(if_stmt.otherwise.then.stmts[1], ir.Return)
    methods = [s.call.method.name for s in stmts if isinstance(s, ir.CallStmt) and isinstance(s.call, ir.ExternMethodCall)]
    assert methods[:4] == ["count", "execute_meter", "read", "write"]
    builtins = [s.call.name for s in stmts if isinstance(s, ir.CallStmt) and isinstance(s.call, ir.BuiltinCall)]
    assert builtins == ["push_front", "setValid", "pop_front"]


def test_register_generic_binding(sink):
    ing = sink.block("ingress").type.decl
    reg = [i for i in ing.instances() if i.name == "last_seen"][0]
    assert reg.type.type_args == [ir.BitT(32), ir.BitT(10)] and reg.args[0].value == 1024
    read = [s.call for s in ing.apply.stmts if isinstance(s, ir.CallStmt)
            and isinstance(s.call, ir.ExternMethodCall) and s.call.method.name == "read"][0]
    assert read.args[1].type == ir.BitT(10)


def test_deparser_and_egress(sink):
    dep = sink.block("deparser").type.decl
    assert [s.call.args[0].type.__class__.__name__ for s in dep.apply.stmts] == ["HeaderT", "HeaderT", "StackT", "StructT"]
    eg = sink.block("egress").type.decl
    assert eg.apply.stmts[1].call.decl.name == "mark_to_drop" and eg.apply.stmts[1].call.args == []


def test_functions_and_local_declarations():
    p = program_with_ingress("""
        bit<8> local_var = 3;
        const bit<8> LC = 4;
        action a() { meta.x = twice(local_var) + LC; }
        apply { a(); { bit<8> inner = 1; meta.x = inner; } }
    """, top="bit<8> twice(in bit<8> v) { return v + v; }")
    ing = ingress(p)
    assert [type(l).__name__ for l in ing.locals] == ["Var", "ActionDecl"]
    assert ing.local_inits[0].init.value == 3
    a = ing.actions()[0]
    rhs = a.body.stmts[0].rhs
    assert isinstance(rhs.left, ir.FunctionCall) and rhs.right.value == 4
    assert isinstance(ing.apply.stmts[0].call, ir.ActionCall)
    assert isinstance(ing.apply.stmts[1], ir.Block)


def test_named_and_default_arguments():
    p = program_with_ingress("""
        action a(bit<8> x, bit<8> y) { meta.x = x - y; }
        apply { a(y = 1, x = 2); }
    """, top="")
    call = ingress(p).apply.stmts[0].call
    assert [c.value for c in call.args] == [2, 1]


def test_extern_with_default_and_optional_params():
    top = """extern Thing { Thing(); void go(in bit<8> a, in bit<8> b = 7, @optional in bit<8> c); }"""
    p = program_with_ingress("Thing() t; apply { t.go(1); t.go(1, c = 3); }", top=top)
    s = ingress(p).apply.stmts
    assert [getattr(a, "value", None) for a in s[0].call.args] == [1, 7, None]
    assert isinstance(s[0].call.args[2], ir.DontCare)
    assert [a.value for a in s[1].call.args] == [1, 7, 3]


def test_compound_assignment_and_dontcare_argument():
    s = apply_stmts("meta.x += 2; meta.x |+|= 1; hash(meta.y, HashAlgorithm.crc16, 16w0, { meta.x }, 16w8);")
    assert isinstance(s[0].rhs, ir.Binary) and s[0].rhs.op == "+"
    assert s[1].rhs.op == "|+|"


def test_direct_application_of_a_control_type():
    p = program_with_ingress("apply { Sub.apply(meta); }",
                             top="control Sub(inout metadata m) { apply { m.x = 1; } }")
    call = ingress(p).apply.stmts[0].call
    assert isinstance(call, ir.SubApply) and call.instance.type.decl.name == "Sub"


@pytest.mark.parametrize("body,top,construct", [
    ("apply { }", "extern E2 { E2(); abstract void f(); }\n", None),
    ("apply { meta.x = meta.z[meta.x +: 8]; }", "", r"an indexed part-select \[lo \+: w\]"),
])
def test_unsupported_constructs(body, top, construct):
    if construct is None:
        program_with_ingress(body, top)     # declaring an abstract method alone is fine
        return
    with pytest.raises(P4Unsupported, match=f"unsupported: {construct}"):
        program_with_ingress(body, top)


def test_arrays_of_values_in_both_spellings():
    top = "header a_h { bit<8>[4] a; bit<4> c[2]; } struct ms { bit<16>[3] m; a_h h; }"
    s = apply_stmts("ms x; x.m[1] = (bit<16>) x.h.a[2]; x.h.c[x.h.a[0]] = 1; meta.x = (bit<8>) x.h.a.size;", top)
    assert s[1].lhs.base.type == ir.ArrayT(ir.BitT(16), 3) and s[1].lhs.type == ir.BitT(16)
    assert s[2].lhs.base.type == ir.ArrayT(ir.BitT(4), 2)   # `bit<4> c[2]`, a run-time index
    assert isinstance(s[3].rhs, ir.Const) and s[3].rhs.value == 4   # folded


@pytest.mark.parametrize("body,top,message", [
    ("meta.x = x.a[4];", "struct A { bit<8>[4] a; }\n", r"index 4 out of bounds for bit<8>\[4\]"),
    ("", "struct A { bit<8>[meta] a; }\n", r"array size must be a positive constant|meta"),
    ("", "struct A { bit<8> a[0]; }\n", r"array size must be a positive constant"),
    ("", "header A { varbit<8>[2] a; }\n", r"header field 'a' cannot have type varbit<8>\[2\]"),
    ("meta.x = x.a.next;", "struct A { bit<8>[4] a; }\n", r"array bit<8>\[4\] has no member 'next'"),
])
def test_array_errors_are_one_line(body, top, message):
    with pytest.raises(P4Error, match=message):
        apply_stmts(("A x; " + body) if body else "", top)


def test_header_union_members_and_validity():
    top = "header h2_t { bit<16> v; } header_union u_t { h_t a; h2_t b; } struct us { u_t u; }"
    s = apply_stmts("us x; x.u.a.setValid(); meta.f = x.u.isValid(); meta.f = x.u.b.isValid();", top)
    assert s[1].call.target.type.name == "h_t"
    assert s[2].rhs.target.type.__class__ is ir.UnionT


ENTRY_TABLE = """
    action a(bit<8> v) {{ meta.x = v; }}
    table t {{
        key = {{ hdr.h.a : exact; hdr.h.b : ternary; }}
        actions = {{ a; }}
        {props}
        entries = {{
            {entries}
        }}
    }}
    apply {{ t.apply(); }}
"""


@pytest.mark.parametrize("props,entries,expected", [
    ("", "(1, 2) : a(1); (2, 3) : a(2); (3, _) : a(3);", [3, 2, 1]),
    ("largest_priority_wins = false;", "(1, 2) : a(1); (2, 3) : a(2); (3, _) : a(3);", [1, 2, 3]),
    ("largest_priority_wins = false; priority_delta = 10;",
     "const priority=10: (1, 2 &&& 3) : a(1); (2, 3) : a(2); const (4, _) : a(4); priority=40: (5, 5) : a(5); (6, _) : a(6);",
     [10, 20, 30, 40, 50]),
    ("priority_delta = 100;", "priority=1000: (1, 2) : a(1); (2, 3) : a(2); priority=901: (3, 3) : a(3); (4, _) : a(4);",
     [1000, 900, 901, 801]),
])
def test_entry_priorities_as_p4c(props, entries, expected):
    p = program_with_ingress(ENTRY_TABLE.format(props=props, entries=entries))
    assert [e.priority for e in ingress(p).tables()[0].entries] == expected


def test_const_entries_cannot_have_priorities():
    body = ENTRY_TABLE.format(props="", entries="priority=3: (1, 2) : a(1);").replace("entries =", "const entries =")
    with pytest.raises(P4Error, match="const entries cannot have priorities"):
        program_with_ingress(body)


def test_const_entries_keep_listed_order():
    body = ENTRY_TABLE.format(props="", entries="(1, 2) : a(1); (2, _) : a(2);").replace("entries =", "const entries =")
    t = ingress(program_with_ingress(body)).tables()[0]
    assert t.entries_are_const and [e.priority for e in t.entries] == [None, None]


def test_annotations_kinds():
    p = program_with_ingress("""
        @pragma stage 1
        @brief("A table") @id(7) @a[k = 1, s = "x"] @empty
        table t { key = { meta.x: exact; } actions = { NoAction; } }
        apply { t.apply(); }
    """)
    anns = {a.name: a for a in ingress(p).tables()[0].annotations}
    assert anns["stage"].body == "1" and anns["stage"].args == [1]
    assert anns["brief"].args == ["A table"] and anns["id"].args == [7]
    assert anns["a"].kv == {"k": 1, "s": "x"}
    assert anns["empty"].body == "" and anns["empty"].args == []
