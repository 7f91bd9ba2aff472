"""A small deterministic network for testing the transport without Mininet.

Virtual clock + event heap; links with rate and propagation delay; switch
egress ports with a FIFO data queue (tail drop at `buffer_cells`, DCQCN-style
ECN marking between Kmin and Kmax, at fabric.p4's thresholds), and ExpressPass credit limiting (a
separate credit queue served by a token bucket at the credit share of the link, excess credits
dropped: `LinkSpec.credit_meter`, the scenario's credits settings); DCQCN's CNPs wait
in a high-priority queue of their own, ahead of data, as fabric.p4 queues them
at priority 1. Optional PFC (`LinkSpec.pfc`): a switch counts the DATA cells
each ingress link has queued in its egress queues and, at XOFF, pauses that
link's sender (a pause frame that takes the link's delay to arrive), at XON
resumes it; a paused port holds its DATA and still sends credits and CNPs
(per-priority pause), and a switch's egress queues share one buffer (the
ports' buffers pooled) instead of tail-dropping at each port's own. Switches spray
cells by their entropy (or hash flows, for ECMP); paths are symmetric, so
data follows its credit's path reversed. Hosts are the real sans-IO
Endpoint driven by this clock: same code as the UDP agent.
"""

from __future__ import annotations

import heapq
import random
import struct
import time
import zlib
from collections import Counter, deque
from dataclasses import dataclass
from typing import Callable

from testbed.cells import wire
from testbed.host.app import WorkloadRunner
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint, channel_of_datagram
from testbed.cells.flowports import flow_source_port
from testbed.host.nic import NicPorts
from testbed.host.workloads import MessageSpec
from testbed.topo.entropy import group_choice, layout_of

_HEAD = struct.Struct("!BBHI")
_PSN = struct.Struct("!I")


@dataclass(slots=True)
class SimPacket:
    src: str
    dst: str
    data: bytes
    ect: bool
    ce: bool = False
    ingress: "Port | None" = None  # PFC: the link it entered the switch queueing it on
    kind: int | None = None  # its cell type, as the port that queued it read it (None: not a cell)
    # In-band telemetry (Network.int_telemetry): the hop records a sampled DATA cell carries, in
    # path order (switch device id, egress port, cells queued ahead at enqueue, microseconds
    # queued), the switches that found them full, and its enqueue at the current switch.
    hops: list | None = None
    int_overflow: int = 0
    enq_t: float = 0.0
    enq_q: int = 0

    @property
    def size(self) -> int:
        if self.hops is None:
            return len(self.data) + wire.FRAME_OVERHEAD
        return len(self.data) + wire.FRAME_OVERHEAD + wire.INT_SHIM_LEN + wire.INT_HOP_LEN * len(self.hops)

    def header(self) -> tuple[int, int, int] | None:
        """(type, entropy, flow_id) as a switch parser would read them, or None."""
        if len(self.data) < wire.HEADER_LEN or self.data[0] >> 4 != wire.VERSION:
            return None
        b0, _, entropy, flow_id = _HEAD.unpack_from(self.data)
        return b0 & 0x0F, entropy, flow_id


@dataclass(frozen=True)
class LinkSpec:
    rate_bps: float = 20e6
    delay_s: float = 100e-6
    buffer_cells: int = 32
    ecn: tuple[float, float, float] | None = None  # (Kmin cells, Kmax cells, Pmax)
    credit_limit: bool = True
    # PFC on the links into a switch: (XOFF, XON) in DATA cells that one ingress link has
    # queued at the switch; None = lossy.
    pfc: tuple[int, int] | None = None
    # The switch ports' credit meters: (share of the link's bytes, bucket depth, queue depth in
    # credits), as the scenario's fabric.credits gives them (rate_fraction, burst_credits,
    # queue_credits); None: the scenario defaults, wire.credit_link_share of the link, 2 and 8.
    credit_meter: tuple[float, int, int] | None = None


