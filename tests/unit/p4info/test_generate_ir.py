"""P4Info generation from hand-built IR: the structure p4c gives each
construct (ids from the naming rules, order, scopes, defaults, externs)."""

import pytest
from p4.config.v1 import p4info_pb2

from irbuild import (COUNTER_TYPE, HASH_ALGORITHM, METER_TYPE, NO_ACTION, action, ann, apply_all,
                     const, control, enum_const, instance, key, parser, program, table)
from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir
from testbed.p4model.p4info import generate, naming as nm, parse, render


def ids(prefix, name):
    return nm.hashed_id(prefix, name)


def test_all_match_kinds_and_selector_key_position():
    fwd = action("Ing.fwd", [("port", ir.BitT(9))])
    t = table("Ing.t", [key("h.a", 8, "exact"), key("h.b", 32, "lpm"), key("h.c", 16, "ternary"),
                        key("h.d", 16, "range"), key("h.e", 8, "optional"), key("m.s", 32, "selector"),
                        key("h.f", 4, "fancy")],
              [fwd], None)
    info = generate(program(control("Ing", [fwd, t], apply_all(t))))
    fields = info.tables[0].match_fields
    assert [(f.id, f.name, f.bitwidth) for f in fields] == [
        (1, "h.a", 8), (2, "h.b", 32), (3, "h.c", 16), (4, "h.d", 16), (5, "h.e", 8), (7, "h.f", 4)]
    kinds = p4info_pb2.MatchField
    assert [f.match_type for f in fields[:5]] == [kinds.EXACT, kinds.LPM, kinds.TERNARY, kinds.RANGE,
                                                  kinds.OPTIONAL]
    assert fields[5].other_match_type == "fancy"


def test_table_defaults_and_scopes():
    a1 = action("Ing.a1", [("x", ir.BitT(16)), ("y", ir.BitT(8))])
    a2 = action("Ing.a2")
    t = table("Ing.t", [key("h.a", 8, "exact")],
              [ir.ActionRef(a1, annotations=[ann("tableonly")]),
               ir.ActionRef(a2, annotations=[ann("defaultonly")])],
              ir.ActionRef(a2), const_default=True, size=64)
    u = table("Ing.u", [], [a1], ir.ActionRef(a1, [const(0x1234, 16), const(7, 8)]))
    info = generate(program(control("Ing", [a1, a2, t, u], apply_all(t, u))))
    tt, tu = info.tables
    assert tt.size == 64 and tu.size == 1024
    assert [r.scope for r in tt.action_refs] == [p4info_pb2.ActionRef.TABLE_ONLY,
                                                 p4info_pb2.ActionRef.DEFAULT_ONLY]
    assert list(tt.action_refs[0].annotations) == ["@tableonly"]
    assert tt.const_default_action_id == ids(nm.ACTION, "Ing.a2")
    assert tt.initial_default_action.action_id == ids(nm.ACTION, "Ing.a2")
    assert tu.const_default_action_id == 0
    assert [(a.param_id, a.value) for a in tu.initial_default_action.arguments] == [
        (1, b"\x12\x34"), (2, b"\x07")]


def test_implicit_default_is_noaction_listed_default_only():
    # p4c's front end writes `default_action = NoAction()` into a table that
    # has none, and lists NoAction @defaultonly when the program did not
    set_ = action("Ing.set", [("v", ir.BitT(8))])
    t = table("Ing.t", [key("h.k", 8, "exact")], [set_], None)
    info = generate(program(control("Ing", [set_, t], apply_all(t))))
    (tt,) = info.tables
    noaction = ids(nm.ACTION, "NoAction")
    assert [(r.id, list(r.annotations), r.scope) for r in tt.action_refs] == [
        (ids(nm.ACTION, "Ing.set"), [], p4info_pb2.ActionRef.TABLE_AND_DEFAULT),
        (noaction, ["@defaultonly"], p4info_pb2.ActionRef.DEFAULT_ONLY)]
    assert tt.initial_default_action.action_id == noaction
    assert not tt.initial_default_action.arguments
    assert tt.const_default_action_id == 0
    assert [a.preamble.name for a in info.actions] == ["NoAction", "Ing.set"]


