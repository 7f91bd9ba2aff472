"""P4Info of our own programs in tests/p4programs, through the front end.

Names and structure are what p4c's rules give (sub-control inlining,
NoAction localised first, unused declarations dropped, externs in
declaration order); ids are checked against the hash rule and @id."""

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from testbed.p4model.p4info import naming as nm

frontend = pytest.importorskip("testbed.p4model.frontend")
if not hasattr(frontend, "load_program"):
    pytest.skip("front end has no load_program yet", allow_module_level=True)

from testbed.p4model.p4info import generate_file  # noqa: E402

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


@pytest.fixture(scope="module")
def features():
    return generate_file(PROGRAMS / "p4info_features.p4")


def by_name(items):
    return {i.preamble.name: i for i in items}


def test_basic_ipv4():
    path = PROGRAMS / "basic_ipv4.p4"
    if not path.exists():
        pytest.skip("basic_ipv4.p4 (the front end's vertical-slice program) is not in the tree")
    info = generate_file(path)
    assert [a.preamble.name for a in info.actions] == ["NoAction", "MyIngress.drop", "MyIngress.set_nhop"]
    (t,) = info.tables
    assert (t.preamble.name, t.preamble.alias, t.preamble.id) == (
        "MyIngress.ipv4_lpm", "ipv4_lpm", nm.hashed_id(nm.TABLE, "MyIngress.ipv4_lpm"))
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, p4info_pb2.MatchField.LPM)]
    assert t.initial_default_action.action_id == nm.hashed_id(nm.ACTION, "MyIngress.drop")
    assert t.const_default_action_id == 0
    set_nhop = info.actions[2]
    assert [(p.id, p.name, p.bitwidth) for p in set_nhop.params] == [(1, "dstAddr", 48), (2, "port", 9)]
    assert info.HasField("type_info")


def test_actions_in_p4c_order(features):
    assert [a.preamble.name for a in features.actions] == [
        "NoAction", "TbIngress.acl_block.deny", "TbIngress.forward", "TbIngress.learn",
        "global_drop", "TbIngress.set_tag", "TbEgress.mark"]
    actions = by_name(features.actions)
    assert actions["TbIngress.learn"].preamble.id == 0x01000100
    assert actions["TbIngress.forward"].preamble.doc.brief == "Send out of a port"
    port, color = actions["TbIngress.forward"].params
    assert (port.bitwidth, port.type_name.name) == (32, "port_t")
    assert (color.bitwidth, color.HasField("type_name")) == (8, False)
    assert actions["global_drop"].preamble.alias == "global_drop"
    for name, action in actions.items():
        if name != "TbIngress.learn":
            assert action.preamble.id == nm.hashed_id(nm.ACTION, name)


