"""The P4 programs of real fabrics on the builtin target: SONiC PINS
(pins_fabric, pins_middleblock, pins_wbb), SONiC DASH (the v1model DASH
pipeline) and ONF's fabric.p4.  Each is loaded with the front end, its
P4Info generated, and the entries its controller would write are written
as P4Runtime updates (ids and encoded values from the P4Info, through the
ControlPlane that the P4Runtime server and the STF runner share); then one
packet goes through the program's main path and the output is checked
field by field.

The programs are p4c's public test programs and are not in this
repository: set TESTBED_P4C_SAMPLES to p4c's testdata/p4_16_samples
directory (these tests are skipped, saying so, when it is unset)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw, raw

from testbed.control.p4info_index import P4InfoIndex, encode_value
from testbed.control.p4runtime_client import TableEntrySpec, encode_table_entry
from testbed.p4model.clock import ManualClock
from testbed.p4model.control_plane import ControlPlane
from testbed.p4model.frontend import load_program
from testbed.p4model.p4info import generate
from testbed.p4model.pipeline import Pipeline

SAMPLES_ENV = "TESTBED_P4C_SAMPLES"
SAMPLES = os.environ.get(SAMPLES_ENV)

pytestmark = pytest.mark.skipif(
    not SAMPLES, reason=f"{SAMPLES_ENV} is not set: the directory of p4c's testdata/p4_16_samples "
                        "(these public programs are not part of the repository)")

ROUTER_MAC = "00:aa:bb:cc:dd:01"
HOST_MAC = "00:11:22:33:44:55"
NEXT_HOP_MAC = "00:66:77:88:99:aa"


class Switch:
    """One program on the builtin target, written to as its controller would."""

    def __init__(self, relative: str) -> None:
        path = Path(SAMPLES) / relative
        if not path.is_file():
            pytest.fail(f"{path}: not found ({SAMPLES_ENV}={SAMPLES} is not p4c's testdata/p4_16_samples)")
        program = load_program(path, include_dirs=[str(path.parent)])
        self.p4info = generate(program)
        self.index = P4InfoIndex(self.p4info)
        self.pipeline = Pipeline(program, clock=ManualClock(), seed=1)
        self.control = ControlPlane(self.pipeline, self.p4info)

    def write(self, kind, **entity) -> None:
        update = p4runtime_pb2.Update(type=kind)
        for name, message in entity.items():
            getattr(update.entity, name).CopyFrom(message)
        self.control.write(update)

    def insert(self, table: str, match: dict, action: str, params: dict | None = None,
               priority: int = 0) -> None:
        entry = encode_table_entry(self.index, TableEntrySpec(table, match, action, params or {}, priority))
        self.write(p4runtime_pb2.Update.INSERT, table_entry=entry)

    def clone_session(self, session: int, port: int) -> None:
        entry = p4runtime_pb2.PacketReplicationEngineEntry()
        entry.clone_session_entry.session_id = session
        entry.clone_session_entry.replicas.add(egress_port=port, instance=1)
        self.write(p4runtime_pb2.Update.INSERT, packet_replication_engine_entry=entry)

    def direct_counter(self, table: str, match: dict, action: str, priority: int = 0):
        entry = encode_table_entry(self.index, TableEntrySpec(table, match, action, {}, priority))
        entity = p4runtime_pb2.Entity()
        entity.direct_counter_entry.table_entry.CopyFrom(entry)
        [read] = self.control.read(entity)
        return read.direct_counter_entry.data

    def send(self, port: int, frame) -> list[tuple[int, bytes]]:
        return self.pipeline.process(port, raw(frame))


def udp_frame(dst_mac=ROUTER_MAC, src="10.1.0.2", dst="10.2.0.7", ttl=64):
    return (Ether(src=HOST_MAC, dst=dst_mac) / IP(src=src, dst=dst, ttl=ttl, id=7)
            / UDP(sport=1234, dport=5678) / Raw(b"payload-bytes"))


def routed(frame, src_mac: str, dst_mac: str) -> bytes:
    """The frame after one IPv4 router hop: new MACs, TTL one less, checksum redone."""
    out = Ether(raw(frame))
    out[Ether].src, out[Ether].dst = src_mac, dst_mac
    out[IP].ttl -= 1
    del out[IP].chksum
    return raw(out)


# ------------------------------------------------------------------ SONiC PINS


@pytest.mark.parametrize("program", ["pins/pins_middleblock.p4", "pins/pins_fabric.p4"])
def test_pins_routes_ipv4_through_vrf_nexthop_router_interface_and_neighbor(program):
    """PINS' L3 path as its controller (the SDN controller via the P4RT app)
    programs it: a VRF, the pre-ingress ACL that puts traffic in it, L3
    admission of the router MAC, an LPM route to a nexthop, the nexthop's
    router interface (port, source MAC) and neighbor (destination MAC)."""
    sw = Switch(program)
    sw.insert("vrf_table", {"vrf_id": 1}, "no_action")
    sw.insert("acl_pre_ingress_table", {}, "set_vrf", {"vrf_id": 1}, priority=1)
    sw.insert("l3_admit_table", {"dst_mac": (ROUTER_MAC, "ff:ff:ff:ff:ff:ff")}, "admit_to_l3", priority=1)
    sw.insert("ipv4_table", {"vrf_id": 1, "ipv4_dst": ("10.2.0.0", 16)}, "set_nexthop_id", {"nexthop_id": 5})
    neighbor = 0xfe80000000000000021122fffe334455
    sw.insert("nexthop_table", {"nexthop_id": 5}, "set_ip_nexthop",
              {"router_interface_id": 3, "neighbor_id": neighbor})
    sw.insert("router_interface_table", {"router_interface_id": 3}, "set_port_and_src_mac",
              {"port": 9, "src_mac": "00:de:ad:00:00:03"})
    sw.insert("neighbor_table", {"router_interface_id": 3, "neighbor_id": neighbor}, "set_dst_mac",
              {"dst_mac": NEXT_HOP_MAC})

    frame = udp_frame()
    assert sw.send(4, frame) == [(9, routed(frame, "00:de:ad:00:00:03", NEXT_HOP_MAC))]
    # not admitted to L3 (another destination MAC): dropped
    assert sw.send(4, udp_frame(dst_mac="00:aa:bb:cc:dd:99")) == []
    # no route (other prefix): dropped
    assert sw.send(4, udp_frame(dst="10.9.0.1")) == []


def test_pins_wbb_traps_to_the_cpu_session_and_counts():
    """WBB's one table traps (clone to the CPU session, drop) what its ACL
    matches.  p4c's copy of the program parses no header, so the entry the
    controller writes matches the unparsed fields (ether_type reads 0);
    without an entry the frame leaves unchanged on port 0."""
    sw = Switch("pins/pins_wbb.p4")
    frame = Ether(src=HOST_MAC, dst="01:80:c2:00:00:0e", type=0x88CC) / Raw(b"lldp")
    assert sw.send(3, frame) == [(0, raw(frame))]
    sw.clone_session(255, 510)
    match = {"ether_type": (0, 0xFFFF)}
    sw.insert("acl_wbb_ingress_table", match, "acl_wbb_ingress_trap", priority=10)
    assert sw.send(3, frame) == [(510, raw(frame))]
    counted = sw.direct_counter("acl_wbb_ingress_table", match, "acl_wbb_ingress_trap", priority=10)
    assert (counted.packet_count, counted.byte_count) == (1, len(raw(frame)))


# ------------------------------------------------------------------ ONF fabric.p4


def test_onf_fabric_routes_ipv4_from_a_vlan_port_through_a_hashed_next():
    """fabric.p4 as ONOS programs it for IPv4 unicast: the port's VLAN
    filtering entry, the router MAC in fwd_classifier, a routing_v4 route
    to a next id, and a hashed next group of one member (output port and
    MAC rewrite) in the action selector."""
    sw = Switch("fabric_20190420/fabric.p4")
    sw.insert("ingress_port_vlan", {"ig_port": 4, "vlan_is_valid": 0}, "permit_with_internal_vlan",
              {"vlan_id": 100}, priority=10)
    sw.insert("fwd_classifier", {"ig_port": 4, "eth_dst": (ROUTER_MAC, "ff:ff:ff:ff:ff:ff"),
                                 "eth_type": 0x0800}, "set_forwarding_type",
              {"fwd_type": 2}, priority=10)
    sw.insert("routing_v4", {"ipv4_dst": ("10.2.0.0", 16)}, "set_next_id_routing_v4", {"next_id": 7})
    sw.insert("next_vlan", {"next_id": 7}, "set_vlan", {"vlan_id": 200})

    profile = sw.index.action_profile("hashed_selector")
    action = sw.index.action("routing_hashed")
    member = p4runtime_pb2.ActionProfileMember(action_profile_id=profile.preamble.id, member_id=1)
    member.action.action_id = action.preamble.id
    for name, value in (("port_num", 9), ("smac", "00:de:ad:00:00:03"), ("dmac", NEXT_HOP_MAC)):
        param = sw.index.param(action, name)
        member.action.params.add(param_id=param.id, value=encode_value(value, param.bitwidth, name))
    sw.write(p4runtime_pb2.Update.INSERT, action_profile_member=member)
    group = p4runtime_pb2.ActionProfileGroup(action_profile_id=profile.preamble.id, group_id=1, max_size=16)
    group.members.add(member_id=1, weight=1)
    sw.write(p4runtime_pb2.Update.INSERT, action_profile_group=group)
    entry = encode_table_entry(sw.index, TableEntrySpec("hashed", {"next_id": 7}, "nop", {}))
    entry.action.action_profile_group_id = 1          # the oneof: the group instead of an action
    sw.write(p4runtime_pb2.Update.INSERT, table_entry=entry)
    sw.insert("egress_vlan", {"vlan_id": 200, "eg_port": 9}, "pop_vlan")

    frame = udp_frame()
    assert sw.send(4, frame) == [(9, routed(frame, "00:de:ad:00:00:03", NEXT_HOP_MAC))]
    # a frame to another MAC is bridged, not routed: no bridging entry, so no output on port 9
    assert all(port != 9 for port, _ in sw.send(4, udp_frame(dst_mac="00:aa:bb:cc:dd:99")))


# ------------------------------------------------------------------ SONiC DASH


def test_dash_outbound_vnet_encapsulates_towards_the_destination_pa():
    """DASH's outbound VNET path as its controller (the SAI/gNMI DASH
    service) programs it: the appliance VIP and underlay MACs, the VNI of
    outbound traffic, the ENI of the source VM's MAC with its attributes,
    an outbound route of the destination prefix into a VNET, the CA->PA
    mapping of the destination VM, the VNET's VNI and the underlay route.
    The VM's frame arrives VXLAN-encapsulated towards the VIP and leaves
    re-encapsulated towards the destination's physical address."""
    sw = Switch("dash/dash-pipeline-v1model-bmv2.p4")
    vip, appliance_mac, underlay_mac = "192.168.0.1", "00:00:02:02:02:02", "00:00:05:05:05:05"
    vm_mac, remote_vm_mac = "00:cc:cc:cc:cc:cc", "00:dd:dd:dd:dd:dd"
    pa_of_remote = "192.168.9.9"
    sw.insert("dash_ingress.vip", {"hdr.u0_ipv4.dst_addr": vip}, "accept")
    sw.insert("dash_ingress.direction_lookup_stage.direction_lookup", {"hdr.u0_vxlan.vni": 11}, "set_outbound_direction")
    sw.insert("dash_ingress.appliance", {"meta.appliance_id": (0, 0xFF)}, "set_appliance",
              {"neighbor_mac": underlay_mac, "mac": appliance_mac}, priority=1)
    sw.insert("dash_ingress.eni_lookup_stage.eni_ether_address_map", {"meta.eni_addr": vm_mac}, "set_eni", {"eni_id": 7})
    eni_action = sw.index.action("set_eni_attrs")
    params = {p.name: 0 for p in eni_action.params}
    params.update(admin_state=1, vm_underlay_dip="192.168.5.5", vm_vni=11, vnet_id=2, cps=10000,
                  pps=100000, flows=100000)
    sw.insert("dash_ingress.eni", {"meta.eni_id": 7}, "set_eni_attrs", params)
    sw.insert("dash_ingress.outbound.outbound_routing_stage.routing", {"meta.eni_id": 7, "meta.is_overlay_ip_v6": 0,
                                                 "meta.dst_ip_addr": (0x0A010000, 112)},
              "route_vnet", {"dst_vnet_id": 3, "meter_policy_en": 0, "meter_class": 0})
    sw.insert("dash_ingress.outbound.outbound_mapping_stage.ca_to_pa", {"meta.dst_vnet_id": 3, "meta.is_lkup_dst_ip_v6": 0,
                           "meta.lkup_dst_ip_addr": 0x0A010002},
              "set_tunnel_mapping", {"underlay_dip": pa_of_remote, "overlay_dmac": remote_vm_mac,
                                     "use_dst_vnet_vni": 1, "meter_class": 0, "meter_class_override": 0})
    sw.insert("dash_ingress.outbound.outbound_mapping_stage.vnet", {"meta.vnet_id": 3}, "set_vnet_attrs", {"vni": 0x3333})
    sw.insert("dash_ingress.underlay.underlay_routing", {"meta.dst_ip_addr": (0xC0A80900, 120)}, "pkt_act",
              {"packet_action": 1, "next_hop_id": 6})

    inner = (Ether(src=vm_mac, dst="00:ee:ee:ee:ee:ee") / IP(src="10.1.0.1", dst="10.1.0.2", ttl=64)
             / TCP(sport=4000, dport=80, flags="S"))
    frame = (Ether(src="00:00:01:01:01:01", dst=appliance_mac) / IP(src="192.168.5.5", dst=vip)
             / UDP(sport=5000, dport=4789) / VXLAN(vni=11) / inner)
    [(port, data)] = sw.send(2, frame)
    out = Ether(data)
    assert port == 6
    assert (out[Ether].src, out[Ether].dst) == (appliance_mac, underlay_mac)
    assert (out[IP].src, out[IP].dst) == (vip, pa_of_remote)
    recomputed = IP(raw(out[IP]))
    del recomputed.chksum
    assert IP(raw(recomputed)).chksum == out[IP].chksum
    assert out[UDP].dport == 4789 and out[VXLAN].vni == 0x3333
    assert out[VXLAN].payload[Ether].dst == remote_vm_mac
    assert raw(out[VXLAN].payload[IP]) == raw(inner[IP])
    # a source VM without an ENI: dropped
    unknown = frame.copy()
    unknown[VXLAN].payload[Ether].src = "00:cc:cc:cc:cc:01"
    assert sw.send(2, unknown) == []
