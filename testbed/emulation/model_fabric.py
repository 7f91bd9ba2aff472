"""A planned fabric in one FabricLoop, driven in model time: no Mininet, no ports, no syscalls.

Why: the fabric loop's benchmark and the tests of fabric-wide behaviour (PFC, path choice under
load) need the real pieces (fabric.p4 with the controller's plan, every switch's traffic
manager, cables in memory) without a network: every host port is a stand-in that keeps what
the fabric delivers to it and obeys the PFC frames its ToR sends, as a host NIC does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from testbed.cells import pfc
from testbed.cells.wire import CELL_UDP_PORT

REPO = Path(__file__).resolve().parents[2]


class HostPort:
    """A host-facing port of a switch: counts the frames delivered to the host and keeps
    the pause state its ToR's PFC frames set (the host's NIC)."""

    def __init__(self, number: int, iface: str) -> None:
        self.number, self.iface, self.fd, self.delivered = number, iface, None, 0
        self.pause_frames = 0
        self.paused = False

    def send(self, data: bytes) -> bool:
        if pfc.is_pause_frame(data):
            self.pause_frames += 1
            self.paused = any(quanta for priority, quanta in pfc.parse(data) if priority == 0)
        else:
            self.delivered += 1
        return True

    def close(self) -> None:
        pass


@dataclass
class ModelFabric:
    scenario: object
    topology: object
    switches: dict
    loop: object
    clock: object
    host_ports: dict = field(default_factory=dict)  # host name -> its ToR's HostPort

    def tor_of(self, host: str) -> tuple[str, int]:
        port = self.topology.ports(host)[0]
        return port.peer, port.peer_port

    def run_until(self, end_ns: int, now_ns: int) -> int:
        """Every event up to `end_ns` in time order; returns the new model time."""
        loop, clock = self.loop, self.clock
        while True:
            loop.deliver_due(now_ns)
            loop.service_touched(now_ns)
            due = loop.next_due_ns()
            if due is None or due > end_ns:
                break
            now_ns = max(now_ns, due)
            clock.set_ns(now_ns)
        clock.set_ns(max(now_ns, end_ns))
        return max(now_ns, end_ns)

    def next_due_ns(self) -> int | None:
        """The earliest pending event (a frame in flight or a switch's own), None when idle."""
        return self.loop.next_due_ns()

    def inject(self, host: str, frame: bytes, now_ns: int) -> None:
        """`host` puts `frame` on its link; it reaches the ToR now (the caller models the wire)."""
        switch_name, port = self.tor_of(host)
        switch = self.switches[switch_name]
        switch.receive_frames(port, (frame,), now_ns)
        self.loop.touched.add(switch)

    def delivered(self) -> int:
        return sum(p.delivered for s in self.switches.values() for p in s.ports.values())

    def tm_totals(self) -> dict:
        totals: dict = {}
        for s in self.switches.values():
            for key, value in s.tm.stats()["totals"].items():
                totals[key] = totals.get(key, 0) + value
        return totals


class EngineHostPort:
    """A host's end of its ToR port on the native engine: what HostPort counts, read from it."""

    def __init__(self, engine, host: int) -> None:
        self.engine, self.host = engine, host

    @property
    def delivered(self) -> int:
        return self.engine.delivered(self.host)

    @property
    def paused(self) -> bool:
        return self.engine.host_pause(self.host)[0]

    @property
    def pause_frames(self) -> int:
        return self.engine.host_pause(self.host)[1]


@dataclass
class NativeModelFabric:
    """The same fabric on the native engine: every switch's pipeline in C and every packet moved by
    engine.c (testbed/p4model/engine); the Switch objects keep the configuration they were given."""

    scenario: object
    topology: object
    switches: dict
    engine: object
    index: dict  # switch name -> its index in the engine
    hosts: dict  # host name -> its first NIC port's index in the engine
    host_ports: dict = field(default_factory=dict)  # host name -> EngineHostPort
    nic_index: dict = field(default_factory=dict)  # (host, its port number) -> the port's index in the engine
    native_refused: str | None = None  # why the native back end refused the program (its switches run Python)
    plans: dict = field(default_factory=dict)  # switch name -> the controller's SwitchPlan it was written
    controls: dict = field(default_factory=dict)  # switch name -> its in-process P4Runtime ControlPlane
    configured: object = None  # plan -> (a new pipeline with the plan written, its ControlPlane): a restart
    p4info_index: object = None  # the program's P4InfoIndex (table entries to P4Runtime entities)

    def tor_of(self, host: str) -> tuple[str, int]:
        port = self.topology.ports(host)[0]
        return port.peer, port.peer_port

    def run_until(self, end_ns: int, now_ns: int) -> int:
        self.engine.run(end_ns)
        return max(now_ns, end_ns)

    def next_due_ns(self) -> int | None:
        return self.engine.next_ns()

    def inject(self, host: str, frame: bytes, now_ns: int) -> None:
        switch_name, port = self.tor_of(host)
        self.engine.inject(self.index[switch_name], port, frame, now_ns)

    def delivered(self) -> int:
        return sum(self.engine.delivered(i) for i in self.hosts.values())

    def tm_totals(self) -> dict:
        totals: dict = {}
        for s in self.switches.values():  # their TMs read the engine (EngineTrafficManager)
            for key, value in s.tm.stats()["totals"].items():
                totals[key] = totals.get(key, 0) + value
        return totals


def build(scenario_text: str, name: str = "model_fabric.yaml", backend: str = "python"):
    """Every switch of the scenario's topology with fabric.p4, the controller's plan pushed over
    the control plane's own write path, and every fabric cable in memory, on a manual clock.
    backend "native": the pipelines on the native back end and the packets in the native engine
    (a NativeModelFabric); raises NativeUnsupported / NativeBuildError in one line when the program
    does not lower."""
    from testbed.scenario import parse_scenario

    return build_scenario(parse_scenario(scenario_text, name), backend)


def build_scenario(scenario, backend: str = "python", seed: int = 1):
    """`build` of a parsed Scenario (its variant's own settings), the pipelines seeded with `seed`.
    backend "native": every switch in the native engine, its program built by the native back end;
    a program that back end refuses runs on the Python target in the engine's switch slots
    (p4model/engine/python_slot.py), and the fabric's `native_refused` says why."""
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
    from testbed.p4model.backend.native.objects import writes_batched
    from testbed.p4model.switch.loop import Switch

    topology = scenario.topo
    plans = plan_fabric(topology, scenario)
    ir = load_program(REPO / scenario.switch.program)
    p4info = generate(ir)
    index = P4InfoIndex(p4info)
    clock = ManualClock()
    refused: list[str] = []  # why the native back end refused the program (then every switch is Python)

    def new_pipeline():
        if backend == "native" and not refused:
            from testbed.p4model.backend.native import NativeBuildError, NativeUnsupported
            from testbed.p4model.backend.native.binding import NativePipeline

            try:
                return NativePipeline(ir, clock=clock, seed=seed)
            except (NativeUnsupported, NativeBuildError) as error:
                refused.append(str(error))  # the engine runs the Python target in its slots (python_slot.py)
        return Pipeline(ir, clock=clock, seed=seed)

    def configured(plan):
        """A new pipeline with `plan` written through its in-process P4Runtime ControlPlane."""
        pipeline = new_pipeline()
        control = ControlPlane(pipeline, p4info)
        with writes_batched(pipeline.tables.values()):  # no packet moves yet: one copy into C per table
            for spec in plan.entries:
                update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY if spec.is_default
                                              else p4runtime_pb2.Update.INSERT)
                encode_table_entry(index, spec, update.entity.table_entry)
                control.write(update)
        for meter in plan.meters:  # the credit meters, as apply.configure_switch writes them
            pipeline.meters[meter.meter].set_config(meter.index, meter.cir, meter.cburst, meter.pir, meter.pburst)
        return pipeline, control

    switches, host_ports, controls = {}, {}, {}
    for switch_name in topology.switches:
        ports = {}
        for p in topology.ports(switch_name):
            if p.tier == "host":
                ports[p.number] = host_ports[p.peer] = HostPort(p.number, f"{switch_name}-eth{p.number}")
        memory = {p.number: f"{switch_name}-eth{p.number}" for p in topology.ports(switch_name) if p.tier != "host"}
        switch = Switch(ports, clock=clock, cpu_port=255, memory_ports=memory,
                        priority_queues=scenario.switch.priority_queues)
        pipeline, control = configured(plans[switch_name])
        switch.install(SimpleNamespace(pipeline=pipeline))
        switch.tm_commands.apply_all(plans[switch_name].tm_commands)
        switches[switch_name] = switch
        controls[switch_name] = control
    if backend == "native":
        for switch in switches.values():
            # the engine moves their packets in model time: no switch runs its own event loop, so
            # its wake-up pipe and command socketpair close now (a process that builds many
            # fabrics, as tune and diagnose do, would run out of descriptors); the Switch objects
            # keep their configuration, their TM commands and install() for a restart
            switch.close()
        fabric = _native(scenario, topology, switches, seed)
        fabric.plans, fabric.controls, fabric.configured = plans, controls, configured
        fabric.p4info_index = index
        fabric.native_refused = refused[0] if refused else None
        return fabric
    loop = FabricLoop(switches, clock)
    for link in topology.links:
        if link.tier != "host":
            loop.connect(link.a, link.a_port, link.b, link.b_port)
    return ModelFabric(scenario, topology, switches, loop, clock, host_ports)


