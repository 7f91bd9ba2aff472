"""The simulator's network with the scenario's own P4 program in every switch.

Model.  The switches are the emulation's: `switch.program` built by the native
back end, its tables written by the controller's plan through in-process
P4Runtime entities, the traffic manager set by the plan's commands from the
scenario, and every fabric cable and ToR->host link inside the native engine
(`emulation.model_fabric.build_scenario`, `p4model.engine`).  The engine moves
every cell hop in C on the model clock (integer nanoseconds).

The hosts are the real sans-IO Endpoints and WorkloadRunners on the same
clock, as in `sim.py`.  They exchange the frames a UDP agent puts on the wire:
Ethernet, IPv4 (ECT(0) for DATA, the header checksum right), UDP from the
flow's source port (`cells.flowports`, chosen as the agent chooses it) to the
cell port, then the cell.  A host's NIC port is a wire of the host link's rate
and delay: a frame starts when the port is free, and reaches its ToR one
serialisation and one delay later (the agent's link model, `nic.on_wire`).
The GPUs of a server talk over their direct local channel, a wire of
`links.local` modelled here.

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
import struct
import time
from typing import Callable

from testbed.cells import wire
from testbed.cells.flowports import FLOW_PORT_BASE, FLOW_PORTS, flow_source_port
from testbed.host.app import WorkloadRunner
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint, channel_of_datagram
from testbed.host.nic import NicPorts
from testbed.host.pfc import PauseGate
from testbed.host.message import MessageSpec
from testbed.errors import TestbedError

ECT0 = 2  # the IPv4 ECN field of an ECN-capable (DATA) cell
_IP = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_TEN_WORDS = struct.Struct("!10H")
MIN_FRAME_BYTES = 64  # the shortest Ethernet frame: the least one serialisation can take
FOREVER = 1 << 62
WAKE, DELIVER, LOCAL, LOOK = 0, 1, 2, 3


def _mac(text: str) -> bytes:
    return bytes(int(x, 16) for x in text.split(":"))


def ser_ns(nbytes: int, rate_bps: float) -> int:
    """Nanoseconds to serialise `nbytes` at `rate_bps` (engine.c's rounding: up)."""
    return math.ceil(nbytes * 8e9 / rate_bps)


class Wire:
    """One direction of a host's cable: a NIC port to its ToR port (or a local channel to a
    peer GPU), free again at `free_ns`; on a lossless fabric, the port's PFC gate (host/pfc.py:
    DATA held while the ToR pauses it, in order). While `down` (a cut cable, program_faults.py)
    what it sends still takes its time on the wire and is lost (`lost` counts it)."""

    __slots__ = ("switch", "port", "rate_bps", "delay_ns", "free_ns", "eth", "gate", "down", "lost", "data_lost")

    def __init__(self, switch: int, port: int, rate_bps: float, delay_ns: int, eth: bytes,
                 gate: PauseGate | None = None) -> None:
        self.switch, self.port, self.rate_bps, self.delay_ns = switch, port, rate_bps, delay_ns
        self.free_ns, self.eth, self.gate = 0, eth, gate
        self.down, self.lost, self.data_lost = False, 0, 0

    def send(self, now_ns: int, wire_bytes: int) -> int:
        """The frame starts when the wire is free; when its last bit reaches the far end."""
        begin = now_ns if now_ns > self.free_ns else self.free_ns
        self.free_ns = begin + ser_ns(wire_bytes, self.rate_bps)
        return self.free_ns + self.delay_ns


class ProgramHost:
    """A host on the program network: its Endpoint, its NIC's wires and its workload."""

    def __init__(self, net: "ProgramNetwork", name: str, index: int, ip: str, ep: Endpoint) -> None:
        self.net, self.name, self.index, self.ep = net, name, index, ep
        self.ip = socket.inet_aton(ip)
        self.wires: list[Wire] = []
        self.nic: NicPorts | None = None
        self.local: Endpoint | None = None
        self.local_wires: dict[str, Wire] = {}
        self.runner: WorkloadRunner | None = None
        self.wake_ns: int | None = None
        self._sport: dict[tuple[str, int], int] = {}
        self._headers: dict[tuple, bytes] = {}
        self.gated = False  # lossless: its NIC ports obey the ToR's pause frames
        self.rx_not_cells = 0  # frames delivered that are no cell for this host (PFC, not IPv4/UDP)
        self.port_tx: list[int] = []  # frames sent per NIC port
        self.data_tx = self.data_rx = 0  # DATA cells put on the NIC's wires, and delivered by the ToRs
        self.tx_bytes = self.rx_bytes = 0  # frames on the NIC's ports, both ways
        self.nic_sample_ns = 0
        # agent_stall (program_faults.py): the host stops whole; what arrives meanwhile waits here
        # as (arrival ns, NIC port or None for a local channel, frame or (src, data, tos))
        self.stalled = False
        self.held: list[tuple[int, int | None, object]] = []

    def source_port(self, dst: str, channel: int) -> int:
        """The flow's UDP source port, as the agent binds it (flowports, the next free one)."""
        sport = self._sport.get((dst, channel))
        if sport is None:
            taken = set(self._sport.values()) | {wire.CELL_UDP_PORT}
            first = flow_source_port(self.net.seed, socket.inet_ntoa(self.ip), self.net.ip_of[dst], channel)
            for step in range(FLOW_PORTS):
                sport = FLOW_PORT_BASE + (first - FLOW_PORT_BASE + step) % FLOW_PORTS
                if sport not in taken:
                    break
            self._sport[(dst, channel)] = sport
        return sport

    def frame(self, port: int, dst: str, sport: int, tos: int, data: bytes) -> bytes:
        """Ethernet + IPv4 + UDP + `data`, as the kernel sends a datagram from a flow's socket
        (identification 0, don't-fragment, TTL 64, UDP checksum 0)."""
        key = (port, dst, sport, tos, len(data))
        head = self._headers.get(key)
        if head is None:
            udp_len = 8 + len(data)
            ip = _IP.pack(0x45, tos, 20 + udp_len, 0, 0x4000, 64, 17, 0, self.ip, self.net.ip_bytes[dst])
            total = sum(_TEN_WORDS.unpack(ip))
            while total >> 16:
                total = (total & 0xFFFF) + (total >> 16)
            ip = ip[:10] + struct.pack("!H", ~total & 0xFFFF) + ip[12:]
            head = self._headers[key] = (self.wires[port].eth + ip
                                         + _UDP.pack(sport, wire.CELL_UDP_PORT, udp_len, 0))
        return head + data

    def kick(self, now_ns: int) -> None:
        """Poll the workload and the transport at `now_ns`, put what they release on the wires,
        and schedule the next wake-up (never at the same instant: the host always moves on)."""
        if self.stalled:
            return
        net = self.net
        now = now_ns / 1e9
        if self.runner is not None:
            self.runner.poll(now)
        for tx in self.ep.poll(now):
            data, dst = tx.data, tx.dst
            channel = channel_of_datagram(data)
            sport = self.source_port(dst, channel)
            port = 0
            if self.nic is not None:
                port, data = self.nic.choose(data, sport, channel)
                self.nic.sent(port, now, data[0] & 0x0F)
            frame = self.frame(port, dst, sport, ECT0 if tx.ect else 0, data)
            gate = self.wires[port].gate
            if gate is not None and not gate.admit(data[0] & 0x0F, now, frame, now):
                continue  # paused, or behind held DATA: the gate keeps it in order
            self._put_on_wire(port, frame, now_ns, data[0] & 0x0F == wire.DATA)
        if self.gated:
            self._release_held(now_ns)
        if self.local is not None:
            for tx in self.local.poll(now):
                w = self.local_wires[tx.dst]
                at = w.send(now_ns, len(tx.data) + wire.FRAME_OVERHEAD)
                if w.down:
                    w.lost += 1
                    continue
                net.push(at, LOCAL, self.net.hosts[tx.dst], (self.name, tx.data, ECT0 if tx.ect else 0))
        times = [t for t in (self.ep.polled_deadline, self.local.polled_deadline if self.local else None,
                             self.runner.next_deadline(now) if self.runner else None) if t is not None]
        if self.gated:
            times += [t for w in self.wires if w.gate is not None
                      for t in (w.gate.wake_at(w.free_ns / 1e9),) if t is not None]
        if not times:
            return
        t = math.ceil(min(times) * 1e9)
        if t <= now_ns:
            t = now_ns + 1
        if self.wake_ns is not None and now_ns <= self.wake_ns <= t:
            return
        self.wake_ns = t
        net.push(t, WAKE, self, t)

    def _release_held(self, now_ns: int) -> None:
        """Each gate's held DATA that may start by now goes on its wire, one at a time."""
        for i, w in enumerate(self.wires):
            gate = w.gate
            while gate is not None:
                start = gate.next_start(now_ns / 1e9, w.free_ns / 1e9)
                if start is None:
                    break
                frame = gate.pop()
                self._put_on_wire(i, frame, max(math.ceil(start * 1e9), now_ns), frame[42] & 0x0F == wire.DATA)

    def _put_on_wire(self, port: int, frame: bytes, start_ns: int, is_data: bool) -> None:
        """Send `frame` on NIC port `port`'s wire from `start_ns` (after what it still serialises):
        into the ToR, or counted lost when the cable is down."""
        w = self.wires[port]
        at = w.send(start_ns, len(frame))
        self.data_tx += is_data
        if w.down:
            w.lost += 1
            w.data_lost += is_data
        else:
            self.net.engine.inject(w.switch, w.port, frame, at)
        self.port_tx[port] += 1
        self.tx_bytes += len(frame)

    def receive(self, now_ns: int, port: int, frame: bytes, arrived_ns: int | None = None) -> None:
        """A frame the fabric delivered to NIC port `port`: the UDP payload to the transport (a
        stalled host keeps it for its resume, which passes it on with its arrival time)."""
        if self.stalled:
            self.held.append((now_ns, port, frame))
            return
        self.rx_bytes += len(frame)
        if self.gated and frame[12:14] == b"\x88\x08":  # the ToR's PFC pause frame
            self.wires[port].gate.pause.on_frame(frame, now_ns / 1e9)
            self.kick(now_ns)
            return
        if len(frame) < 42 or frame[12] != 0x08 or frame[13] != 0x00:
            self.rx_not_cells += 1  # a PFC pause frame or anything not IPv4
            return
        ihl = (frame[14] & 0x0F) * 4
        udp = 14 + ihl
        if frame[23] != 17 or (frame[udp + 2] << 8 | frame[udp + 3]) != wire.CELL_UDP_PORT:
            self.rx_not_cells += 1
            return
        src = self.net.name_of_ip.get(frame[26:30])
        if src is None:
            self.rx_not_cells += 1
            return
        udp_len = frame[udp + 4] << 8 | frame[udp + 5]
        self.data_rx += frame[udp + 8] & 0x0F == wire.DATA if udp_len > 8 else 0
        now = now_ns / 1e9
        arrived = None if arrived_ns is None else arrived_ns / 1e9
        if self.nic is not None:
            self.nic.heard(port, now if arrived is None else arrived)
        self.ep.receive(now, src, frame[udp + 8:udp + udp_len], frame[15], arrived)
        if arrived_ns is None:
            self.kick(now_ns)

    def receive_local(self, now_ns: int, src: str, data: bytes, tos: int, arrived_ns: int | None = None) -> None:
        if self.stalled:
            self.held.append((now_ns, None, (src, data, tos)))
            return
        self.local.receive(now_ns / 1e9, src, data, tos, None if arrived_ns is None else arrived_ns / 1e9)
        if arrived_ns is None:
            self.kick(now_ns)

    def stall(self, stalled: bool, now_ns: int) -> None:
        """agent_stall: the whole host stops (application, transport, timers, NIC), as SIGSTOP stops
        the agent; on resume it reads what arrived meanwhile, each with its arrival time (the
        kernel's receive timestamp), and its late timers fire."""
        self.stalled = stalled
        if stalled:
            return
        held, self.held = self.held, []
        for at, port, item in held:
            if port is None:
                self.receive_local(now_ns, *item, arrived_ns=at)
            else:
                self.receive(now_ns, port, item, arrived_ns=at)
        self.kick(now_ns)

    def look_at_ports(self, now_ns: int) -> None:
        """A dual-homed NIC's periodic look at its ports (as the agent's sample and sim.py's)."""
        if not self.stalled and self.nic.check_silence(now_ns / 1e9):
            self.ep.set_link_rate(self.nic.rate_bps())
            self.kick(now_ns)
        self.net.push(now_ns + self.nic_sample_ns, LOOK, self, None)


class ProgramNetworkError(TestbedError):
    """A run the program network cannot carry on (one line)."""


class ProgramNetwork:
    """Hosts on the virtual clock around the native engine's fabric (see the module docstring)."""

    def __init__(self, scenario, cfg: TransportConfig, nic_cfg: Callable[[int], TransportConfig],
                 local_cfg: TransportConfig | None = None, nic_choice: str = "flow", grid_s: float = 0.1) -> None:
        """`grid_s`: the engine stops at every multiple of it (the telemetry's period, which the
        sampler's times must fall on): results never depend on whether a sampler watches."""
        from testbed.emulation.model_fabric import build_scenario

        self.scenario = scenario
        self.seed = scenario.seed
        self.fabric = build_scenario(scenario, backend="native", seed=scenario.seed)
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
        self._heap: list = []
        self._seq = 0
        self.now_ns = 0
        self.events = 0
        self.cut_data = 0  # DATA cells on their way to a host when its cable was cut (cut_in_flight)
        self._observers: list = []  # (time, seq, fn): fn(now_ns) -> its next time or None (every())
        for index, name in enumerate(topo.hosts):
            ports = topo.ports(name)
            host_cfg = nic_cfg(len(ports)) if len(ports) > 1 else cfg
            host = self.hosts[name] = ProgramHost(self, name, index, self.ip_of[name],
                                                  Endpoint(name, host_cfg, wire_from_schedule=False))
            for i, p in enumerate(ports):
                tor = self.fabric.index[p.peer]
                eth = _mac(topo.port(p.peer, p.peer_port).mac) + _mac(p.mac) + b"\x08\x00"
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

    def push(self, t_ns: int, kind: int, target, arg) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t_ns, self._seq, kind, target, arg))

    def every(self, first_ns: int, fn: Callable[[int], int | None]) -> None:
        """Call `fn(now)` at `first_ns`, then at each time it returns, until it returns None. It sees
        every event at or before its time and none after (the engine stops there); it runs only
        while the run goes on past its time."""
        self._seq += 1
        heapq.heappush(self._observers, (first_ns, self._seq, fn))

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
        now = self.now_ns
        cut = [e for e in self._heap if e[2] == kind and e[0] > now and not keep(e[3], e[4])]
        if cut:
            self._heap[:] = [e for e in self._heap if e[2] != kind or e[0] <= now or keep(e[3], e[4])]
            heapq.heapify(self._heap)  # in place: run() holds the list
            self.cut_data += sum(1 for e in cut if e[2] == DELIVER and len(e[4]) > 42 and e[4][42] & 0x0F == wire.DATA)
        return len(cut)

    def finished(self) -> bool:
        return all(h.runner is None or h.runner.finished() for h in self.hosts.values())

    def run(self, until_s: float, on_progress: Callable[[int, int], None] | None = None,
            every_s: float = 0.5) -> None:
        """Every event up to `until_s` or until every workload finished; `on_progress(messages,
        cells)` at most every `every_s` of wall time and once at the end."""
        until = math.ceil(until_s * 1e9)
        heap, engine, window = self._heap, self.engine, self.window_ns
        run_window, take, by_nic = engine.run_window, engine.take, self.by_nic
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
            reached = run_window(horizon, window)
            if python_slots:
                problem = engine.python_problem()
                if problem is not None:
                    raise ProgramNetworkError(problem)
            for at, nic, frame in take():
                self._seq += 1
                push(heap, (at, self._seq, DELIVER, nic, frame))
            while heap and heap[0][0] <= reached:
                t, _, kind, target, arg = pop(heap)
                self.now_ns = t
                self.events += 1
                if kind == DELIVER:
                    host, port = by_nic[target]
                    host.receive(t, port, arg)
                elif kind == WAKE:
                    if arg is not None:  # a timer: only the latest one set counts
                        if target.wake_ns != arg:
                            continue
                        target.wake_ns = None
                    target.kick(t)
                elif kind == LOCAL:
                    target.receive_local(t, *arg)
                else:
                    target.look_at_ports(t)
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
            if reached >= until or (not heap and engine.next_ns() is None and not observers):
                break  # an observer may still have work to wake (a stalled host's resume)
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
                "program_drops": program_drops}

    def data_cells(self) -> dict:
        """Conservation of DATA cells over the fabric (sim.Network.data_cells' keys): what the hosts
        put on their NIC links is received by hosts, lost at a switch's full queue or on a lossy
        cable, or still in flight at the end (on a cable, queued, or delivered to a host after the
        end). A cell the program itself dropped (its drop counters, `program_drops` in result.json,
        count every type), or that a stopped switch flushed, is left in `unaccounted`."""
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
        undelivered = sum(1 for t, _, kind, _, frame in self._heap if kind == DELIVER
                          and len(frame) > 42 and frame[42] & 0x0F == wire.DATA)
        sent = sum(h.data_tx for h in self.hosts.values())
        received = sum(h.data_rx for h in self.hosts.values())
        lost = {"switch_queue_drops": queue_drops, "cut_links": cut, "lossy_links": lossy, "stopped_switches": 0,
                "no_route": 0}
        in_flight = cables + queued + undelivered
        return {"sent": sent, "received": received, "lost": lost, "lost_total": sum(lost.values()),
                "in_flight_at_end": in_flight, "unaccounted": sent - received - sum(lost.values()) - in_flight}

    def cell_hops(self) -> int:
        """Frames the engine moved across a switch (its cell-hop count)."""
        return self.engine.totals()["cell_hops"]
