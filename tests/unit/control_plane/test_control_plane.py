"""ControlPlane: P4Runtime writes, reads and refusals for every entity."""

import pytest
from google.protobuf import text_format
from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane import decode_value, encode_value
from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.tables import ActionCall

FWD, ACL, LPM, ECMP, FIXED = 33554433, 33554434, 33554435, 33554436, 33554437
SET_PORT, MARK, NOACTION = 16777217, 16777218, 16777219
SEL = 285212673


def entity(text: str) -> p4runtime_pb2.Entity:
    return text_format.Parse(text, p4runtime_pb2.Entity())


def write(cp, kind: str, text: str) -> None:
    cp.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind), entity=entity(text)))


def refused(cp, kind: str, text: str) -> str:
    with pytest.raises(ControlPlaneError) as info:
        write(cp, kind, text)
    return info.value.code


def fwd_entry(mac: bytes, port: int = 1, extra: str = "") -> str:
    return (f'table_entry {{ table_id: {FWD} match {{ field_id: 1 exact {{ value: "{_esc(mac)}" }} }} '
            f'action {{ action {{ action_id: {SET_PORT} params {{ param_id: 1 value: "{_esc(bytes([port]))}" }} '
            f'params {{ param_id: 2 value: "\\x00" }} }} }} {extra} }}')


def _esc(data: bytes) -> str:
    return "".join(f"\\x{b:02x}" for b in data)


# -- byte strings ----------------------------------------------------------------

def test_canonical_encoding_and_lenient_decoding():
    assert encode_value(0) == b"\x00"
    assert encode_value(0x1234) == b"\x12\x34"
    assert decode_value(b"\x00\x00\x01", 9, "x") == 1          # padded accepted
    assert decode_value(b"", 9, "x") == 0                       # PI pads short strings
    with pytest.raises(ControlPlaneError) as info:
        decode_value(b"\x02\x00", 9, "x")
    assert info.value.code == "INVALID_ARGUMENT"


# -- table entries -----------------------------------------------------------------

def test_insert_read_modify_delete_exact(switch):
    cp, pipeline = switch
    write(cp, "INSERT", fwd_entry(b"\x00\x00\x00\x00\x00\x01", 3))
    table = pipeline.tables["MyIngress.fwd"]
    assert table.lookup((1,)).action == ActionCall("MyIngress.set_port", (3, 0))
    [read] = cp.read(entity(f"table_entry {{ table_id: {FWD} }}"))
    assert read.table_entry.match[0].exact.value == b"\x01"      # canonical
    assert read.table_entry.action.action.params[0].value == b"\x03"
    write(cp, "MODIFY", fwd_entry(b"\x01", 5))
    assert table.lookup((1,)).action.args == (5, 0)
    write(cp, "DELETE", fwd_entry(b"\x01"))
    assert table.lookup((1,)) is None


def test_table_errors_follow_pi(switch):
    cp, _ = switch
    write(cp, "INSERT", fwd_entry(b"\x01"))
    assert refused(cp, "INSERT", fwd_entry(b"\x01")) == "ALREADY_EXISTS"
    assert refused(cp, "MODIFY", fwd_entry(b"\x02")) == "NOT_FOUND"
    assert refused(cp, "DELETE", fwd_entry(b"\x02")) == "NOT_FOUND"
    assert refused(cp, "INSERT", "table_entry { table_id: 999 }") == "INVALID_ARGUMENT"
    # 10-bit port in a 9-bit parameter
    bad = fwd_entry(b"\x03").replace('value: "\\x03"', 'value: "\\x02\\x00"', 1)
    assert refused(cp, "INSERT", fwd_entry(b"\x03", 0).replace(
        'param_id: 1 value: "\\x00"', 'param_id: 1 value: "\\x02\\x00"')) == "INVALID_ARGUMENT"
    assert bad  # keeps the helper honest
    # missing exact field, unknown field id, DEFAULT_ONLY action in an entry
    assert refused(cp, "INSERT", f"table_entry {{ table_id: {FWD} action {{ action {{ action_id: {MARK} }} }} }}") == "INVALID_ARGUMENT"
    assert refused(cp, "INSERT", f'table_entry {{ table_id: {FWD} match {{ field_id: 7 exact {{ value: "\\x01" }} }} action {{ action {{ action_id: {MARK} }} }} }}') == "INVALID_ARGUMENT"
    assert refused(cp, "INSERT", f'table_entry {{ table_id: {FWD} match {{ field_id: 1 exact {{ value: "\\x09" }} }} action {{ action {{ action_id: {NOACTION} }} }} }}') == "PERMISSION_DENIED"
    # priority on an exact table
    assert refused(cp, "INSERT", fwd_entry(b"\x04", extra="priority: 3")) == "INVALID_ARGUMENT"