def test_implicit_default_with_noaction_listed_adds_no_ref():
    t = table("Ing.t", [], [NO_ACTION], None)
    info = generate(program(control("Ing", [t], apply_all(t))))
    (tt,) = info.tables
    assert [(r.id, r.scope) for r in tt.action_refs] == [
        (ids(nm.ACTION, "NoAction"), p4info_pb2.ActionRef.TABLE_AND_DEFAULT)]
    assert tt.initial_default_action.action_id == ids(nm.ACTION, "NoAction")
    assert tt.const_default_action_id == 0


def test_isvalid_key_is_named_valid_unless_named():
    hdr = ir.HeaderT("h_t", [])
    hv = ir.VarRef(ir.Var("hdr.h", hdr), type=hdr)
    valid = ir.BuiltinCall("isValid", hv, type=ir.BoolT())
    plain = ir.KeyElement(valid, "exact", "hdr.h.isValid()")
    named = ir.KeyElement(valid, "ternary", "mine", [ann("name", '"mine"', ["mine"])])
    t = table("Ing.t", [plain, named], [NO_ACTION], NO_ACTION)
    info = generate(program(control("Ing", [t], apply_all(t))))
    assert [(f.name, f.bitwidth) for f in info.tables[0].match_fields] == [
        ("hdr.h.$valid$", 1), ("mine", 1)]


def test_directional_params_are_not_action_data():
    # `actions = { setbyte(hdr.h.x); }`: p4c's front end makes `reg` a local
    # bound at the call, so only `val` is control-plane data (id 1)
    setbyte = ir.ActionDecl("setbyte", [ir.Param("reg", ir.BitT(8), "out"),
                                        ir.Param("val", ir.BitT(8))],
                            ir.Block(), [], "Ing.setbyte")
    x = ir.VarRef(ir.Var("x", ir.BitT(8)), type=ir.BitT(8))
    t = table("Ing.t", [key("h.k", 8, "exact")], [ir.ActionRef(setbyte, [x])],
              ir.ActionRef(setbyte, [const(7, 8)]))
    info = generate(program(control("Ing", [setbyte, t], apply_all(t))))
    (act,) = [a for a in info.actions if a.preamble.name == "Ing.setbyte"]
    assert [(p.id, p.name, p.bitwidth) for p in act.params] == [(1, "val", 8)]
    assert [(a.param_id, a.value) for a in info.tables[0].initial_default_action.arguments] == [
        (1, b"\x07")]


def test_unused_tables_and_actions_are_left_out_and_globals_come_first():
    used = action("Ing.used")
    helper = action("Ing.helper")
    caller = action("Ing.caller", body=ir.Block([ir.CallStmt(ir.ActionCall(helper))]))
    unused = action("Ing.unused")
    only_in_unused_table = action("Ing.lonely")
    t = table("Ing.t", [], [used, NO_ACTION], NO_ACTION)
    dead = table("Ing.dead", [], [only_in_unused_table], None)
    ing = control("Ing", [used, helper, caller, unused, only_in_unused_table, t, dead],
                  apply_all(t, extra=[ir.CallStmt(ir.ActionCall(caller))]))
    info = generate(program(ing))
    # helper is called only from another action: p4c inlines it and drops
    # the declaration before building P4Info (as send_back in p4c's crc32-bmv2)
    assert [a.preamble.name for a in info.actions] == ["NoAction", "Ing.used", "Ing.caller"]
    assert [t.preamble.name for t in info.tables] == ["Ing.t"]


