"""The simulator's network with the scenario's own P4 program in every switch.

Model.  The switches are the emulation's: `switch.program` built by the native
back end, its tables written by the controller's plan through in-process
P4Runtime entities, the traffic manager set by the plan's commands from the
scenario, and every fabric cable and ToR->host link inside the native engine
(`emulation.model_fabric.build_scenario`, `p4model.engine`).  The engine moves
every cell hop in C on the model clock (integer nanoseconds).

The hosts (program_host.py) are the real sans-IO Endpoints and WorkloadRunners
on the same clock, as in `sim.py`.  They exchange the frames a UDP agent puts
on the wire; a host's NIC port is a wire of the host link's rate and delay (the
agent's link model, `nic.on_wire`), and the GPUs of a server talk over their
direct local channel, a wire of `links.local`.

The rule that joins the two clocks: a host that hears a frame at t answers with
frames that reach the fabric no sooner than t + `window_ns` (its link's delay
plus one minimum frame's serialisation).  So the engine runs, in one call, up to
the hosts' next event plus that window, stopping at the first delivery plus the
window (`NativeFabric.run_window`); the hosts then take every event up to where
the engine stopped, in time order, and inject what they send.  Python touches a
frame only where a host sends or receives it.
"""

from __future__ import annotations

import heapq
import math
import socket
import time
from typing import Callable

from testbed.cells import wire
from testbed.errors import TestbedError
from testbed.host.app import WorkloadRunner
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint
from testbed.host.message import MessageSpec
from testbed.host.nic import NicPorts
from testbed.host.pfc import PauseGate
from testbed.simulation.program_host import (DELIVER, FOREVER, LOCAL, LOOK, MIN_FRAME_BYTES, WAKE, EventList,
                                             ProgramHost, Wire, mac_bytes, ser_ns)

class ProgramNetworkError(TestbedError):
    """A run the program network cannot carry on (one line)."""


