"""The fabric loop's own CPU per cell-hop: a whole planned k=4 fat-tree in one process.

Every switch of the fat-tree runs fabric.p4 with the controller's plan (routes, spraying
groups, TM link rates and delays) inside one FabricLoop; every fabric cable is in memory and
every host port is a stand-in that keeps what it is sent. Each host sends DATA cells to its
permutation partner at the links' rate (entropy cycling, as spray_rr_entropy senders do), for
a fixed amount of model time, and the loop is driven in model time (a manual clock): no
syscalls, no select(), no other process. The figure is the CPU the loop spends per packet its
traffic managers take (= per cell-hop, the unit the emulation's costs use), and every cell must
reach its destination host (the benchmark fails otherwise). This is the floor of what a
fabric process costs per cell-hop; `testbed run` measures the same unit inside a real run
(`result.json` costs), where ports, wake-ups and the machine's other processes add to it.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
SCENARIO = """
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: %g, delay_us: 1000}
fabric: {load_balancing: spray_rr_entropy, cell_size: 1024}
workload: [{kind: pingall}]
"""
RATE_MBPS = 20
MODEL_TIME_S = 0.5


class HostPort:
    """A host-facing port: counts what the fabric delivers to the host."""

    def __init__(self, number, iface):
        self.number, self.iface, self.fd, self.delivered = number, iface, None, 0

    def send(self, data):
        self.delivered += 1
        return True

    def close(self):
        pass


def build(rate_mbps: float):
    from p4.v1 import p4runtime_pb2

    from testbed.control.p4info_index import P4InfoIndex
    from testbed.control.p4runtime_client import encode_table_entry
    from testbed.control.plan import plan_fabric
    from testbed.p4model.clock import ManualClock
    from testbed.p4model.control_plane import ControlPlane
    from testbed.p4model.fabric.loop import FabricLoop
    from testbed.p4model.frontend import load_program
    from testbed.p4model.p4info import generate
    from testbed.p4model.pipeline import Pipeline
    from testbed.p4model.switch.loop import Switch
    from testbed.scenario import parse_scenario

    scenario = parse_scenario(SCENARIO % rate_mbps, "fabric_bench.yaml")
    topology = scenario.topo
    plans = plan_fabric(topology, scenario)
    ir = load_program(REPO / "p4src" / "fabric.p4")
    p4info = generate(ir)
    index = P4InfoIndex(p4info)
    clock = ManualClock()
    switches = {}
    for name in topology.switches:
        host_ports = {p.number: HostPort(p.number, f"{name}-eth{p.number}") for p in topology.ports(name)
                      if p.tier == "host"}
        memory = {p.number: f"{name}-eth{p.number}" for p in topology.ports(name) if p.tier != "host"}
        switch = Switch(host_ports, clock=clock, cpu_port=255, memory_ports=memory,
                        priority_queues=scenario.switch.priority_queues)
        pipeline = Pipeline(ir, clock=clock, seed=1)
        control = ControlPlane(pipeline, p4info)
        for spec in plans[name].entries:
            update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY if spec.is_default
                                          else p4runtime_pb2.Update.INSERT)
            update.entity.table_entry.CopyFrom(encode_table_entry(index, spec))
            control.write(update)
        switch.install(SimpleNamespace(pipeline=pipeline))
        switch.tm_commands.apply_all(plans[name].tm_commands)
        switches[name] = switch
    loop = FabricLoop(switches, clock)
    for link in topology.links:
        if link.tier != "host":
            loop.connect(link.a, link.a_port, link.b, link.b_port)
    return scenario, topology, switches, loop, clock


def senders(scenario, topology):
    """(edge switch, its port, frames cycling the entropy) per host, to a partner in another pod."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw, raw

    from testbed.host.scapy_cell import Cell

    hosts = topology.hosts
    out = []
    for i, src in enumerate(hosts):
        dst = hosts[(i + len(hosts) // 2) % len(hosts)]
        port = topology.ports(src)[0]
        tor_port = topology.port(port.peer, port.peer_port)
        frames = [raw(Ether(src=port.mac, dst=tor_port.mac)
                      / IP(src=topology.node(src).ip, dst=topology.node(dst).ip, tos=2)
                      / UDP(sport=50000 + i, dport=4793)
                      / Cell(type=0, entropy=e, flow_id=i + 1, msg_id=1, aux=scenario.fabric.cell_size)
                      / Raw(bytes(scenario.fabric.cell_size)))
                  for e in range(scenario.fabric.entropy_values)]
        out.append((port.peer, port.peer_port, frames))
    return out


def drive(rate_mbps: float = RATE_MBPS, model_time_s: float = MODEL_TIME_S) -> dict:
    scenario, topology, switches, loop, clock = build(rate_mbps)
    flows = senders(scenario, topology)
    gap_ns = int(len(flows[0][2][0]) * 8e3 / rate_mbps)  # one cell's time on the host link
    end_ns = int(model_time_s * 1e9)
    sent = 0
    started = time.process_time()
    now = 0
    while now < end_ns:
        for k, (edge, port, frames) in enumerate(flows):
            switch = switches[edge]
            switch.receive_frames(port, (frames[sent // len(flows) % len(frames)],), now)
            loop.touched.add(switch)
            sent += 1
        nxt = now + gap_ns
        while True:  # every event before the next injection, in model time
            loop.deliver_due(now)
            loop.service_touched(now)
            heap_next = loop._heap[0][0] if loop._heap else None
            if heap_next is None or heap_next >= nxt:
                break
            now = max(now, heap_next)
            clock.set_ns(now)
        now = nxt
        clock.set_ns(now)
    drain_until = now + 200_000_000
    while loop._heap and now < drain_until:
        now = max(now, loop._heap[0][0])
        clock.set_ns(now)
        loop.deliver_due(now)
        loop.service_touched(now)
    cpu = time.process_time() - started
    hops = sum(s.tm.stats()["totals"]["enqueued"] for s in switches.values())
    delivered = sum(p.delivered for s in switches.values() for p in s.ports.values())
    return {"sent": sent, "delivered": delivered, "cell_hops": hops, "cpu_s": cpu,
            "us_per_cell_hop": cpu * 1e6 / hops if hops else None}


def run() -> list[str]:
    r = drive()
    if r["delivered"] != r["sent"]:
        raise AssertionError(f"{r['sent']} cells sent but {r['delivered']} delivered")
    return [f"k=4 fat-tree, 20 switches in one fabric loop, spray_rr_entropy, 16 hosts at {RATE_MBPS} Mbit/s "
            f"for {MODEL_TIME_S} s of model time: {r['cell_hops']:,} cell-hops, every one of {r['sent']:,} "
            f"cells delivered",
            f"fabric loop CPU per cell-hop (pipeline, traffic manager, hand-off; no ports, no wake-ups): "
            f"{r['us_per_cell_hop']:.1f} us"]
