"""A toy pipeline (real runtime objects, hand-written process()) and its P4Info,
so the P4Runtime server is tested without the compiler.

Packet format of the toy: byte 0 = key; the table `MyIngress.fwd` (exact on
the key) says the output port.  Port 64 is the CPU port: a packet that
arrives there starts with the 2-byte packet_out header (egress_port:9,
pad:7) and is sent to that port.  A miss sends the packet to the CPU port
with a 2-byte packet_in header (ingress_port:9, reason:7 = 5).  Every
packet with key 0xDD emits the digest `learn_t` (key:8, port:9).
"""

from types import SimpleNamespace

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from testbed.p4model.clock import ManualClock
from testbed.p4model.runtime.externs import CounterArray, DigestQueue, RegisterArray
from testbed.p4model.runtime.pre import PacketReplicationEngine
from testbed.p4model.runtime.tables import ActionCall, MatchField, Table

CPU_PORT = 64
P4INFO_TEXT = """
pkg_info { arch: "v1model" }
tables { preamble { id: 33554433 name: "MyIngress.fwd" alias: "fwd" }
  match_fields { id: 1 name: "hdr.key" bitwidth: 8 match_type: EXACT }
  action_refs { id: 16777217 } action_refs { id: 16777219 }
  size: 64 }
actions { preamble { id: 16777217 name: "MyIngress.set_port" alias: "set_port" }
  params { id: 1 name: "port" bitwidth: 9 } }
actions { preamble { id: 16777219 name: "NoAction" alias: "NoAction" } }
counters { preamble { id: 302063617 name: "MyIngress.hits" alias: "hits" }
  spec { unit: BOTH } size: 8 }
registers { preamble { id: 369098753 name: "MyIngress.reg" alias: "reg" }
  type_spec { bitstring { bit { bitwidth: 16 } } } size: 8 }
controller_packet_metadata { preamble { id: 67146229 name: "packet_in" alias: "packet_in"
    annotations: "@controller_header(\\"packet_in\\")" }
  metadata { id: 1 name: "ingress_port" bitwidth: 9 } metadata { id: 2 name: "reason" bitwidth: 7 } }
controller_packet_metadata { preamble { id: 67121543 name: "packet_out" alias: "packet_out"
    annotations: "@controller_header(\\"packet_out\\")" }
  metadata { id: 1 name: "egress_port" bitwidth: 9 } metadata { id: 2 name: "_pad" bitwidth: 7 } }
digests { preamble { id: 385875969 name: "learn_t" alias: "learn_t" }
  type_spec { struct { name: "learn_t" } } }
type_info { structs { key: "learn_t" value {
  members { name: "key" type_spec { bitstring { bit { bitwidth: 8 } } } }
  members { name: "port" type_spec { bitstring { bit { bitwidth: 9 } } } } } } }
"""
SOURCE = b"// toy program: the tests replace the compiler\n"


def make_p4info() -> p4info_pb2.P4Info:
    return text_format.Parse(P4INFO_TEXT, p4info_pb2.P4Info())


def make_pipeline(clock=None):
    clock = clock or ManualClock()
    noaction = ActionCall("NoAction", ())
    fwd = Table("MyIngress.fwd", [MatchField("hdr.key", "exact", 8)], ["MyIngress.set_port", "NoAction"],
                noaction, False, 64, entries_are_const=False, clock=clock,
                action_params={"MyIngress.set_port": (9,), "NoAction": ()})
    pipeline = SimpleNamespace(
        tables={"MyIngress.fwd": fwd},
        counters={"MyIngress.hits": CounterArray("MyIngress.hits", 8, "packets_and_bytes")},
        meters={}, registers={"MyIngress.reg": RegisterArray("MyIngress.reg", 8, 16)},
        action_profiles={}, value_sets={}, direct_counters={}, direct_meters={},
        pre=PacketReplicationEngine(), clock=clock, digests=DigestQueue(), cpu_port=None, program=None)

    def process(port, data):
        if port == CPU_PORT:
            header = int.from_bytes(data[:2], "big")
            return [(header >> 7, data[2:])]
        if not data:
            return []
        key = data[0]
        pipeline.counters["MyIngress.hits"].count(key % 8, len(data))
        if key == 0xDD:
            pipeline.digests.push("learn_t", (key, port))
        entry = fwd.lookup((key,))
        if entry is None or entry.action.action != "MyIngress.set_port":
            return [(CPU_PORT, ((port << 7) | 5).to_bytes(2, "big") + data)]
        return [(entry.action.args[0], data)]

    pipeline.process = process
    return pipeline