def test_table_full_and_const_table(switch):
    cp, pipeline = switch
    for i in range(4):
        write(cp, "INSERT", fwd_entry(bytes([i + 1])))
    assert refused(cp, "INSERT", fwd_entry(b"\x09")) == "RESOURCE_EXHAUSTED"
    assert refused(cp, "INSERT", f'table_entry {{ table_id: {FIXED} match {{ field_id: 1 exact {{ value: "\\x02" }} }} action {{ action {{ action_id: {NOACTION} }} }} }}') == "PERMISSION_DENIED"
    [const] = cp.read(entity(f"table_entry {{ table_id: {FIXED} }}"))
    assert const.table_entry.is_const


def test_ternary_range_optional_and_priorities(switch):
    cp, pipeline = switch
    acl = pipeline.tables["MyIngress.acl"]
    base = f"table_id: {ACL} action {{ action {{ action_id: {MARK} }} }}"
    write(cp, "INSERT", f'table_entry {{ {base} priority: 10 match {{ field_id: 1 ternary {{ value: "\\x0a" mask: "\\xff" }} }} }}')
    write(cp, "INSERT", f'table_entry {{ {base} priority: 20 match {{ field_id: 2 range {{ low: "\\x50" high: "\\x60" }} }} match {{ field_id: 3 optional {{ value: "\\x06" }} }} }}')
    assert acl.lookup((0x0a, 0x55, 6)).priority == 20
    assert acl.lookup((0x0a, 0x10, 6)).priority == 10
    entries = cp.read(entity(f"table_entry {{ table_id: {ACL} }}"))
    assert [len(e.table_entry.match) for e in entries] == [1, 2]   # don't-cares omitted
    assert refused(cp, "INSERT", f'table_entry {{ {base} match {{ field_id: 1 ternary {{ value: "\\x0b" mask: "\\xff" }} }} }}') == "INVALID_ARGUMENT"   # no priority
    assert refused(cp, "INSERT", f'table_entry {{ {base} priority: 1 match {{ field_id: 1 ternary {{ value: "\\x0b" mask: "\\x0f" }} }} match {{ field_id: 1 ternary {{ value: "\\x0b" mask: "\\x0f" }} }} }}') == "INVALID_ARGUMENT"   # same field twice
    assert refused(cp, "INSERT", f'table_entry {{ {base} priority: 1 match {{ field_id: 1 ternary {{ value: "\\x1b" mask: "\\x0f" }} }} }}') == "INVALID_ARGUMENT"   # value outside mask
    assert refused(cp, "INSERT", f'table_entry {{ {base} priority: 1 match {{ field_id: 1 ternary {{ value: "\\x00" mask: "\\x00" }} }} }}') == "INVALID_ARGUMENT"   # mask 0
    assert refused(cp, "INSERT", f'table_entry {{ {base} priority: 1 match {{ field_id: 2 range {{ low: "\\x60" high: "\\x50" }} }} }}') == "INVALID_ARGUMENT"
    assert refused(cp, "INSERT", f'table_entry {{ {base} priority: 1 match {{ field_id: 1 exact {{ value: "\\x01" }} }} }}') == "INVALID_ARGUMENT"   # wrong match kind