def _native(scenario, topology, switches: dict, seed: int = 1) -> NativeModelFabric:
    from testbed.p4model.engine import NativeFabric
    from testbed.p4model.engine.binding import SwitchStats
    from testbed.p4model.engine.traffic_manager import EngineTrafficManager

    nic_ports = [(host, port) for host in topology.hosts for port in topology.ports(host)]
    engine = NativeFabric(seed=seed, hosts=len(nic_ports))
    index = {name: engine.add_switch(s.datapath.pipeline, s.tm, s.drop_port, name) for name, s in switches.items()}
    for name, s in switches.items():
        s.tm.__class__ = EngineTrafficManager
        s.tm.bind(engine, index[name])
        s.stats = SwitchStats(engine, index[name])
    hosts, nic_index = {}, {}
    for i, (host, port) in enumerate(nic_ports):  # every NIC port its own host index in the engine
        hosts.setdefault(host, i)
        nic_index[(host, port.number)] = i
        engine.host_port(index[port.peer], port.peer_port, i)
    for link in topology.links:
        if link.tier != "host":
            engine.cable(index[link.a], link.a_port, index[link.b], link.b_port)
    return NativeModelFabric(scenario, topology, switches, engine, index, hosts,
                             {host: EngineHostPort(engine, i) for host, i in hosts.items()}, nic_index)


def data_cells(fabric: ModelFabric, src: str, dst: str, flow_id: int, count: int | None = None) -> list[bytes]:
    """DATA cell frames from `src` to `dst`, one per entropy value (or `count`, cycling them)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw, raw

    from testbed.cells.scapy_cell import Cell

    topology, cell_size = fabric.topology, fabric.scenario.fabric.cell_size
    port = topology.ports(src)[0]
    tor_port = topology.port(port.peer, port.peer_port)
    values = fabric.scenario.fabric.entropy_values
    return [raw(Ether(src=port.mac, dst=tor_port.mac)
                / IP(src=topology.node(src).ip, dst=topology.node(dst).ip, tos=2)
                / UDP(sport=50000 + flow_id, dport=CELL_UDP_PORT)
                / Cell(type=0, entropy=e % values, flow_id=flow_id, msg_id=1, psn=e, aux=cell_size)
                / Raw(bytes(cell_size)))
            for e in range(count if count is not None else values)]