def test_global_action_shared_by_two_controls_is_listed_once():
    t1 = table("Ing.t", [], [NO_ACTION], NO_ACTION)
    t2 = table("Eg.t", [], [NO_ACTION], NO_ACTION)
    info = generate(program(control("Ing", [t1], apply_all(t1)), control("Eg", [t2], apply_all(t2))))
    assert [a.preamble.name for a in info.actions] == ["NoAction"]
    assert list(info.actions[0].preamble.annotations) == ['@noWarn("unused")']
    assert [t.preamble.alias for t in info.tables] == ["Ing.t", "Eg.t"]


def test_sub_control_is_inlined_at_its_declaration():
    inner_t = table("Ing.sub.t", [], [NO_ACTION], NO_ACTION)
    sub_decl = ir.ControlDecl("Sub", [], locals=[inner_t], apply=apply_all(inner_t))
    sub = ir.Instance("sub", ir.ControlT(sub_decl))
    before = table("Ing.before", [], [NO_ACTION], NO_ACTION)
    after = table("Ing.after", [], [NO_ACTION], NO_ACTION)
    ing = control("Ing", [before, sub, after],
                  apply_all(before, after, extra=[ir.CallStmt(ir.SubApply(sub))]))
    info = generate(program(ing))
    assert [t.preamble.name for t in info.tables] == ["Ing.before", "Ing.sub.t", "Ing.after"]
    assert info.tables[1].preamble.alias == "t"


@pytest.mark.parametrize("semantics,expected", [
    ('"sum_of_weights"', "sum_of_weights"), ('"sum_of_members"', "sum_of_members"), (None, None)])
def test_selector_size_semantics_only_when_annotated(semantics, expected):
    a = action("Ing.a")
    annotations = [ann("max_group_size", "8"), ann("max_member_weight", "5")]
    if semantics is not None:
        annotations.append(ann("selector_size_semantics", semantics, [semantics.strip('"')]))
    sel = instance("action_selector", "Ing.sel", [enum_const(HASH_ALGORITHM, "crc16"), const(64), const(14)],
                   annotations=annotations)
    t = table("Ing.t", [key("m.h", 14, "selector")], [a], None, implementation=sel)
    profile = generate(program(control("Ing", [a, t, sel], apply_all(t)))).action_profiles[0]
    assert profile.WhichOneof("selector_size_semantics") == expected
    assert profile.max_group_size == 8
    if expected == "sum_of_members":
        assert profile.sum_of_members.max_member_weight == 5


def test_action_profiles_declared_and_in_place():
    a = action("Ing.a")
    shared = instance("action_selector", "Ing.sel",
                      [enum_const(HASH_ALGORITHM, "crc16"), const(64), const(14)],
                      annotations=[ann("max_group_size", "8")])
    inplace = instance("action_profile", "prof", [const(32)], annotations=[ann("name", '"prof"', ["prof"])])
    tz = table("Ing.z", [key("m.h", 14, "selector")], [a], None, implementation=shared)
    ty = table("Ing.y", [key("m.h", 14, "selector")], [a], None, implementation=shared)
    tx = table("Ing.x", [], [a], None, implementation=inplace)
    ing = control("Ing", [a, tz, ty, shared, tx], apply_all(tz, ty, tx))
    info = generate(program(ing))
    names = [p.preamble.name for p in info.action_profiles]
    assert names == ["Ing.sel", "prof"]
    sel, prof = info.action_profiles
    assert sel.with_selector and sel.size == 64 and sel.max_group_size == 8
    # @max_group_size alone names no size semantics (p4c: fabric.p4, PINS)
    assert sel.WhichOneof("selector_size_semantics") is None
    assert list(sel.preamble.annotations) == []
    # table ids sorted by table name, not by declaration
    assert list(sel.table_ids) == [ids(nm.TABLE, "Ing.y"), ids(nm.TABLE, "Ing.z")]
    assert not prof.with_selector and prof.size == 32
    assert info.tables[2].implementation_id == ids(nm.ACTION_PROFILE, "prof")