def test_lpm_rules_and_read_filter(switch):
    cp, pipeline = switch
    act = f'action {{ action {{ action_id: {SET_PORT} params {{ param_id: 1 value: "\\x02" }} params {{ param_id: 2 value: "\\x00" }} }} }}'
    write(cp, "INSERT", f'table_entry {{ table_id: {LPM} match {{ field_id: 1 lpm {{ value: "\\x0a\\x00\\x00\\x00" prefix_len: 8 }} }} {act} }}')
    assert pipeline.tables["MyIngress.lpm"].lookup((0x0a010203,)).action.args == (2, 0)
    assert refused(cp, "INSERT", f'table_entry {{ table_id: {LPM} match {{ field_id: 1 lpm {{ value: "\\x0a\\x01\\x00\\x00" prefix_len: 8 }} }} {act} }}') == "INVALID_ARGUMENT"
    assert refused(cp, "INSERT", f'table_entry {{ table_id: {LPM} match {{ field_id: 1 lpm {{ value: "\\x00" prefix_len: 0 }} }} {act} }}') == "INVALID_ARGUMENT"
    assert refused(cp, "INSERT", f'table_entry {{ table_id: {LPM} match {{ field_id: 1 lpm {{ value: "\\x0a" prefix_len: 33 }} }} {act} }}') == "INVALID_ARGUMENT"
    found = cp.read(entity(f'table_entry {{ table_id: {LPM} match {{ field_id: 1 lpm {{ value: "\\x0a\\x00\\x00\\x00" prefix_len: 8 }} }} }}'))
    assert len(found) == 1 and found[0].table_entry.match[0].lpm.value == b"\x0a\x00\x00\x00"
    everything = cp.read(entity("table_entry { }"))
    assert {e.table_entry.table_id for e in everything} == {LPM, FIXED}


def test_default_entries(switch):
    cp, pipeline = switch
    write(cp, "MODIFY", f"table_entry {{ table_id: {ACL} is_default_action: true action {{ action {{ action_id: {NOACTION} }} }} }}")
    assert pipeline.tables["MyIngress.acl"].default == ActionCall("NoAction", ())
    assert refused(cp, "MODIFY", f"table_entry {{ table_id: {ACL} is_default_action: true action {{ action {{ action_id: {MARK} }} }} }}") == "PERMISSION_DENIED"   # TABLE_ONLY
    assert refused(cp, "MODIFY", f"table_entry {{ table_id: {LPM} is_default_action: true action {{ action {{ action_id: {NOACTION} }} }} }}") == "PERMISSION_DENIED"  # const default
    assert refused(cp, "INSERT", f"table_entry {{ table_id: {ACL} is_default_action: true action {{ action {{ action_id: {NOACTION} }} }} }}") == "INVALID_ARGUMENT"
    [default] = cp.read(entity(f"table_entry {{ table_id: {ACL} is_default_action: true }}"))
    assert default.table_entry.action.action.action_id == NOACTION
    write(cp, "MODIFY", f"table_entry {{ table_id: {ACL} is_default_action: true }}")   # reset


def test_nothing_changes_when_refused(switch):
    cp, pipeline = switch
    write(cp, "INSERT", fwd_entry(b"\x01", 3))
    before = pipeline.tables["MyIngress.fwd"].lookup((1,)).action
    refused(cp, "MODIFY", fwd_entry(b"\x01", 4).replace(f"action_id: {SET_PORT}", "action_id: 42"))
    assert pipeline.tables["MyIngress.fwd"].lookup((1,)).action == before


# -- direct resources ------------------------------------------------------------------

