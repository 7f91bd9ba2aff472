"""A small deterministic network for testing the transport without Mininet.

Virtual clock + event heap; links with rate and propagation delay; switch
egress ports with a FIFO data queue (tail drop at `buffer_cells`, DCQCN-style
ECN marking between Kmin and Kmax), and ExpressPass credit limiting (a
separate 8-credit queue served by a token bucket of depth 2 at
credit/(credit+data) of the link, excess credits dropped). Switches spray
cells by their entropy (or hash flows, for ECMP); paths are symmetric, so
data follows its credit's path reversed. Hosts are the real sans-IO
Endpoint driven by this clock: same code as the UDP agent.
"""

from __future__ import annotations

import heapq
import random
import struct
import zlib
from collections import Counter, deque
from dataclasses import dataclass
from typing import Callable

from testbed.host import wire
from testbed.host.app import WorkloadRunner
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint
from testbed.host.workloads import MessageSpec

_HEAD = struct.Struct("!BBHI")


@dataclass(slots=True)
class SimPacket:
    src: str
    dst: str
    data: bytes
    ect: bool
    ce: bool = False

    @property
    def size(self) -> int:
        return len(self.data) + wire.FRAME_OVERHEAD

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


class Sim:
    """Event heap over a virtual clock (seconds); ties run in scheduling order."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list = []
        self._seq = 0
        self.events = 0

    def at(self, t: float, fn: Callable, *args) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, fn, args))

    def run(self, until: float, stop: Callable[[], bool] | None = None) -> None:
        while self._heap and self._heap[0][0] <= until:
            t, _, fn, args = heapq.heappop(self._heap)
            self.now = t
            fn(*args)
            self.events += 1
            if stop is not None and self.events % 64 == 0 and stop():
                return


@dataclass
class PortStats:
    tx_packets: int = 0
    tx_bytes: int = 0
    drops: int = 0
    ce_marks: int = 0
    max_queue_packets: int = 0
    max_queue_bytes: int = 0
    credit_drops: int = 0
    credits_forwarded: int = 0


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
        self.credit_rate = spec.rate_bps / 8 / (cfg.data_wire_bytes + cfg.credit_wire_bytes)
        self.tokens = 2.0
        self.refilled = 0.0
        self.data_q: deque[SimPacket] = deque()
        self.queued_bytes = 0
        self.credit_q: deque[SimPacket] = deque()
        self.busy = False
        self.wake_pending = False
        self.stats = PortStats()

    def enqueue(self, pkt: SimPacket, kind: int | None) -> None:
        if self.limit and kind == wire.CREDIT:
            if len(self.credit_q) >= 8:
                self.stats.credit_drops += 1
                return
            self.credit_q.append(pkt)
        else:
            q = len(self.data_q)
            if q >= self.capacity:
                self.stats.drops += 1
                return
            if self.ecn and pkt.ect and not pkt.ce:
                kmin, kmax, pmax = self.ecn
                p = 0.0 if q <= kmin else 1.0 if q > kmax else pmax * (q - kmin) / (kmax - kmin)
                if p and self.net.rng.random() < p:
                    pkt.ce = True
                    self.stats.ce_marks += 1
            self.data_q.append(pkt)
            self.queued_bytes += pkt.size
            st = self.stats
            st.max_queue_packets = max(st.max_queue_packets, len(self.data_q))
            st.max_queue_bytes = max(st.max_queue_bytes, self.queued_bytes)
        if not self.busy:
            self._start()

    def _refill(self, now: float) -> None:
        self.tokens = min(2.0, self.tokens + (now - self.refilled) * self.credit_rate)
        self.refilled = now

    def _start(self) -> None:
        now = self.net.sim.now
        pkt = None
        if self.credit_q:
            self._refill(now)
            if self.tokens >= 1.0 - 1e-9:  # float refill must not leave a token short forever
                self.tokens = max(0.0, self.tokens - 1.0)
                pkt = self.credit_q.popleft()
                self.stats.credits_forwarded += 1
        if pkt is None and self.data_q:
            pkt = self.data_q.popleft()
            self.queued_bytes -= pkt.size
        if pkt is None:
            if self.credit_q and not self.wake_pending:  # waiting for a token
                self.wake_pending = True
                wait = max((1.0 - self.tokens) / self.credit_rate, 1e-9)
                self.net.sim.at(now + wait, self._token_wake)
            return
        self.busy = True
        self.stats.tx_packets += 1
        self.stats.tx_bytes += pkt.size
        done = now + pkt.size * 8 / self.spec.rate_bps
        self.net.sim.at(done, self._done)
        self.net.sim.at(done + self.spec.delay_s, self.peer.receive, pkt)

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

    def receive(self, pkt: SimPacket) -> None:
        ports = self.routes.get(pkt.dst)
        if not ports:
            self.net.unroutable += 1
            return
        head = pkt.header()
        kind = head[0] if head else None
        if len(ports) == 1:
            port = ports[0]
        elif head and self.net.load_balancing == "spray":
            port = ports[head[1] % len(ports)]
        else:  # flow-hash ECMP (symmetric: the pair is sorted)
            a, b = sorted((pkt.src, pkt.dst))
            fid = head[2] if head else 0
            port = ports[zlib.crc32(f"{a}|{b}|{fid}|{self.name}".encode()) % len(ports)]
        port.enqueue(pkt, kind)


class SimHost:
    def __init__(self, net: "Network", name: str, cfg: TransportConfig) -> None:
        self.net = net
        self.name = name
        self.ep = Endpoint(name, cfg)
        self.local: Endpoint | None = None  # the intra-server channel's endpoint (multi-GPU servers)
        self.local_ports: dict[str, Port] = {}  # same-server peer -> the direct link to it
        self.runner: WorkloadRunner | None = None
        self.uplink: Port | None = None
        self._wake_at: float | None = None
        self.rx_data_bytes: Counter[str] = Counter()
        self.stalls = 0

    def receive(self, pkt: SimPacket) -> None:
        head = pkt.header()
        if head and head[0] == wire.DATA:
            self.rx_data_bytes[pkt.src] += pkt.size
        tos = 3 if pkt.ce else 2 if pkt.ect else 0
        ep = self.local if pkt.src in self.local_ports else self.ep
        ep.receive(self.net.sim.now, pkt.src, pkt.data, tos)
        self.kick()

    def inject(self, src: str, data: bytes, tos: int = 0) -> None:
        """Hand the endpoint an arbitrary datagram as if it came from `src` (tests)."""
        self.ep.receive(self.net.sim.now, src, data, tos)
        self.kick()

    def kick(self) -> None:
        now = self.net.sim.now
        if self.runner is not None:
            self.runner.poll(now)
        for tx in self.ep.poll(now):
            pkt = SimPacket(self.name, tx.dst, tx.data, tx.ect)
            head = pkt.header()
            self.uplink.enqueue(pkt, head[0] if head else None)
        if self.local is not None:
            for tx in self.local.poll(now):
                pkt = SimPacket(self.name, tx.dst, tx.data, tx.ect)
                head = pkt.header()
                self.local_ports[tx.dst].enqueue(pkt, head[0] if head else None)
        times = [t for t in (self.ep.next_deadline(), self.local.next_deadline() if self.local else None,
                             self.runner.next_deadline(now) if self.runner else None) if t is not None]
        if not times:
            return
        t = min(times)
        if t <= now:  # the endpoint must always make progress; never spin on one instant
            self.stalls += 1
            t = now + 1e-9
        if self._wake_at is not None and now <= self._wake_at <= t:
            return
        self._wake_at = t
        self.net.sim.at(t, self._wake, t)

    def _wake(self, t: float) -> None:
        if self._wake_at != t:
            return
        self._wake_at = None
        self.kick()


class Network:
    """Hosts, switches and ports; build with `star` or `leaf_spine`."""

    def __init__(self, cfg: TransportConfig, seed: int = 1, load_balancing: str = "spray") -> None:
        self.cfg = cfg
        self.sim = Sim()
        self.rng = random.Random(seed)
        self.load_balancing = load_balancing
        self.hosts: dict[str, SimHost] = {}
        self.switches: dict[str, Switch] = {}
        self.ports: list[Port] = []
        self.unroutable = 0

    def host(self, name: str) -> SimHost:
        h = self.hosts[name] = SimHost(self, name, self.cfg)
        return h

    def switch(self, name: str) -> Switch:
        s = self.switches[name] = Switch(self, name)
        return s

    def link(self, a, b, spec: LinkSpec) -> tuple[Port, Port]:
        pa = Port(self, f"{a.name}->{b.name}", b, spec, isinstance(a, Switch))
        pb = Port(self, f"{b.name}->{a.name}", a, spec, isinstance(b, Switch))
        self.ports += [pa, pb]
        for node, port in ((a, pa), (b, pb)):
            if isinstance(node, SimHost):
                node.uplink = port
        return pa, pb

    # -- workloads and running ---------------------------------------------------
    def local_link(self, a: "SimHost", b: "SimHost", spec: LinkSpec, cfg: TransportConfig) -> None:
        """A direct GPU-GPU channel inside a server; each end gets the local endpoint of `cfg`."""
        pa = Port(self, f"{a.name}->{b.name}", b, spec, False)
        pb = Port(self, f"{b.name}->{a.name}", a, spec, False)
        self.ports += [pa, pb]
        for host, peer, port in ((a, b, pa), (b, a, pb)):
            if host.local is None:
                host.local = Endpoint(host.name, cfg)
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

    def run(self, until_s: float) -> None:
        self.sim.run(until_s, self.finished)

    # -- measurements -------------------------------------------------------------
    def switch_ports(self) -> list[Port]:
        return [p for p in self.ports if p.limit or p.capacity < 1 << 30]

    def drops(self) -> int:
        return sum(p.stats.drops for p in self.ports)

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
               seed: int = 1) -> Network:
    """Two-tier Clos; spine_delays_s gives each spine's links their own delay (path skew)."""
    net = Network(cfg, seed, load_balancing)
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
            spec.rate_bps, spine_delays_s[j], spec.buffer_cells, spec.ecn, spec.credit_limit)
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
                  seed: int = 1) -> Network:
    """Any `testbed.topo` Topology (leaf-spine, fat-tree, servers of GPUs) as a simulated network.

    Switch routes are the topology's equal-cost next hops; a host uses its
    first NIC port (a dual-homed host's second port is not simulated); the GPUs
    of a server are joined by direct links of `local` driven by a second
    endpoint configured with `local_cfg` (its rate and RTT).
    """
    net = Network(cfg, seed, load_balancing)
    for name in topo.hosts:
        net.host(name)
    for name in topo.switches:
        net.switch(name)
    port_of: dict[tuple[str, int], Port] = {}
    for link in topo.links:
        a = net.hosts.get(link.a) or net.switches[link.a]
        b = net.hosts.get(link.b) or net.switches[link.b]
        pa, pb = net.link(a, b, host if link.tier == "host" else fabric)
        port_of[(link.a, link.a_port)] = pa
        port_of[(link.b, link.b_port)] = pb
    for name in topo.hosts:
        net.hosts[name].uplink = port_of[(name, topo.ports(name)[0].number)]
    for sw in topo.switches:
        for dst in topo.hosts:
            hops = topo.next_hops(sw, dst)
            if hops:
                net.switches[sw].routes[dst] = [port_of[(sw, p)] for p in hops]
    if topo.local_links:
        if local is None or local_cfg is None:
            raise ValueError("a topology with servers needs the local channel's LinkSpec and config")
        for link in topo.local_links:
            net.local_link(net.hosts[link.a], net.hosts[link.b], local, local_cfg)
    return net