def test_tables(features):
    assert [t.preamble.name for t in features.tables] == [
        "TbIngress.acl_block.acl", "TbIngress.fwd", "TbIngress.ecmp", "TbIngress.tagger", "TbEgress.limit"]
    t = by_name(features.tables)
    acl, fwd, ecmp, tagger, limit = (t[n] for n in ("TbIngress.acl_block.acl", "TbIngress.fwd",
                                                    "TbIngress.ecmp", "TbIngress.tagger", "TbEgress.limit"))
    assert acl.is_const_table and acl.has_initial_entries and acl.preamble.alias == "acl"
    assert [(m.id, m.name, m.match_type) for m in fwd.match_fields] == [
        (1, "hdr.ethernet.dst", p4info_pb2.MatchField.EXACT),
        (2, "source", p4info_pb2.MatchField.LPM),
        (3, "sm.ingress_port", p4info_pb2.MatchField.RANGE),
        (4, "meta.tag", p4info_pb2.MatchField.OPTIONAL)]
    assert [(r.scope, list(r.annotations)) for r in fwd.action_refs] == [
        (p4info_pb2.ActionRef.TABLE_AND_DEFAULT, []),
        (p4info_pb2.ActionRef.TABLE_ONLY, ["@tableonly"]),
        (p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"])]
    drop_id = nm.hashed_id(nm.ACTION, "global_drop")
    assert fwd.const_default_action_id == drop_id == fwd.initial_default_action.action_id
    assert fwd.size == 512
    assert list(fwd.direct_resource_ids) == [nm.hashed_id(nm.DIRECT_COUNTER, "TbIngress.fwd_hits")]
    assert [m.name for m in ecmp.match_fields] == ["hdr.ethernet.dst"]
    # no default_action: p4c's front end gives NoAction, listed @defaultonly
    noaction = nm.hashed_id(nm.ACTION, "NoAction")
    assert ecmp.initial_default_action.action_id == noaction
    assert [(r.id, r.scope) for r in ecmp.action_refs][-1] == (
        noaction, p4info_pb2.ActionRef.DEFAULT_ONLY)
    assert ecmp.implementation_id == nm.hashed_id(nm.ACTION_PROFILE, "TbIngress.ecmp_selector")
    assert [(a.param_id, a.value) for a in tagger.initial_default_action.arguments] == [(1, b"\x07")]
    assert tagger.implementation_id == nm.hashed_id(nm.ACTION_PROFILE, "tag_profile")
    assert list(limit.direct_resource_ids) == [nm.hashed_id(nm.DIRECT_METER, "TbEgress.rate")]


def test_externs(features):
    assert [p.preamble.name for p in features.action_profiles] == ["TbIngress.ecmp_selector", "tag_profile"]
    sel, prof = features.action_profiles
    assert sel.with_selector and sel.size == 256
    assert list(sel.table_ids) == [nm.hashed_id(nm.TABLE, "TbIngress.ecmp")]
    assert not prof.with_selector and prof.size == 64
    (c,) = features.counters
    assert (c.preamble.name, c.size, c.spec.unit) == ("TbIngress.port_counter", 64, p4info_pb2.CounterSpec.BOTH)
    (m,) = features.meters
    assert (m.preamble.name, m.size, m.spec.unit) == ("TbIngress.port_meter", 32, p4info_pb2.MeterSpec.BYTES)
    (r,) = features.registers
    assert (r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth) == ("TbIngress.last_seen", 128, 32)
    (dc,) = features.direct_counters
    assert dc.direct_table_id == nm.hashed_id(nm.TABLE, "TbIngress.fwd")
    (dm,) = features.direct_meters
    assert (dm.preamble.name, dm.spec.unit) == ("TbEgress.rate", p4info_pb2.MeterSpec.PACKETS)


def test_digest_controller_headers_value_set_types(features):
    (d,) = features.digests
    assert d.preamble.name == "learn_t" and d.type_spec.struct.name == "learn_t"
    assert d.preamble.id == nm.hashed_id(nm.DIGEST, "learn_t")
    pin, pout = features.controller_packet_metadata
    assert (pin.preamble.name, pin.preamble.id) == ("packet_in",
                                                    nm.hashed_id(nm.CONTROLLER_HEADER, "packet_in_t"))
    assert [(f.id, f.name, f.bitwidth) for f in pout.metadata] == [(2, "egress_port", 9), (1, "pad", 7)]
    (vs,) = features.value_sets
    assert (vs.preamble.name, vs.size, [m.bitwidth for m in vs.match]) == ("TbParser.special_types", 4, [16])
    ti = features.type_info
    assert ti.new_types["port_t"].translated_type.sdn_bitwidth == 32
    assert [m.name for m in ti.serializable_enums["color_t"].members] == ["RED", "GREEN"]
    assert [m.name for m in ti.structs["learn_t"].members] == ["src", "port"]


def test_p4c_table_rules():
    """p4c's front-end rewrites the control plane sees: implicit NoAction
    default (@defaultonly ref + initial default), `$valid$` key names, and
    only directionless params as action data."""
    info = generate_file(PROGRAMS / "p4c_table_rules.p4")
    t = by_name(info.tables)
    noaction = nm.hashed_id(nm.ACTION, "NoAction")
    plain = t["Ing.plain"]
    assert [(r.id, list(r.annotations), r.scope) for r in plain.action_refs] == [
        (nm.hashed_id(nm.ACTION, "Ing.to_port"), [], p4info_pb2.ActionRef.TABLE_AND_DEFAULT),
        (noaction, ["@defaultonly"], p4info_pb2.ActionRef.DEFAULT_ONLY)]
    assert plain.initial_default_action.action_id == noaction
    assert plain.const_default_action_id == 0
    assert [(m.id, m.name, m.bitwidth) for m in t["Ing.by_valid"].match_fields] == [
        (1, "hdr.opt.$valid$", 1), (2, "hdr.base.kind", 8)]
    assert [r.scope for r in t["Ing.by_valid"].action_refs] == [
        p4info_pb2.ActionRef.TABLE_AND_DEFAULT] * 2
    setbyte = by_name(info.actions)["Ing.setbyte"]
    assert [(p.id, p.name, p.bitwidth) for p in setbyte.params] == [(1, "val", 8)]
    assert t["Ing.setter"].initial_default_action.action_id == noaction
    assert info.actions[0].preamble.name == "NoAction"
