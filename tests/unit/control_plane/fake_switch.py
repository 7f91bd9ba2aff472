"""A hand-built P4Info and a pipeline made of the real runtime objects
(tables, externs, pre), so the ControlPlane is tested without the compiler."""

from types import SimpleNamespace

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from testbed.p4model.clock import ManualClock
from testbed.p4model.runtime.externs import ActionProfile, CounterArray, MeterArray, RegisterArray
from testbed.p4model.runtime.pre import PacketReplicationEngine
from testbed.p4model.runtime.tables import ActionCall, MatchField, Table, TableEntry

P4INFO_TEXT = """
tables { preamble { id: 33554433 name: "MyIngress.fwd" alias: "fwd" }
  match_fields { id: 1 name: "hdr.eth.dst" bitwidth: 48 match_type: EXACT }
  action_refs { id: 16777217 } action_refs { id: 16777218 }
  action_refs { id: 16777219 scope: DEFAULT_ONLY }
  direct_resource_ids: 318767105 size: 4 }
tables { preamble { id: 33554434 name: "MyIngress.acl" alias: "acl" }
  match_fields { id: 1 name: "hdr.ipv4.src" bitwidth: 32 match_type: TERNARY }
  match_fields { id: 2 name: "hdr.tcp.dport" bitwidth: 16 match_type: RANGE }
  match_fields { id: 3 name: "hdr.ipv4.proto" bitwidth: 8 match_type: OPTIONAL }
  action_refs { id: 16777217 } action_refs { id: 16777218 scope: TABLE_ONLY }
  action_refs { id: 16777219 }
  size: 1024 }
tables { preamble { id: 33554435 name: "MyIngress.lpm" alias: "lpm" }
  match_fields { id: 1 name: "hdr.ipv4.dst" bitwidth: 32 match_type: LPM }
  action_refs { id: 16777217 } action_refs { id: 16777219 }
  const_default_action_id: 16777219
  direct_resource_ids: 352321537 size: 1024 }
tables { preamble { id: 33554436 name: "MyIngress.ecmp" alias: "ecmp" }
  match_fields { id: 1 name: "hdr.ipv4.dst" bitwidth: 32 match_type: EXACT }
  action_refs { id: 16777217 } action_refs { id: 16777219 }
  implementation_id: 285212673 size: 1024 }
tables { preamble { id: 33554437 name: "MyEgress.fixed" alias: "fixed" }
  match_fields { id: 1 name: "meta.x" bitwidth: 8 match_type: EXACT }
  action_refs { id: 16777219 } is_const_table: true size: 1024 }
actions { preamble { id: 16777217 name: "MyIngress.set_port" alias: "set_port" }
  params { id: 1 name: "port" bitwidth: 9 } params { id: 2 name: "tag" bitwidth: 12 } }
actions { preamble { id: 16777218 name: "MyIngress.mark" alias: "mark" } }
actions { preamble { id: 16777219 name: "NoAction" alias: "NoAction" } }
action_profiles { preamble { id: 285212673 name: "MyIngress.sel" alias: "sel" }
  table_ids: 33554436 with_selector: true size: 16 max_group_size: 4 }
counters { preamble { id: 302063617 name: "MyIngress.hits" alias: "hits" }
  spec { unit: BOTH } size: 8 }
counters { preamble { id: 302063618 name: "MyIngress.pkts" alias: "pkts" }
  spec { unit: PACKETS } size: 4 }
direct_counters { preamble { id: 318767105 name: "MyIngress.fwd_counter" alias: "fwd_counter" }
  spec { unit: BOTH } direct_table_id: 33554433 }
meters { preamble { id: 335544321 name: "MyIngress.rate" alias: "rate" }
  spec { unit: PACKETS } size: 4 }
direct_meters { preamble { id: 352321537 name: "MyIngress.lpm_meter" alias: "lpm_meter" }
  spec { unit: BYTES } direct_table_id: 33554435 }
registers { preamble { id: 369098753 name: "MyIngress.reg" alias: "reg" }
  type_spec { bitstring { bit { bitwidth: 16 } } } size: 8 }
digests { preamble { id: 385875969 name: "learn_t" alias: "learn_t" }
  type_spec { struct { name: "learn_t" } } }
"""

SET_PORT = ("MyIngress.set_port", "MyIngress.mark", "NoAction")


def make_p4info() -> p4info_pb2.P4Info:
    return text_format.Parse(P4INFO_TEXT, p4info_pb2.P4Info())


def make_pipeline(clock=None):
    clock = clock or ManualClock()
    params = {"MyIngress.set_port": (9, 12), "MyIngress.mark": (), "NoAction": ()}
    profile = ActionProfile("MyIngress.sel", 16, True, 4,
                            action_names=["MyIngress.set_port", "NoAction"], action_params=params)
    noaction = ActionCall("NoAction", ())
    tables = {
        "MyIngress.fwd": Table("MyIngress.fwd", [MatchField("hdr.eth.dst", "exact", 48)],
                               list(SET_PORT), noaction, False, 4, entries_are_const=False,
                               direct_counter_kind="packets_and_bytes", clock=clock,
                               action_params=params, default_only=frozenset({"NoAction"})),
        "MyIngress.acl": Table("MyIngress.acl", [MatchField("hdr.ipv4.src", "ternary", 32),
                                                 MatchField("hdr.tcp.dport", "range", 16),
                                                 MatchField("hdr.ipv4.proto", "optional", 8)],
                               list(SET_PORT), noaction, False, 1024, entries_are_const=False,
                               clock=clock, action_params=params),
        "MyIngress.lpm": Table("MyIngress.lpm", [MatchField("hdr.ipv4.dst", "lpm", 32)],
                               ["MyIngress.set_port", "NoAction"], noaction, True, 1024,
                               entries_are_const=False, direct_meter_kind="bytes", clock=clock,
                               action_params=params),
        "MyIngress.ecmp": Table("MyIngress.ecmp", [MatchField("hdr.ipv4.dst", "exact", 32),
                                                   MatchField("hdr.ipv4.src", "selector", 32)],
                                ["MyIngress.set_port", "NoAction"], noaction, False, 1024,
                                entries_are_const=False, implementation=profile, clock=clock,
                                action_params=params),
        "MyEgress.fixed": Table("MyEgress.fixed", [MatchField("meta.x", "exact", 8)],
                                ["NoAction"], noaction, False, 1024,
                                const_entries=[TableEntry((1,), action=noaction)],
                                entries_are_const=True, clock=clock),
    }
    return SimpleNamespace(
        tables=tables,
        counters={"MyIngress.hits": CounterArray("MyIngress.hits", 8, "packets_and_bytes"),
                  "MyIngress.pkts": CounterArray("MyIngress.pkts", 4, "packets")},
        meters={"MyIngress.rate": MeterArray("MyIngress.rate", 4, "packets", clock)},
        registers={"MyIngress.reg": RegisterArray("MyIngress.reg", 8, 16)},
        action_profiles={"MyIngress.sel": profile},
        value_sets={}, direct_counters={"MyIngress.fwd_counter": "MyIngress.fwd"},
        direct_meters={"MyIngress.lpm_meter": "MyIngress.lpm"},
        pre=PacketReplicationEngine(), clock=clock)