def test_direct_counter_in_entry_and_entity(switch):
    cp, pipeline = switch
    write(cp, "INSERT", fwd_entry(b"\x01", extra="counter_data { packet_count: 5 byte_count: 500 }"))
    entry = pipeline.tables["MyIngress.fwd"].lookup((1,))
    assert (entry.counter_packets, entry.counter_bytes) == (5, 500)
    [read] = cp.read(entity(f"table_entry {{ table_id: {FWD} counter_data {{ }} }}"))
    assert read.table_entry.counter_data.byte_count == 500
    write(cp, "MODIFY", f'direct_counter_entry {{ table_entry {{ table_id: {FWD} match {{ field_id: 1 exact {{ value: "\\x01" }} }} }} data {{ packet_count: 7 byte_count: 9 }} }}')
    [dc] = cp.read(entity(f"direct_counter_entry {{ table_entry {{ table_id: {FWD} }} }}"))
    assert (dc.direct_counter_entry.data.packet_count, dc.direct_counter_entry.data.byte_count) == (7, 9)
    assert refused(cp, "MODIFY", f'direct_counter_entry {{ table_entry {{ table_id: {ACL} }} }}') == "INVALID_ARGUMENT"


def test_direct_meter(switch):
    cp, pipeline = switch
    act = f'action {{ action {{ action_id: {SET_PORT} params {{ param_id: 1 value: "\\x02" }} params {{ param_id: 2 value: "\\x00" }} }} }}'
    write(cp, "INSERT", f'table_entry {{ table_id: {LPM} match {{ field_id: 1 lpm {{ value: "\\x0a\\x00\\x00\\x00" prefix_len: 8 }} }} {act} meter_config {{ cir: 1000 cburst: 100 pir: 2000 pburst: 200 }} }}')
    [dm] = cp.read(entity(f"direct_meter_entry {{ table_entry {{ table_id: {LPM} }} }}"))
    assert (dm.direct_meter_entry.config.cir, dm.direct_meter_entry.config.pburst) == (1000, 200)
    write(cp, "MODIFY", f'direct_meter_entry {{ table_entry {{ table_id: {LPM} match {{ field_id: 1 lpm {{ value: "\\x0a\\x00\\x00\\x00" prefix_len: 8 }} }} }} }}')
    [dm] = cp.read(entity(f"direct_meter_entry {{ table_entry {{ table_id: {LPM} }} }}"))
    assert not dm.direct_meter_entry.HasField("config")


# -- action profiles --------------------------------------------------------------------

def member(mid: int, port: int) -> str:
    return (f'action_profile_member {{ action_profile_id: {SEL} member_id: {mid} action {{ action_id: {SET_PORT} '
            f'params {{ param_id: 1 value: "{_esc(bytes([port]))}" }} params {{ param_id: 2 value: "\\x00" }} }} }}')


def test_members_groups_and_indirect_entries(switch):
    cp, pipeline = switch
    write(cp, "INSERT", member(1, 2))
    write(cp, "INSERT", member(2, 3))
    assert refused(cp, "INSERT", member(1, 4)) == "ALREADY_EXISTS"
    write(cp, "INSERT", f"action_profile_group {{ action_profile_id: {SEL} group_id: 10 members {{ member_id: 1 weight: 1 }} members {{ member_id: 2 weight: 1 }} }}")
    assert refused(cp, "INSERT", f"action_profile_group {{ action_profile_id: {SEL} group_id: 11 members {{ member_id: 9 weight: 1 }} }}") == "NOT_FOUND"
    assert refused(cp, "INSERT", f"action_profile_group {{ action_profile_id: {SEL} group_id: 11 members {{ member_id: 1 weight: 2 }} }}") == "UNIMPLEMENTED"
    write(cp, "INSERT", f'table_entry {{ table_id: {ECMP} match {{ field_id: 1 exact {{ value: "\\x05" }} }} action {{ action_profile_group_id: 10 }} }}')
    entry = pipeline.tables["MyIngress.ecmp"].lookup((5,))
    assert pipeline.action_profiles["MyIngress.sel"].resolve(entry, 1).args == (3, 0)
    assert refused(cp, "DELETE", member(1, 2)) == "FAILED_PRECONDITION"
    assert refused(cp, "DELETE", f"action_profile_group {{ action_profile_id: {SEL} group_id: 10 }}") == "FAILED_PRECONDITION"
    [g] = cp.read(entity(f"action_profile_group {{ action_profile_id: {SEL} }}"))
    assert [m.member_id for m in g.action_profile_group.members] == [1, 2]
    assert len(cp.read(entity("action_profile_member { }"))) == 2
    # a direct action in an indirect table
    assert refused(cp, "INSERT", f'table_entry {{ table_id: {ECMP} match {{ field_id: 1 exact {{ value: "\\x06" }} }} action {{ action {{ action_id: {NOACTION} }} }} }}') == "INVALID_ARGUMENT"