def test_counters_meters_registers_and_direct_resources():
    a = action("Ing.a")
    dc = instance("direct_counter", "Ing.dc", [enum_const(COUNTER_TYPE, "packets_and_bytes")])
    dm = instance("direct_meter", "Ing.dm", [enum_const(METER_TYPE, "bytes")], [ir.BitT(2)])
    c = instance("counter", "Ing.c", [const(128), enum_const(COUNTER_TYPE, "bytes")])
    m = instance("meter", "Ing.m", [const(16), enum_const(METER_TYPE, "packets")])
    r = instance("register", "Ing.r", [const(1024)], [ir.BitT(48)])
    t = table("Ing.t", [], [a], None, counters=dc, meters=dm)
    info = generate(program(control("Ing", [a, dc, dm, c, m, r, t], apply_all(t))))
    assert info.counters[0].spec.unit == p4info_pb2.CounterSpec.BYTES and info.counters[0].size == 128
    assert info.meters[0].spec.unit == p4info_pb2.MeterSpec.PACKETS and info.meters[0].size == 16
    assert info.registers[0].size == 1024
    assert info.registers[0].type_spec.bitstring.bit.bitwidth == 48
    assert info.direct_counters[0].spec.unit == p4info_pb2.CounterSpec.BOTH
    assert info.direct_counters[0].direct_table_id == ids(nm.TABLE, "Ing.t")
    assert info.direct_meters[0].spec.unit == p4info_pb2.MeterSpec.BYTES
    assert list(info.tables[0].direct_resource_ids) == [ids(nm.DIRECT_COUNTER, "Ing.dc"),
                                                        ids(nm.DIRECT_METER, "Ing.dm")]
    assert info.counters[0].preamble.id == ids(nm.COUNTER, "Ing.c")
    assert info.registers[0].preamble.id == ids(nm.REGISTER, "Ing.r")


def _digest_decl():
    return ir.ExternFunctionDecl("digest", [ir.Param("receiver", ir.BitT(32), "in"),
                                            ir.Param("data", ir.BitT(32), "in")], ir.VoidT(), ["T"])


def test_digest_and_type_info_struct():
    learn_t = ir.StructT("learn_t", [ir.Field("mac", ir.BitT(48)), ir.Field("port", ir.BitT(9))])
    call = ir.ExternFunctionCall(_digest_decl(), [const(1), ir.StructExpr({}, type=learn_t)], [learn_t])
    learn = action("Ing.learn", body=ir.Block([ir.CallStmt(call)]))
    t = table("Ing.t", [], [learn], None)
    info = generate(program(control("Ing", [learn, t], apply_all(t))))
    assert len(info.digests) == 1
    d = info.digests[0]
    assert d.preamble.name == "learn_t" and d.preamble.id == ids(nm.DIGEST, "learn_t")
    assert d.type_spec.struct.name == "learn_t"
    members = info.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("mac", 48), ("port", 9)]


def test_controller_header_value_set_and_ids():
    pin = ir.HeaderT("packet_in_t", [ir.Field("port", ir.BitT(9)),
                                     ir.Field("pad", ir.BitT(7), [ann("id", "5")])],
                     [ann("controller_header", '"packet_in"', ["packet_in"])])
    vs = ir.ValueSetDecl("pvs", ir.BitT(16), 4, cp_name="P.pvs")
    a = action("Ing.a", annotations=[ann("id", "0x10"), ann("brief", '"does a"', ["does a"])])
    t = table("Ing.t", [], [a], a, annotations=[ann("my_note", '"x", 3')])
    prog = program(control("Ing", [a, t], apply_all(t)), parser_=parser("P", [vs]),
                   declarations=[ir.TypeDeclRef("packet_in_t", pin)])
    info = generate(prog)
    cpm = info.controller_packet_metadata[0]
    assert cpm.preamble.name == cpm.preamble.alias == "packet_in"
    assert cpm.preamble.id == ids(nm.CONTROLLER_HEADER, "packet_in_t")
    assert list(cpm.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in cpm.metadata] == [(1, "port", 9), (5, "pad", 7)]
    v = info.value_sets[0]
    assert v.preamble.name == "P.pvs" and v.size == 4
    assert [(m.id, m.bitwidth) for m in v.match] == [(1, 16)]
    assert info.actions[0].preamble.id == 0x01000010
    assert info.actions[0].preamble.doc.brief == "does a"
    assert list(info.actions[0].preamble.annotations) == []
    assert list(info.tables[0].preamble.annotations) == ['@my_note("x" , 3)']