class Sim:
    """Event heap over a virtual clock (seconds); ties run in scheduling order."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list = []
        self._seq = 0
        self.events = 0
        # Observers (telemetry samples, fault actions): each runs at its time, before any event at
        # or after it, and returns its next time (None: done). They are not events: one runs only
        # while the run goes on past its time, so none keeps a finished run going or moves its end.
        self._observers: list = []
        self.tick_at = float("inf")

    def at(self, t: float, fn: Callable, *args) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, fn, args))

    def every(self, first: float, fn: Callable[[], float | None]) -> None:
        """Call `fn` at `first`, then at each time it returns, until it returns None (it may
        schedule events, at or after its own time)."""
        self._seq += 1
        heapq.heappush(self._observers, (first, self._seq, fn))
        self.tick_at = self._observers[0][0]

    def _observe(self) -> None:
        t, seq, fn = heapq.heappop(self._observers)
        self.now = t
        following = fn()
        if following is not None:
            heapq.heappush(self._observers, (following, seq, fn))
        self.tick_at = self._observers[0][0] if self._observers else float("inf")

    def run(self, until: float, stop: Callable[[], bool] | None = None) -> None:
        """Events up to `until`, or until `stop()` (asked every 64 events, and when only observers
        are left: a stalled host's resume is an observer, and a run waiting for it is not over)."""
        heap = self._heap
        while True:
            if heap and heap[0][0] <= until:
                if heap[0][0] >= self.tick_at:
                    self._observe()
                    continue
            elif self.tick_at <= until and stop is not None and not stop():
                self._observe()  # nothing else can happen before it
                continue
            else:
                return
            t, _, fn, args = heapq.heappop(heap)
            self.now = t
            fn(*args)
            self.events += 1
            if stop is not None and self.events % 64 == 0 and stop():
                return


@dataclass
class PortStats:
    tx_packets: int = 0
    tx_bytes: int = 0
    drops: int = 0  # every packet the data queue turned away (DATA, ACKs, NACKs, requests)
    data_drops: int = 0  # of which DATA cells
    ce_marks: int = 0
    max_queue_packets: int = 0
    max_queue_bytes: int = 0
    credit_drops: int = 0
    credits_forwarded: int = 0
    pauses_received: int = 0  # PFC XOFF frames that reached this port's sender
    paused_s: float = 0.0  # time this port held its DATA because of PFC
    delivered_packets: int = 0  # what reached the far end (the peer's receive counters)
    delivered_bytes: int = 0
    down_losses: int = 0  # sent into the cable while it was down, or on it when it went down
    loss_drops: int = 0  # lost on the cable to a degraded link's random loss
    flushed: int = 0  # queued here when its switch stopped (switch_restart)
    # DATA cells among the above: what the DATA conservation line counts (Network.data_cells)
    data_tx: int = 0
    data_delivered: int = 0
    data_down_losses: int = 0
    data_loss_drops: int = 0
    data_flushed: int = 0


class Port:
    """One egress direction of a link."""

    def __init__(self, net: "Network", name: str, peer, spec: LinkSpec, switch_port: bool) -> None:
        self.net = net
        self.name = name
        self.peer = peer
        self.spec = spec
        self.capacity = spec.buffer_cells if switch_port else 1 << 30
        self.ecn = spec.ecn if switch_port else None
        self.limit = spec.credit_limit and switch_port
        cfg = net.cfg
        share, self.credit_burst, self.credit_queue = spec.credit_meter or (
            wire.credit_link_share(cfg.cell_size), 2, 8)
        self.credit_rate = wire.credit_meter_rate(spec.rate_bps, share, cfg.cell_size)  # the switches' whole credits/s
        self.tokens = float(self.credit_burst)
        self.refilled = 0.0
        self.data_q: deque[SimPacket] = deque()
        self.queued_bytes = 0
        self.credit_q: deque[SimPacket] = deque()
        self.prio_q: deque[SimPacket] = deque()  # CNPs (switch ports): ahead of data, unmetered
        self.switch_port = switch_port
        self.owner: Switch | None = None  # the switch this egress port belongs to
        self.peer_is_switch = isinstance(peer, Switch)
        self.paused = False
        self._paused_at = 0.0
        self.busy = False
        self.wake_pending = False
        self.stats = PortStats()
        # Faults (testbed.simulation.faults): the cable's rate, delay and loss now (link_degrade, a
        # host_slow NIC), whether it is down (a cut cable: what is sent, or on it, is lost; `epoch`
        # counts the cuts so a frame on the cable when it went down never arrives), and whether
        # its sender is frozen (a stalled host's NIC, a stopped switch: nothing leaves).
        self.rate_bps = spec.rate_bps
        self.delay_s = spec.delay_s
        self.loss = 0.0
        self.down = False
        self.epoch = 0
        self.frozen = False
        self.reverse: Port | None = None  # the other direction of the same cable
        self.number: int | None = None  # the owner's port number (topology built networks)
        self.peak_packets = 0  # deepest data queue since the telemetry's last sample
        self.tx_types: dict[int | None, list[int]] = {}  # cell type -> [packets, bytes] sent

    def enqueue(self, pkt: SimPacket, kind: int | None) -> None:
        if self.limit and kind == wire.CREDIT:
            if len(self.credit_q) >= self.credit_queue:
                self.stats.credit_drops += 1
                return
            self.credit_q.append(pkt)
        elif kind == wire.CNP and self.switch_port:
            self.prio_q.append(pkt)
        else:
            q = len(self.data_q)
            if self.owner is not None and self.spec.pfc is not None and self.switch_port:
                full = self.owner.queued >= self.owner.shared_cells  # PFC: one shared buffer per switch
            else:
                full = q >= self.capacity
            if full:
                self.stats.drops += 1
                if kind == wire.DATA:
                    self.stats.data_drops += 1
                if pkt.ingress is not None:
                    self.net.pfc_dequeued(pkt)
                return
            if self.ecn and pkt.ect and not pkt.ce:
                kmin, kmax, pmax = self.ecn
                # fabric.p4's egress rule, q the cells queued ahead: always from Kmax on (a step's
                # K = Kmin = Kmax), never up to Kmin, Pmax (q - Kmin)/(Kmax - Kmin) between
                p = 1.0 if q >= kmax else 0.0 if q <= kmin else pmax * (q - kmin) / (kmax - kmin)
                if p and self.net.rng.random() < p:
                    pkt.ce = True
                    self.stats.ce_marks += 1
            if self.net.int_telemetry is not None and kind == wire.DATA and self.owner is not None:
                self._int_enqueued(pkt, q)
            pkt.kind = kind
            self.data_q.append(pkt)
            self.queued_bytes += pkt.size
            if self.owner is not None:
                self.owner.queued += 1
            st = self.stats
            st.max_queue_packets = max(st.max_queue_packets, len(self.data_q))
            if len(self.data_q) > self.peak_packets:
                self.peak_packets = len(self.data_q)
            st.max_queue_bytes = max(st.max_queue_bytes, self.queued_bytes)
        if not self.busy:
            self._start()

    def _int_enqueued(self, pkt: SimPacket, q: int) -> None:
        """fabric.p4's INT source rule (psn & (sample - 1) == 0 starts the records) and the
        enqueue facts the hop record takes."""
        if pkt.hops is None:
            sample = self.net.int_telemetry[0]
            if _PSN.unpack_from(pkt.data, 12)[0] & (sample - 1):
                return
            pkt.hops = []
        pkt.enq_t, pkt.enq_q = self.net.sim.now, q

    def _int_dequeued(self, pkt: SimPacket, now: float) -> None:
        """The switch's hop record, as fabric.p4's egress writes it (deq_timedelta: the time
        from enqueue to the start of transmission), or an overflow count when the stack is full."""
        if len(pkt.hops) < self.net.int_telemetry[1]:
            pkt.hops.append([self.owner.device_id, self.number, pkt.enq_q, int(round((now - pkt.enq_t) * 1e6))])
        elif pkt.int_overflow < 255:
            pkt.int_overflow += 1

    def _refill(self, now: float) -> None:
        self.tokens = min(self.credit_burst, self.tokens + (now - self.refilled) * self.credit_rate)
        self.refilled = now

    def _start(self) -> None:
        if self.frozen:
            return
        now = self.net.sim.now
        pkt = self.prio_q.popleft() if self.prio_q else None
        if pkt is None and self.credit_q:
            self._refill(now)
            if self.tokens >= 1.0 - 1e-9:  # float refill must not leave a token short forever
                self.tokens = max(0.0, self.tokens - 1.0)
                pkt = self.credit_q.popleft()
                pkt.kind = wire.CREDIT
                self.stats.credits_forwarded += 1
        if pkt is None and self.data_q and not self.paused:
            pkt = self.data_q.popleft()
            self.queued_bytes -= pkt.size
            if self.owner is not None:
                self.owner.queued -= 1
            if pkt.ingress is not None:
                self.net.pfc_dequeued(pkt)
            if pkt.hops is not None and self.owner is not None:
                self._int_dequeued(pkt, now)
        if pkt is None:
            if self.credit_q and not self.wake_pending:  # waiting for a token
                self.wake_pending = True
                wait = max((1.0 - self.tokens) / self.credit_rate, 1e-9)
                self.net.sim.at(now + wait, self._token_wake)
            return
        self.busy = True
        size = pkt.size
        self.stats.tx_packets += 1
        self.stats.tx_bytes += size
        counts = self.tx_types.get(pkt.kind)
        if counts is None:
            counts = self.tx_types[pkt.kind] = [0, 0]
        counts[0] += 1
        counts[1] += size
        done = now + size * 8 / self.rate_bps
        self.net.sim.at(done, self._done)
        data = pkt.kind == wire.DATA
        self.stats.data_tx += data
        if self.down:
            self.stats.down_losses += 1
            self.stats.data_down_losses += data
        elif self.loss and self.net.rng.random() < self.loss:
            self.stats.loss_drops += 1
            self.stats.data_loss_drops += data
        else:
            self.net.sim.at(done + self.delay_s, self._arrive, pkt, self.epoch)

    def _arrive(self, pkt: SimPacket, epoch: int) -> None:
        """The frame's last bit reached the far end, unless the cable was cut meanwhile."""
        if self.down or epoch != self.epoch:
            self.stats.down_losses += 1
            self.stats.data_down_losses += pkt.kind == wire.DATA
            return
        self.stats.delivered_packets += 1
        self.stats.data_delivered += pkt.kind == wire.DATA
        self.stats.delivered_bytes += pkt.size
        if self.peer_is_switch:  # a switch learns the ingress link (PFC counts per ingress)
            self.peer.receive(pkt, self)
        else:
            if self.peer.nic is not None:  # a dual-homed host hears which port it came by
                self.peer.heard(self)
            self.peer.receive(pkt)

    def set_down(self, down: bool) -> None:
        """Cut the cable's direction (what is on it is lost) or mend it."""
        if down and not self.down:
            self.epoch += 1
        self.down = down

    def freeze(self, frozen: bool) -> None:
        """Stop sending (the sender hangs or is gone) or go on."""
        self.frozen = frozen
        if not frozen and not self.busy:
            self._start()

    def flush(self) -> int:
        """Drop everything queued here (its switch stopped); how many packets that was."""
        n = 0
        for q in (self.prio_q, self.credit_q, self.data_q):
            while q:
                pkt = q.popleft()
                n += 1
                self.stats.data_flushed += pkt.kind == wire.DATA
                if q is self.data_q:
                    self.queued_bytes -= pkt.size
                    if self.owner is not None:
                        self.owner.queued -= 1
                if pkt.ingress is not None:
                    self.net.pfc_dequeued(pkt)
        self.stats.flushed += n
        self.epoch += 1  # what it had on the cable is lost with the switch
        return n

    def pause(self, on: bool) -> None:
        """A PFC frame from the peer arrived: hold (or release) DATA."""
        now = self.net.sim.now
        if on and not self.paused:
            self.stats.pauses_received += 1
            self._paused_at = now
        elif not on and self.paused:
            self.stats.paused_s += now - self._paused_at
        self.paused = on
        if not on and not self.busy:
            self._start()

    def _token_wake(self) -> None:
        self.wake_pending = False
        if not self.busy:
            self._start()

    def _done(self) -> None:
        self.busy = False
        self._start()


class Switch:
    def __init__(self, net: "Network", name: str) -> None:
        self.net = net
        self.name = name
        self.routes: dict[str, list[Port]] = {}
        # a group's digit of the entropy value: (entropy // divisor) mod members, as fabric.p4's
        # groups read it (testbed.topo.entropy); 1 where a builder did not say
        self.divisors: dict[str, int] = {}
        self.queued = 0  # DATA cells in all its egress queues
        self.ports = 0
        self.down = False  # stopped (switch_restart): it drops every frame that reaches it
        self.down_drops = 0  # frames that reached it while stopped
        self.data_down_drops = 0  # of which DATA cells
        self.data_no_route = 0  # DATA cells it had no route for
        self.no_route = 0  # frames it had no route for
        self.device_id = 0  # the topology's device id (the INT hop records' switch id)

    @property
    def shared_cells(self) -> int:
        """With PFC the egress queues share one buffer: the ports' buffers pooled."""
        return self.ports * self.net.cfg_buffer

    def receive(self, pkt: SimPacket, via: Port | None = None) -> None:
        if self.down:
            self.down_drops += 1
            self.data_down_drops += pkt.kind == wire.DATA
            return
        ports = self.routes.get(pkt.dst)
        if not ports:
            self.net.unroutable += 1
            self.no_route += 1
            self.data_no_route += pkt.kind == wire.DATA
            return
        head = pkt.header()
        kind = head[0] if head else None
        if len(ports) == 1:
            port = ports[0]
        elif head and self.net.load_balancing == "spray":
            port = ports[(head[1] // self.divisors.get(pkt.dst, 1)) % len(ports)]
        else:  # flow-hash ECMP (symmetric: the pair is sorted)
            a, b = sorted((pkt.src, pkt.dst))
            fid = head[2] if head else 0
            port = ports[zlib.crc32(f"{a}|{b}|{fid}|{self.name}".encode()) % len(ports)]
        if via is not None and via.spec.pfc is not None and kind not in (wire.CREDIT, wire.CNP):
            pkt.ingress = via
            self.net.pfc_queued(pkt)
        else:
            pkt.ingress = None
        port.enqueue(pkt, kind)


class SimHost:
    def __init__(self, net: "Network", name: str, cfg: TransportConfig) -> None:
        self.net = net
        self.name = name
        self.ep = Endpoint(name, cfg, wire_from_schedule=False)  # a cell goes on its uplink at `now`
        self.local: Endpoint | None = None  # the intra-server channel's endpoint (multi-GPU servers)
        self.local_ports: dict[str, Port] = {}  # same-server peer -> the direct link to it
        self.runner: WorkloadRunner | None = None
        self.uplink: Port | None = None
        # A NIC of several ports (dual-homed hosts): its uplinks and which one each cell takes,
        # by the agent's rule (testbed.host.nic: entropy digit, or the flow's port and channel).
        self.uplinks: list[Port] = []
        self.nic: NicPorts | None = None
        self._flow_ports: dict[str, int] = {}
        self._port_index: dict[Port, int] = {}  # dual-homed: the link a frame arrives by -> NIC port
        self._wake_at: float | None = None
        self.rx_data_bytes: Counter[str] = Counter()
        self.stalls = 0
        # agent_stall: the host hangs; what arrives waits (its socket's buffer) with its arrival time
        self.stalled = False
        self.held: list[tuple[SimPacket, float]] = []

    def heard(self, via: Port) -> None:
        """A frame arrived by the link `via` (the agent knows the port from IP_PKTINFO)."""
        index = self._port_index.get(via)
        if index is not None:
            self.nic.heard(index, self.net.sim.now)

    def receive(self, pkt: SimPacket) -> None:
        if self.stalled:
            self.held.append((pkt, self.net.sim.now))
            return
        self._take(pkt, None)
        self.kick()

    def _take(self, pkt: SimPacket, arrived: float | None) -> None:
        head = pkt.header()
        if head and head[0] == wire.DATA:
            self.rx_data_bytes[pkt.src] += pkt.size
        tos = 3 if pkt.ce else 2 if pkt.ect else 0
        ep = self.local if pkt.src in self.local_ports else self.ep
        if pkt.hops is not None:
            ep.keep_int_hops(self.net.sim.now if arrived is None else arrived, pkt.src, head[2],
                             _PSN.unpack_from(pkt.data, 12)[0], pkt.int_overflow, pkt.hops)
        ep.receive(self.net.sim.now, pkt.src, pkt.data, tos, arrived)

    def stall(self, stalled: bool) -> None:
        """agent_stall: the whole host stops (its application, transport, timers and NIC), as SIGSTOP
        stops the agent; on resume it reads what arrived meanwhile, each with its arrival time (the
        kernel's receive timestamp), and its late timers fire."""
        self.stalled = stalled
        for port in self.ports():
            port.freeze(stalled)
        if not stalled:
            held, self.held = self.held, []
            for pkt, arrived in held:
                self._take(pkt, arrived)
            self.kick()

    def ports(self) -> list[Port]:
        """Every port this host sends on: its NIC ports and its local channels."""
        ports = list(self.uplinks) or ([self.uplink] if self.uplink is not None else [])
        return ports + list(self.local_ports.values())

    def inject(self, src: str, data: bytes, tos: int = 0) -> None:
        """Hand the endpoint an arbitrary datagram as if it came from `src` (tests)."""
        self.ep.receive(self.net.sim.now, src, data, tos)
        self.kick()

    def kick(self) -> None:
        if self.stalled:
            return
        now = self.net.sim.now
        if self.runner is not None:
            self.runner.poll(now)
        for tx in self.ep.poll(now):
            uplink, data = self.uplink, tx.data
            if self.nic is not None:
                sport = self._flow_ports.get(tx.dst)
                if sport is None:
                    sport = self._flow_ports[tx.dst] = flow_source_port(self.net.seed, self.name, tx.dst)
                index, data = self.nic.choose(data, sport, channel_of_datagram(data))
                uplink = self.uplinks[index]
                self.nic.sent(index, now, data[0] & 0x0F)
            pkt = SimPacket(self.name, tx.dst, data, tx.ect)
            head = pkt.header()
            uplink.enqueue(pkt, head[0] if head else None)
        if self.local is not None:
            for tx in self.local.poll(now):
                pkt = SimPacket(self.name, tx.dst, tx.data, tx.ect)
                head = pkt.header()
                self.local_ports[tx.dst].enqueue(pkt, head[0] if head else None)
        times = [t for t in (self.ep.polled_deadline, self.local.polled_deadline if self.local else None,
                             self.runner.next_deadline(now) if self.runner else None) if t is not None]
        if not times:
            return
        t = min(times)
        if t <= now:  # the endpoint must always make progress; never spin on one instant
            self.stalls += 1
            t = now + 1e-9
        late = self.net.wake_lateness
        if late is not None:  # a real event loop wakes after its deadline, never before
            t += late(self.net.rng)
        if self._wake_at is not None and now <= self._wake_at <= t:
            return
        self._wake_at = t
        self.net.sim.at(t, self._wake, t)

    def check_ports(self) -> float:
        """A dual-homed NIC's periodic look at its ports, as the agent's sample does: one silent
        for `silence_s` while sending is left (its ToR may have died with carrier still up), and
        tried again later; the NIC's rate follows. Returns the next look's time (Sim.every)."""
        if not self.stalled and self.nic.check_silence(self.net.sim.now):
            self.ep.set_link_rate(self.nic.rate_bps())
            self.kick()
        return self.net.sim.now + self.nic_sample_s

    def _wake(self, t: float) -> None:
        if self._wake_at != t or self.stalled:
            return
        self._wake_at = None
        self.kick()


class Network:
    """Hosts, switches and ports; build with `star` or `leaf_spine`."""

    def __init__(self, cfg: TransportConfig, seed: int = 1, load_balancing: str = "spray",
                 wake_lateness: Callable[[random.Random], float] | None = None) -> None:
        self.cfg = cfg
        # Timer wake-ups of every host come this much late (seconds, drawn per
        # wake-up): the agent's event loop as the operating system runs it.
        # None: exact wake-ups. Arrivals still wake a host at once.
        self.wake_lateness = wake_lateness
        self.sim = Sim()
        self.seed = seed
        self.rng = random.Random(seed)
        self.load_balancing = load_balancing
        self.hosts: dict[str, SimHost] = {}
        self.switches: dict[str, Switch] = {}
        self.ports: list[Port] = []
        self.unroutable = 0
        self._pfc_held: Counter = Counter()  # ingress Port -> its DATA queued at the next switch
        self._pfc_off: set = set()  # ingress ports whose sender is paused (or a pause is on its way)
        self.pause_frames = 0  # XOFF + XON frames sent
        self.cfg_buffer = 0  # per-port buffer (cells) of the links; PFC pools it per switch
        self.topo = None  # from_topology: the Topology and (node, port number) -> its egress Port
        self.port_of: dict[tuple[str, int], Port] = {}
        # (sample, max_hops) when the scenario sets fabric.int: switches record INT hops (Port)
        self.int_telemetry: tuple[int, int] | None = None

    # -- PFC ----------------------------------------------------------------------
    def pfc_queued(self, pkt: SimPacket) -> None:
        via = pkt.ingress
        self._pfc_held[via] += 1
        if self._pfc_held[via] >= via.spec.pfc[0] and via not in self._pfc_off:
            self._pfc_off.add(via)
            self.pause_frames += 1
            self.sim.at(self.sim.now + via.spec.delay_s, via.pause, True)

    def pfc_dequeued(self, pkt: SimPacket) -> None:
        via = pkt.ingress
        pkt.ingress = None
        self._pfc_held[via] -= 1
        if self._pfc_held[via] <= via.spec.pfc[1] and via in self._pfc_off:
            self._pfc_off.discard(via)
            self.pause_frames += 1
            self.sim.at(self.sim.now + via.spec.delay_s, via.pause, False)

    def host(self, name: str) -> SimHost:
        h = self.hosts[name] = SimHost(self, name, self.cfg)
        return h

    def switch(self, name: str) -> Switch:
        s = self.switches[name] = Switch(self, name)
        return s

    def link(self, a, b, spec: LinkSpec) -> tuple[Port, Port]:
        pa = Port(self, f"{a.name}->{b.name}", b, spec, isinstance(a, Switch))
        pb = Port(self, f"{b.name}->{a.name}", a, spec, isinstance(b, Switch))
        pa.reverse, pb.reverse = pb, pa
        self.ports += [pa, pb]
        for node, port in ((a, pa), (b, pb)):
            if isinstance(node, Switch):
                port.owner = node
                node.ports += 1
                self.cfg_buffer = spec.buffer_cells
        for node, port in ((a, pa), (b, pb)):
            if isinstance(node, SimHost):
                node.uplink = port
        return pa, pb

    # -- workloads and running ---------------------------------------------------
    def local_link(self, a: "SimHost", b: "SimHost", spec: LinkSpec, cfg: TransportConfig) -> None:
        """A direct GPU-GPU channel inside a server; each end gets the local endpoint of `cfg`."""
        pa = Port(self, f"{a.name}->{b.name}", b, spec, False)
        pb = Port(self, f"{b.name}->{a.name}", a, spec, False)
        pa.reverse, pb.reverse = pb, pa
        self.ports += [pa, pb]
        for host, peer, port in ((a, b, pa), (b, a, pb)):
            if host.local is None:
                host.local = Endpoint(host.name, cfg, wire_from_schedule=False)
            host.local_ports[peer.name] = port

    def load(self, specs: list[MessageSpec], seed: int = 1) -> None:
        for name, h in self.hosts.items():
            h.runner = WorkloadRunner(name, h.ep, specs, seed, local=h.local, local_peers=set(h.local_ports))
            self.sim.at(0.0, h.kick)
            for s in specs:
                if s.src == name and s.start_us > 0:
                    self.sim.at(s.start_us / 1e6, h.kick)

    def finished(self) -> bool:
        return all(h.runner is None or h.runner.finished() for h in self.hosts.values())

    def run(self, until_s: float, on_progress: Callable[[int, int], None] | None = None,
            every_s: float = 0.5) -> None:
        """Events up to `until_s` or until every workload finished. `on_progress(messages, cells)`, if
        given, hears the messages delivered and DATA cells passed on in order so far, at most every
        `every_s` of wall time (checked every 64 events, as finishing is) and once at the end."""
        if on_progress is None:
            self.sim.run(until_s, self.finished)
            return
        clock = time.monotonic
        next_report = clock() + every_s

        def stop() -> bool:
            nonlocal next_report
            if clock() >= next_report:
                next_report = clock() + every_s
                on_progress(*self.progress_counts())
            return self.finished()

        self.sim.run(until_s, stop)
        on_progress(*self.progress_counts())

    def progress_counts(self) -> tuple[int, int]:
        """(messages delivered, DATA cells passed on in order) over every host and local channel."""
        messages = sum(len(h.runner.received) for h in self.hosts.values() if h.runner is not None)
        cells = sum(h.ep.in_order_cells + (h.local.in_order_cells if h.local is not None else 0)
                    for h in self.hosts.values())
        return messages, cells

    # -- measurements -------------------------------------------------------------
    def switch_ports(self) -> list[Port]:
        return [p for p in self.ports if p.limit or p.capacity < 1 << 30]

    def drops(self) -> int:
        """Packets of any kind the switches' data queues turned away."""
        return sum(p.stats.drops for p in self.ports)

    def data_drops(self) -> int:
        """DATA cells the switches' data queues turned away."""
        return sum(p.stats.data_drops for p in self.ports)

    def data_cells(self) -> dict:
        """Conservation of DATA cells over the fabric: what the hosts put on their NIC links (sent)
        is received by hosts from their ToRs, lost (at a switch's full queue, on a cut or down
        cable, on a lossy cable, in a stopped switch, for want of a route) or still in flight at the
        end (queued, or on a cable). A server's local channels (host to host, no switch) are not
        the fabric's and are left out. `unaccounted` is the remainder, 0 when every cell is counted."""
        ports = [p for p in self.ports if p.switch_port or p.peer_is_switch]
        sent = sum(p.stats.data_tx for p in ports if not p.switch_port)
        received = sum(p.stats.data_delivered for p in ports if not p.peer_is_switch)
        lost = {"switch_queue_drops": self.data_drops(),
                "cut_links": sum(p.stats.data_down_losses for p in ports),
                "lossy_links": sum(p.stats.data_loss_drops for p in ports),
                "stopped_switches": sum(s.data_down_drops for s in self.switches.values())
                + sum(p.stats.data_flushed for p in ports),
                "no_route": sum(s.data_no_route for s in self.switches.values())}
        queued = sum(1 for p in ports for pkt in p.data_q if pkt.kind == wire.DATA)
        on_cables = sum(p.stats.data_tx - p.stats.data_delivered - p.stats.data_down_losses
                        - p.stats.data_loss_drops for p in ports)
        in_flight = queued + on_cables
        return {"sent": sent, "received": received, "lost": lost, "lost_total": sum(lost.values()),
                "in_flight_at_end": in_flight,
                "unaccounted": sent - received - sum(lost.values()) - in_flight}

    def max_queue_cells(self) -> float:
        """Deepest switch queue, in DATA-cell equivalents (bytes / one cell's frame)."""
        return max(p.stats.max_queue_bytes for p in self.switch_ports()) / self.cfg.data_wire_bytes

    def records(self) -> list[dict]:
        return [r for h in self.hosts.values() if h.runner for r in h.runner.records]


def star(n_hosts: int, cfg: TransportConfig, spec: LinkSpec, seed: int = 1) -> Network:
    """n hosts on one switch: the last hop is the only shared resource (incast)."""
    net = Network(cfg, seed)
    sw = net.switch("s1")
    for i in range(1, n_hosts + 1):
        h = net.host(f"h{i}")
        down, _ = net.link(sw, h, spec)
        sw.routes[h.name] = [down]
    return net


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, cfg: TransportConfig, spec: LinkSpec,
               spine_delays_s: list[float] | None = None, load_balancing: str = "spray",
               seed: int = 1, wake_lateness: Callable[[random.Random], float] | None = None) -> Network:
    """Two-tier Clos; spine_delays_s gives each spine's links their own delay (path skew)."""
    net = Network(cfg, seed, load_balancing, wake_lateness)
    leaf_sw = [net.switch(f"leaf{i + 1}") for i in range(leaves)]
    spine_sw = [net.switch(f"spine{j + 1}") for j in range(spines)]
    hosts_of: dict[int, list[str]] = {}
    n = 0
    for i, leaf in enumerate(leaf_sw):
        for _ in range(hosts_per_leaf):
            n += 1
            h = net.host(f"h{n}")
            down, _ = net.link(leaf, h, spec)
            leaf.routes[h.name] = [down]
            hosts_of.setdefault(i, []).append(h.name)
    up: dict[int, list[Port]] = {i: [] for i in range(leaves)}
    for j, spine in enumerate(spine_sw):
        s = spec if spine_delays_s is None else LinkSpec(
            spec.rate_bps, spine_delays_s[j], spec.buffer_cells, spec.ecn, spec.credit_limit, spec.pfc,
            spec.credit_meter)
        for i, leaf in enumerate(leaf_sw):
            to_spine, to_leaf = net.link(leaf, spine, s)
            up[i].append(to_spine)
            for h in hosts_of[i]:
                spine.routes[h] = [to_leaf]
    for i, leaf in enumerate(leaf_sw):
        for k, names in hosts_of.items():
            if k != i:
                for h in names:
                    leaf.routes[h] = up[i]
    return net


def from_topology(topo, cfg: TransportConfig, host: LinkSpec, fabric: LinkSpec, local: LinkSpec | None = None,
                  local_cfg: TransportConfig | None = None, load_balancing: str = "spray",
                  seed: int = 1, nic_cfg: Callable[[int], TransportConfig] | None = None,
                  nic_choice: str = "flow") -> Network:
    """Any `testbed.topo` Topology (leaf-spine, fat-tree, servers of GPUs) as a simulated network.

    Switch routes are the topology's equal-cost next hops, each group in the member order and
    reading the entropy digit that the controller gives fabric.p4's (`testbed.topo.entropy`), so
    a sprayed cell takes the path it takes on the emulated fabric. A host with one NIC
    port sends on it; a dual-homed host, given `nic_cfg(ports)` (its transport
    at both ports' rate, as the agent's), sends on both, each cell by the
    port `NicPorts.choose` gives it (`nic_choice`: `entropy` digit, or `flow`:
    the flow's source port and channel), and receives on both, leaving a
    port that goes silent as the agent does (`SimHost.check_ports`); without
    `nic_cfg` it uses its first port only. The GPUs of a server are joined
    by direct links of `local` driven by a second endpoint configured with
    `local_cfg` (its rate and RTT).
    """
    net = Network(cfg, seed, load_balancing)
    for name in topo.hosts:
        net.host(name)
    for name in topo.switches:
        net.switch(name).device_id = topo.node(name).device_id or 0
    port_of: dict[tuple[str, int], Port] = {}
    for link in topo.links:
        a = net.hosts.get(link.a) or net.switches[link.a]
        b = net.hosts.get(link.b) or net.switches[link.b]
        pa, pb = net.link(a, b, host if link.tier == "host" else fabric)
        port_of[(link.a, link.a_port)] = pa
        port_of[(link.b, link.b_port)] = pb
        pa.number, pb.number = link.a_port, link.b_port
    for name in topo.hosts:
        h = net.hosts[name]
        nic = topo.ports(name)
        h.uplink = port_of[(name, nic[0].number)]
        if len(nic) > 1 and nic_cfg is not None:
            h.uplinks = [port_of[(name, p.number)] for p in nic]
            both = nic_cfg(len(nic))
            h.nic = NicPorts([f"{name}-eth{p.number - 1}" for p in nic], host.rate_bps, nic_choice,
                             silence_s=4 * both.rtt_s)  # as the agent's
            h.ep = Endpoint(name, both, wire_from_schedule=False)
            h._port_index = {port.reverse: i for i, port in enumerate(h.uplinks)}
            if h.nic.silence_s is not None:
                h.nic_sample_s = max(0.01, 8 * both.data_wire_bytes * 8 / host.rate_bps)  # the agent's period
                net.sim.every(h.nic_sample_s, h.check_ports)
    layout = layout_of(topo)
    for sw in topo.switches:
        for dst in topo.hosts:
            hops = topo.next_hops(sw, dst)
            if hops:
                divisor, ordered = group_choice(topo, layout, sw, hops)
                net.switches[sw].routes[dst] = [port_of[(sw, p)] for p in ordered]
                net.switches[sw].divisors[dst] = divisor
    net.topo, net.port_of = topo, port_of
    if topo.local_links:
        if local is None or local_cfg is None:
            raise ValueError("a topology with servers needs the local channel's LinkSpec and config")
        for link in topo.local_links:
            net.local_link(net.hosts[link.a], net.hosts[link.b], local, local_cfg)
    return net