def test_one_shot_action_set(switch):
    cp, pipeline = switch
    action = (f'action {{ action_id: {SET_PORT} params {{ param_id: 1 value: "\\x07" }} '
              f'params {{ param_id: 2 value: "\\x00\\x00" }} }} weight: 1')
    write(cp, "INSERT", f'table_entry {{ table_id: {ECMP} match {{ field_id: 1 exact {{ value: "\\x05" }} }} action {{ action_profile_action_set {{ action_profile_actions {{ {action} }} }} }} }}')
    entry = pipeline.tables["MyIngress.ecmp"].lookup((5,))
    assert pipeline.action_profiles["MyIngress.sel"].resolve(entry, 0).args == (7, 0)
    [read] = cp.read(entity(f"table_entry {{ table_id: {ECMP} }}"))
    got = read.table_entry.action.action_profile_action_set.action_profile_actions[0]
    assert got.action.params[1].value == b"\x00"     # canonical on read
    assert refused(cp, "INSERT", member(1, 2)) == "INVALID_ARGUMENT"   # profile is one-shot now
    write(cp, "DELETE", f'table_entry {{ table_id: {ECMP} match {{ field_id: 1 exact {{ value: "\\x05" }} }} }}')
    assert pipeline.action_profiles["MyIngress.sel"].members == {}


# -- counters, meters, registers ----------------------------------------------------------

def test_counters(switch):
    cp, pipeline = switch
    pipeline.counters["MyIngress.pkts"].count(2, 100)
    [c] = cp.read(entity("counter_entry { counter_id: 302063618 index { index: 2 } }"))
    assert c.counter_entry.data.packet_count == 1 and c.counter_entry.data.byte_count == 0  # unit PACKETS
    assert len(cp.read(entity("counter_entry { }"))) == 12          # every cell of both counters
    write(cp, "MODIFY", "counter_entry { counter_id: 302063617 index { index: 3 } data { packet_count: 4 byte_count: 40 } }")
    assert pipeline.counters["MyIngress.hits"].read(3) == (4, 40)
    write(cp, "DELETE", "counter_entry { counter_id: 302063617 index { index: 3 } }")   # PI: reset
    assert pipeline.counters["MyIngress.hits"].read(3) == (0, 0)
    assert refused(cp, "INSERT", "counter_entry { counter_id: 302063617 index { index: 3 } }") == "INVALID_ARGUMENT"
    assert refused(cp, "MODIFY", "counter_entry { counter_id: 302063617 index { index: 8 } }") == "OUT_OF_RANGE"
    assert refused(cp, "MODIFY", "counter_entry { counter_id: 302063617 index { index: -1 } }") == "INVALID_ARGUMENT"
    assert refused(cp, "MODIFY", "counter_entry { counter_id: 1 index { index: 1 } }") == "INVALID_ARGUMENT"