def test_newtype_params_and_keys():
    port_t = ir.NewT("PortId_t", ir.BitT(9),
                     [ann("p4runtime_translation", '"p4.org/psa/v1/PortId_t", 32')])
    plain_t = ir.NewT("Plain_t", ir.BitT(12))
    a = action("Ing.a", [("p", port_t), ("q", plain_t)])
    t = table("Ing.t", [key("m.port", 9, "exact", type_=port_t)], [a], None)
    info = generate(program(control("Ing", [a, t], apply_all(t))))
    (ing_a,) = [x for x in info.actions if x.preamble.name == "Ing.a"]
    p, q = ing_a.params
    assert (p.bitwidth, p.type_name.name) == (32, "PortId_t")
    assert (q.bitwidth, q.type_name.name) == (12, "Plain_t")
    mf = info.tables[0].match_fields[0]
    assert (mf.bitwidth, mf.type_name.name) == (32, "PortId_t")
    nt = info.type_info.new_types
    assert nt["PortId_t"].translated_type.uri == "p4.org/psa/v1/PortId_t"
    assert nt["PortId_t"].translated_type.sdn_bitwidth == 32
    assert nt["Plain_t"].original_type.bitstring.bit.bitwidth == 12


def test_hidden_objects_are_not_listed():
    a = action("Ing.a", annotations=[ann("hidden")])
    t = table("Ing.t", [], [a], a, annotations=[ann("hidden")])
    info = generate(program(control("Ing", [a, t], apply_all(t))))
    assert len(info.tables) == 0 and len(info.actions) == 0


def test_type_info_present_only_when_p4c_asks_for_it():
    empty = generate(program(control("Ing")))
    assert not empty.HasField("type_info")
    t = table("Ing.t", [], [NO_ACTION], NO_ACTION)
    assert generate(program(control("Ing", [t], apply_all(t)))).HasField("type_info")
    assert empty.pkg_info.arch == "v1model"


def test_bad_ids_are_p4_errors():
    a = action("Ing.a", annotations=[ann("id", "0x02000001")])
    t = table("Ing.t", [], [a], None)
    with pytest.raises(P4Error):
        generate(program(control("Ing", [a, t], apply_all(t))))


def test_render_and_parse_round_trip():
    t = table("Ing.t", [key("h.a", 8, "exact")], [NO_ACTION], NO_ACTION)
    info = generate(program(control("Ing", [t], apply_all(t))))
    for fmt in ("text", "json", "binary"):
        assert parse(render(info, fmt), fmt) == info
    assert render(info).startswith(b"# proto-file: p4/config/v1/p4info.proto")


def test_default_action_arguments_fall_back_to_parameter_defaults():
    a = action("Ing.add", [("va", ir.BitT(32)), ("vb", ir.BitT(32))])
    a.params[1].default = const(0)
    t = table("Ing.t", [], [a], ir.ActionRef(a, [const(10)]), const_default=True)
    info = generate(program(control("Ing", [a, t], apply_all(t))))
    args = info.tables[0].initial_default_action.arguments
    assert [(x.param_id, x.value) for x in args] == [(1, b"\x00\x00\x00\x0a"), (2, b"\x00\x00\x00\x00")]


def test_anonymous_in_place_profile_is_an_error():
    a = action("Ing.a")
    anonymous = instance("action_profile", "", [const(4)])
    t = table("Ing.t", [], [a], None, implementation=anonymous)
    with pytest.raises(P4Error, match="without a @name"):
        generate(program(control("Ing", [a, t], apply_all(t))))
