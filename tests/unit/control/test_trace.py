"""The path model (testbed.control.trace) against fabric.p4 itself: the
compiled program, given a switch's planned entries, sends every packet out
of the port the model predicts (ECMP with the switch's own multiplier,
the entropy digit of each tier)."""

from __future__ import annotations

import random
from ipaddress import IPv4Address
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw, raw

from testbed.control.p4info_index import P4InfoIndex
from testbed.control.p4runtime_client import encode_table_entry
from testbed.control.plan import plan_fabric
from testbed.control.trace import FabricModel, Flow
from testbed.cells.scapy_cell import Cell
from testbed.p4model.control_plane import ControlPlane
from testbed.p4model.frontend import load_program
from testbed.p4model.p4info import generate
from testbed.p4model.pipeline import Pipeline
from testbed.scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = """
topology: {kind: fat_tree, k: 4}
fabric: {load_balancing: %s}
workload: [{kind: pingall}]
"""


@pytest.fixture(scope="module")
def program():
    program = load_program(ROOT / "p4src" / "fabric.p4")
    return program, generate(program)


def planned_switch(program, plan) -> Pipeline:
    ir, p4info = program
    pipeline = Pipeline(ir, seed=1)
    control, index = ControlPlane(pipeline, p4info), P4InfoIndex(p4info)
    for spec in plan.entries:
        kind = p4runtime_pb2.Update.MODIFY if spec.is_default else p4runtime_pb2.Update.INSERT
        update = p4runtime_pb2.Update(type=kind)
        update.entity.table_entry.CopyFrom(encode_table_entry(index, spec))
        control.write(update)
    return pipeline


@pytest.mark.parametrize("lb", ["ecmp", "spray_rr_entropy"])
def test_the_model_predicts_the_programs_egress_port(program, lb):
    scenario = parse_scenario(SCENARIO % lb, "t.yaml")
    topology = scenario.topo
    plans = plan_fabric(topology, scenario)
    model = FabricModel(topology, plans)
    rng = random.Random(lb)
    for switch in ("edge1_1", "agg2_2", "core3"):
        pipeline = planned_switch(program, plans[switch])
        in_port = topology.ports(switch)[0]
        for _ in range(60):
            src, dst = rng.sample(topology.hosts, 2)
            flow = Flow(src, dst, sport=rng.randrange(49152, 65536), entropy=rng.randrange(1 << 16))
            state = model.switches[switch]
            dst_ip = topology.node(dst).ip
            dst_int, src_int = int(IPv4Address(dst_ip)), int(IPv4Address(topology.node(src).ip))
            group_id = state.routes[dst_int]
            group = state.groups[group_id]
            expected = group.members[model.member(switch, group, group_id, flow, src_int, dst_int)]
            frame = (Ether(src=topology.port(in_port.peer, in_port.peer_port).mac, dst=in_port.mac)
                     / IP(src=topology.node(src).ip, dst=dst_ip, tos=2)
                     / UDP(sport=flow.sport, dport=4793)
                     / Cell(type=0, entropy=flow.entropy, flow_id=1, msg_id=1, aux=scenario.fabric.cell_size)
                     / Raw(bytes(scenario.fabric.cell_size)))
            out = pipeline.process(in_port.number, raw(frame))
            assert [port for port, _ in out] == [expected], (switch, flow)