def test_meters(switch):
    cp, pipeline = switch
    write(cp, "MODIFY", "meter_entry { meter_id: 335544321 index { index: 1 } config { cir: 10 cburst: 1 pir: 20 pburst: 2 } }")
    assert pipeline.meters["MyIngress.rate"].get_config(1) == (10, 1, 20, 2)
    meters = cp.read(entity("meter_entry { meter_id: 335544321 }"))
    assert [m.meter_entry.HasField("config") for m in meters] == [False, True, False, False]
    write(cp, "MODIFY", "meter_entry { meter_id: 335544321 index { index: 1 } }")
    assert pipeline.meters["MyIngress.rate"].get_config(1) is None
    assert refused(cp, "INSERT", "meter_entry { meter_id: 335544321 index { index: 1 } }") == "INVALID_ARGUMENT"
    assert refused(cp, "MODIFY", "meter_entry { meter_id: 335544321 index { index: 1 } config { cir: -5 } }") == "INVALID_ARGUMENT"


def test_registers(switch):
    cp, pipeline = switch
    write(cp, "MODIFY", 'register_entry { register_id: 369098753 index { index: 2 } data { bitstring: "\\x01\\x02" } }')
    assert pipeline.registers["MyIngress.reg"].values[2] == 0x102
    [r] = cp.read(entity("register_entry { register_id: 369098753 index { index: 2 } }"))
    assert r.register_entry.data.bitstring == b"\x01\x02"
    write(cp, "MODIFY", 'register_entry { register_id: 369098753 data { bitstring: "\\x07" } }')   # every cell
    assert pipeline.registers["MyIngress.reg"].values == [7] * 8
    assert refused(cp, "MODIFY", 'register_entry { register_id: 369098753 index { index: 0 } data { bitstring: "\\x01\\x00\\x00" } }') == "INVALID_ARGUMENT"
    assert refused(cp, "MODIFY", 'register_entry { register_id: 369098753 index { index: 9 } data { bitstring: "\\x01" } }') == "OUT_OF_RANGE"


# -- packet replication engine ---------------------------------------------------------------

def test_multicast_groups_and_clone_sessions(switch):
    cp, pipeline = switch
    group = "packet_replication_engine_entry { multicast_group_entry { multicast_group_id: 5 replicas { egress_port: 2 instance: 1 } replicas { egress_port: 3 instance: 1 } } }"
    write(cp, "INSERT", group)
    assert pipeline.pre.group(5) == [(1, 2), (1, 3)]
    assert refused(cp, "INSERT", group) == "ALREADY_EXISTS"
    assert refused(cp, "MODIFY", group.replace("id: 5", "id: 6")) == "NOT_FOUND"
    assert refused(cp, "INSERT", group.replace("id: 5", "id: 0")) == "INVALID_ARGUMENT"
    assert refused(cp, "INSERT", group.replace("id: 5", "id: 40000")) == "OUT_OF_RANGE"
    [read] = cp.read(entity("packet_replication_engine_entry { multicast_group_entry { } }"))
    assert len(read.packet_replication_engine_entry.multicast_group_entry.replicas) == 2
    with pytest.raises(ControlPlaneError) as info:
        cp.read(entity("packet_replication_engine_entry { multicast_group_entry { multicast_group_id: 9 } }"))
    assert info.value.code == "NOT_FOUND"
    write(cp, "DELETE", "packet_replication_engine_entry { multicast_group_entry { multicast_group_id: 5 } }")
    assert pipeline.pre.group(5) == []
    write(cp, "INSERT", "packet_replication_engine_entry { clone_session_entry { session_id: 4 replicas { egress_port: 7 } } }")
    assert pipeline.pre.clone_session(4) is not None
    assert refused(cp, "INSERT", "packet_replication_engine_entry { clone_session_entry { session_id: 0 } }") == "INVALID_ARGUMENT"


# -- digests and unknown entities ----------------------------------------------------------------