class ProgramNetwork:
    """Hosts on the virtual clock around the native engine's fabric (see the module docstring)."""

    def __init__(self, scenario, cfg: TransportConfig, nic_cfg: Callable[[int], TransportConfig],
                 local_cfg: TransportConfig | None = None, nic_choice: str = "flow", grid_s: float = 0.1,
                 switch_seed: int | None = None) -> None:
        """`grid_s`: the engine stops at every multiple of it (the telemetry's period, which the
        sampler's times must fall on): results never depend on whether a sampler watches.
        `switch_seed`: the seed of the switches' own random draws (the program's random source, the
        traffic managers' losses; default the scenario's), the hosts' flows and payloads keeping the
        scenario's."""
        from testbed.emulation.model_fabric import build_scenario

        self.scenario = scenario
        self.seed = scenario.seed
        self.fabric = build_scenario(scenario, backend="native",
                                     seed=scenario.seed if switch_seed is None else switch_seed)
        self.engine = self.fabric.engine
        self.engine.keep(True)
        topo = self.topo = scenario.topo
        self.ip_of = {h: topo.node(h).ip for h in topo.hosts}
        self.ip_bytes = {h: socket.inet_aton(ip) for h, ip in self.ip_of.items()}
        self.name_of_ip = {b: h for h, b in self.ip_bytes.items()}
        host_link = scenario.links.host
        rate, delay_ns = host_link.rate_mbps * 1e6, round(host_link.delay_us * 1e3)
        self.window_ns = max(1, delay_ns + ser_ns(MIN_FRAME_BYTES, rate))
        self.grid_ns = max(1, round(grid_s * 1e9))
        self.hosts: dict[str, ProgramHost] = {}
        self.by_nic: list[tuple[ProgramHost, int]] = [None] * len(self.fabric.nic_index)  # engine index -> host, port
        self.clock = EventList()  # the hosts' events and the frames they sent (program_host.py)
        self._observer_seq = 0
        self.cut_data = 0  # DATA cells on their way to a host when its cable was cut (cut_in_flight)
        self._observers: list = []  # (time, seq, fn): fn(now_ns) -> its next time or None (every())
        for index, name in enumerate(topo.hosts):
            ports = topo.ports(name)
            host_cfg = nic_cfg(len(ports)) if len(ports) > 1 else cfg
            host = self.hosts[name] = ProgramHost(self, name, index, self.ip_of[name],
                                                  Endpoint(name, host_cfg, wire_from_schedule=False))
            for i, p in enumerate(ports):
                tor = self.fabric.index[p.peer]
                eth = mac_bytes(topo.port(p.peer, p.peer_port).mac) + mac_bytes(p.mac) + b"\x08\x00"
                gate = PauseGate(rate) if scenario.fabric.pfc.enabled else None
                host.wires.append(Wire(tor, p.peer_port, rate, delay_ns, eth, gate))
                host.gated = gate is not None
                host.port_tx.append(0)
                self.by_nic[self.fabric.nic_index[(name, p.number)]] = (host, i)
            if len(ports) > 1:
                host.nic = NicPorts([f"{name}-eth{p.number - 1}" for p in ports], rate, nic_choice,
                                    silence_s=4 * host_cfg.rtt_s)
                if host.nic.silence_s is not None:
                    host.nic_sample_ns = round(max(0.01, 8 * host_cfg.data_wire_bytes * 8 / rate) * 1e9)
                    self.push(host.nic_sample_ns, LOOK, host, None)
        local = scenario.links.local
        for link in topo.local_links:
            if local is None or local_cfg is None:
                raise ValueError("a topology with servers needs the local channel's settings")
            for a, b in ((link.a, link.b), (link.b, link.a)):
                host = self.hosts[a]
                if host.local is None:
                    host.local = Endpoint(a, local_cfg, wire_from_schedule=False)
                host.local_wires[b] = Wire(-1, -1, local.rate_mbps * 1e6, round(local.delay_us * 1e3), b"")

    @property
    def now_ns(self) -> int:
        return self.clock.now_ns

    @now_ns.setter
    def now_ns(self, value: int) -> None:
        self.clock.now_ns = value

    @property
    def events(self) -> int:
        return self.clock.events

    def push(self, t_ns: int, kind: int, target, arg) -> None:
        self.clock.push(t_ns, kind, target, arg)

    def flush(self) -> None:
        """The frames the hosts sent since the last flush enter the engine, in the order sent."""
        if self.clock.queued:
            self.engine.inject_many(*self.clock.take_outbox())

    def every(self, first_ns: int, fn: Callable[[int], int | None]) -> None:
        """Call `fn(now)` at `first_ns`, then at each time it returns, until it returns None. It sees
        every event at or before its time and none after (the engine stops there); it runs only
        while the run goes on past its time."""
        self._observer_seq += 1
        heapq.heappush(self._observers, (first_ns, self._observer_seq, fn))

    def load(self, specs: list[MessageSpec], seed: int = 1) -> None:
        for name, h in self.hosts.items():
            h.runner = WorkloadRunner(name, h.ep, specs, seed, local=h.local, local_peers=set(h.local_wires))
            self.push(0, WAKE, h, None)
            for s in specs:
                if s.src == name and s.start_us > 0:
                    self.push(round(s.start_us * 1e3), WAKE, h, None)

    def cut_in_flight(self, kind: int, keep: Callable[[object, object], bool]) -> int:
        """Forget the pending DELIVER or LOCAL events after now for which `keep(target, arg)` is
        false (frames on a cable that was just cut); how many there were."""
        now, heap = self.now_ns, self.clock.heap
        cut = [e for e in heap if e[2] == kind and e[0] > now and not keep(e[3], e[4])]
        if cut:
            heap[:] = [e for e in heap if e[2] != kind or e[0] <= now or keep(e[3], e[4])]
            heapq.heapify(heap)  # in place: the event list holds it
            self.cut_data += sum(1 for e in cut if e[2] == DELIVER and len(e[4]) > 42 and e[4][42] & 0x0F == wire.DATA)
        return len(cut)

    def finished(self) -> bool:
        return all(h.runner is None or h.runner.finished() for h in self.hosts.values())

    def run(self, until_s: float, on_progress: Callable[[int, int], None] | None = None,
            every_s: float = 0.5) -> None:
        """Every event up to `until_s` or until every workload finished; `on_progress(messages,
        cells)` at most every `every_s` of wall time and once at the end."""
        until = math.ceil(until_s * 1e9)
        events, engine, window = self.clock, self.engine, self.window_ns
        heap, run_window, take_raw, by_nic = events.heap, engine.run_window, engine.take_raw, self.by_nic
        pop, push = heapq.heappop, heapq.heappush
        clock = time.monotonic
        next_report = clock() + every_s
        rounds = 0
        observers, grid = self._observers, self.grid_ns
        python_slots = self.fabric.native_refused is not None  # switches on the Python target (python_slot.py)
        reached = self.now_ns
        while True:
            first = heap[0][0] if heap else FOREVER
            horizon = until if first >= until else min(first + window - 1, until)
            # the engine always stops on the grid (the telemetry's period), sampled or not: how its
            # work is cut into calls, and so the order of ties, never depends on who watches
            horizon = min(horizon, (reached // grid + 1) * grid)
            if observers and observers[0][0] < horizon:
                horizon = observers[0][0]
            self.flush()
            reached = run_window(horizon, window)
            if python_slots:
                problem = engine.python_problem()
                if problem is not None:
                    raise ProgramNetworkError(problem)
            events.deliveries(take_raw())
            events.dispatch(reached, by_nic)
            if observers and observers[0][0] <= reached:
                self.flush()  # an observer reads the engine, or cuts a cable: it sees every frame sent
            while observers and observers[0][0] <= reached:
                t, seq, fn = pop(observers)
                self.now_ns = max(self.now_ns, t)
                following = fn(t)
                if following is not None:
                    push(observers, (following, seq, fn))
            if self.finished():  # every round: the end is the last event's time, whatever the rounds
                break
            rounds += 1
            if rounds % 64 == 0 and on_progress is not None and clock() >= next_report:
                next_report = clock() + every_s
                on_progress(*self.progress_counts())
            if reached >= until or (not heap and not events.queued and engine.next_ns() is None and not observers):
                break  # an observer may still have work to wake (a stalled host's resume)
        self.flush()
        if on_progress is not None:
            on_progress(*self.progress_counts())

    @property
    def now_s(self) -> float:
        return self.now_ns / 1e9

    def progress_counts(self) -> tuple[int, int]:
        """(messages delivered, DATA cells passed on in order) over every host and local channel."""
        messages = sum(len(h.runner.received) for h in self.hosts.values() if h.runner is not None)
        cells = sum(h.ep.in_order_cells + (h.local.in_order_cells if h.local is not None else 0)
                    for h in self.hosts.values())
        return messages, cells

    def records(self) -> list[dict]:
        return [r for h in self.hosts.values() if h.runner for r in h.runner.records]

    # -- what the run's result.json says of the switches ---------------------------------------
    def switch_figures(self) -> dict:
        """Queue drops (all packets, and DATA cells), the deepest queue in packets, cells lost on
        links and PFC frames sent, summed over every switch port from the engine's counters; the
        program's own drops by reason (its drop counters, read from its memory)."""
        from testbed.p4model.telemetry import DROP_COUNTERS, DROP_REASONS

        engine, fabric = self.engine, self.fabric
        prios = self.scenario.switch.priority_queues
        queue_drops = data_drops = deepest = link_lost = pfc_frames = 0
        program_drops: dict[str, int] = {}
        for name, index in fabric.index.items():
            for p in self.topo.ports(name):
                for prio in range(prios):
                    q = engine.queue_stats(index, p.number, prio)
                    if q is None:
                        continue
                    queue_drops += q["dropped_full"]
                    data_drops += q["class_drops"][wire.DATA]
                    deepest = max(deepest, q["max_depth"])
                port = engine.port_stats(index, p.number)
                if port is not None:
                    link_lost += sum(port["lost_by_class"])
                    pfc_frames += port["pfc_xoff_sent"] + port["pfc_xon_sent"]
            counters = getattr(fabric.switches[name].datapath.pipeline, "counters", None) or {}
            for counter_name in DROP_COUNTERS:
                counter = counters.get(counter_name)
                for i in range(counter.size if counter is not None else 0):
                    if counter.packets[i]:
                        reason = DROP_REASONS.get(i, f"reason_{i}")
                        program_drops[reason] = program_drops.get(reason, 0) + int(counter.packets[i])
        return {"switch_queue_drops": queue_drops, "switch_data_drops": data_drops, "max_queue_packets": deepest,
                "lost_on_lossy_links": link_lost, "pause_frames_sent": pfc_frames,
                "program_drops": program_drops, "tenants": self.tenant_figures()}

    def tenant_figures(self) -> dict:
        """With tenants: per tenant id, the packets and bytes its hosts' ToRs admitted and the packets
        the tenant checks dropped (fabric.p4's tenant_packets and tenant_drops, summed over the
        switches; id 0: unbound ports and packets carrying no tenant); without, empty."""
        if not self.scenario.tenants:
            return {}
        out: dict[int, dict[str, int]] = {}
        for switch in self.fabric.switches.values():
            counters = getattr(switch.datapath.pipeline, "counters", None) or {}
            admitted, dropped = counters.get("FabricIngress.tenant_packets"), counters.get("FabricIngress.tenant_drops")
            for i in range(admitted.size if admitted is not None else 0):
                if admitted.packets[i] or dropped.packets[i]:
                    entry = out.setdefault(i, {"admitted_packets": 0, "admitted_bytes": 0, "dropped_packets": 0})
                    entry["admitted_packets"] += int(admitted.packets[i])
                    entry["admitted_bytes"] += int(admitted.bytes[i])
                    entry["dropped_packets"] += int(dropped.packets[i])
        return {tenant: out[tenant] for tenant in sorted(out)}

    def data_cells(self) -> dict:
        """Conservation of DATA cells over the fabric (sim.Network.data_cells' keys): what the hosts
        put on their NIC links is received by hosts, lost at a switch's full queue or on a lossy
        cable, or still in flight at the end (on a cable, queued, or delivered to a host after the
        end), or, with `fabric.tenant_isolation: meters`, dropped by a tenant's meter (the program
        counts those DATA cells apart). A cell the program dropped otherwise (its drop counters,
        `program_drops` in result.json, count every type), or that a stopped switch flushed, is
        left in `unaccounted`."""
        engine, fabric = self.engine, self.fabric
        prios = self.scenario.switch.priority_queues
        queue_drops = lossy = 0
        for name, index in fabric.index.items():
            for p in self.topo.ports(name):
                for prio in range(prios):
                    q = engine.queue_stats(index, p.number, prio)
                    queue_drops += q["class_drops"][wire.DATA] if q is not None else 0
                port = engine.port_stats(index, p.number)
                lossy += port["lost_by_class"][wire.DATA] if port is not None else 0
        cables, queued, cut = engine.in_flight(wire.DATA)
        cut += sum(w.data_lost for h in self.hosts.values() for w in h.wires)
        cut += self.cut_data
        undelivered = sum(1 for t, _, kind, _, frame in self.clock.heap if kind == DELIVER
                          and len(frame) > 42 and frame[42] & 0x0F == wire.DATA)
        sent = sum(h.data_tx for h in self.hosts.values())
        received = sum(h.data_rx for h in self.hosts.values())
        lost = {"switch_queue_drops": queue_drops, "cut_links": cut, "lossy_links": lossy, "stopped_switches": 0,
                "no_route": 0}
        if self.scenario.fabric.tenant_isolation == "meters":   # DATA cells over a tenant's rate
            lost["tenant_meters"] = self.switch_figures()["program_drops"].get("tenant_over_rate_data", 0)
        in_flight = cables + queued + undelivered
        return {"sent": sent, "received": received, "lost": lost, "lost_total": sum(lost.values()),
                "in_flight_at_end": in_flight, "unaccounted": sent - received - sum(lost.values()) - in_flight}

    def cell_hops(self) -> int:
        """Frames the engine moved across a switch (its cell-hop count)."""
        return self.engine.totals()["cell_hops"]