def test_digest_config(switch):
    cp, _ = switch
    write(cp, "INSERT", "digest_entry { digest_id: 385875969 config { max_timeout_ns: 1000 max_list_size: 1 } }")
    assert cp.digest_config(385875969).max_timeout_ns == 1000
    assert refused(cp, "INSERT", "digest_entry { digest_id: 385875969 config { } }") == "ALREADY_EXISTS"
    assert len(cp.read(entity("digest_entry { }"))) == 1
    write(cp, "DELETE", "digest_entry { digest_id: 385875969 }")
    assert refused(cp, "MODIFY", "digest_entry { digest_id: 385875969 config { } }") == "NOT_FOUND"


def test_unset_update_type_and_extern(switch):
    cp, _ = switch
    with pytest.raises(ControlPlaneError) as info:
        cp.write(p4runtime_pb2.Update(entity=entity(fwd_entry(b"\x01"))))
    assert info.value.code == "INVALID_ARGUMENT"
    assert refused(cp, "INSERT", "extern_entry { }") == "UNIMPLEMENTED"


def test_value_set_members_are_flattened_for_the_parser():
    from fake_switch import make_p4info, make_pipeline

    from testbed.p4model.control_plane import ControlPlane
    from testbed.p4model.runtime.packet import ValueSet

    info = make_p4info()
    text_format.Parse('value_sets { preamble { id: 50331649 name: "P.pvs" } '
                      'match { id: 1 name: "f1" bitwidth: 8 match_type: EXACT } '
                      'match { id: 2 name: "f2" bitwidth: 8 match_type: TERNARY } size: 2 }', info)
    pipeline = make_pipeline()
    pipeline.value_sets = {"P.pvs": ValueSet("P.pvs", 2, 16)}
    cp = ControlPlane(pipeline, info)
    write(cp, "MODIFY", 'value_set_entry { value_set_id: 50331649 '
                        'members { match { field_id: 1 exact { value: "\\x0a" } } '
                        '          match { field_id: 2 ternary { value: "\\x10" mask: "\\xf0" } } } }')
    assert pipeline.value_sets["P.pvs"].members == [(0x0a10, 0xfff0)]
    assert pipeline.value_sets["P.pvs"].matches(0x0a1f)
    [read] = cp.read(entity("value_set_entry { value_set_id: 50331649 }"))
    assert len(read.value_set_entry.members[0].match) == 2
    three = 'members { match { field_id: 1 exact { value: "\\x01" } } } ' * 3
    assert refused(cp, "MODIFY", f"value_set_entry {{ value_set_id: 50331649 {three} }}") == "RESOURCE_EXHAUSTED"
    assert pipeline.value_sets["P.pvs"].members == [(0x0a10, 0xfff0)]      # unchanged
    assert refused(cp, "INSERT", "value_set_entry { value_set_id: 50331649 }") == "INVALID_ARGUMENT"


def test_read_later_takes_values_at_call_time_and_builds_the_same_messages(switch):
    """Counters and registers are read in two steps (the packet thread only takes the values);
    the messages equal read()'s, a later change does not leak in, and a bad request is refused
    at the first step."""
    cp, pipeline = switch
    write(cp, "MODIFY", "counter_entry { counter_id: 302063617 index { index: 3 } data { packet_count: 4 byte_count: 40 } }")
    for text in ("counter_entry { }", "counter_entry { counter_id: 302063617 index { index: 3 } }", "register_entry { }"):
        build = cp.read_later(entity(text))
        assert build() == cp.read(entity(text))
    build = cp.read_later(entity("counter_entry { counter_id: 302063617 index { index: 3 } }"))
    write(cp, "MODIFY", "counter_entry { counter_id: 302063617 index { index: 3 } data { packet_count: 9 byte_count: 90 } }")
    [c] = build()
    assert (c.counter_entry.data.packet_count, c.counter_entry.data.byte_count) == (4, 40)
    with pytest.raises(Exception, match="out of range"):
        cp.read_later(entity("counter_entry { counter_id: 302063617 index { index: 8 } }"))
