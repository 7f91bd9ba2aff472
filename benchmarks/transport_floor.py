"""The transport's own CPU floor: what the host agent's Python transport costs per datagram with no
sockets, no kernel and no real time.

The model: N hosts, each an `Endpoint` and a `WorkloadRunner` (testbed/host/app.py) as an agent
builds them from a scenario (its link rate, cell size, BDP, base RTT and transport section), all in
one process. Host i sends one message to host i + N/2 (a permutation) at time 0. The network is
ideal: a datagram a host's transport hands out arrives at its destination at its `Transmit.start`
(when the NIC pacer puts it on the wire) + its serialisation at the host link rate + a fixed delay,
the same for every datagram; no queue, no loss, no reordering beyond what those times give.

The driver's rule, on a virtual clock: one heap holds every arrival and each host's next deadline
(`ep.polled_deadline` and `runner.next_deadline(t)`, the earlier, as the agent's `_kick` leaves
them). It takes the earliest event; at equal times a deadline goes before an arrival (the agent's
replay polls what is due at or before an arrival first). A deadline polls its host: the runner,
then the endpoint, whose transmits become arrivals. An arrival is received (`ep.receive` at its
time) and its host is then polled at that time: one poll per arrival, as an agent that reads one
arrival per wake-up polls (the agent's replay polls once after each batch it reads). A host whose
next deadline is not after the time it was polled at is polled again just after it (the agent's
rule for a poll that made no progress). A deadline superseded by a later poll is skipped. It ends
when no event is left, or at `limit_s` of virtual time.

What it counts: datagrams sent (transmits handed out) and received (`ep.receive` calls), as the
agent's tx_datagrams and rx_datagrams do, and the process's CPU time (`time.process_time`) for the
whole drive, the driver's own heap included; payloads are built before the clock starts, as an
agent does before its epoch (`WorkloadRunner.prepare`). A drive is complete when every host has
what the agent's `_done` asks for (every message to it delivered, its own sent and acknowledged)
with no verification failure.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.cells.wire import FRAME_OVERHEAD
from testbed.host.app import WorkloadRunner
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint
from testbed.host.workloads import MessageSpec
from testbed.scenario.load import load_scenario

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "fattree.yaml"

_DEADLINE, _ARRIVAL = 0, 1  # at equal times a deadline is served first


@dataclass(frozen=True)
class IdealNetwork:
    """Every datagram: its wire start + its bytes (with Ethernet/IP/UDP headers) at `rate_bps` +
    `delay_s`."""

    rate_bps: float
    delay_s: float

    def arrival(self, start: float, udp_payload_bytes: int) -> float:
        return start + (udp_payload_bytes + FRAME_OVERHEAD) * 8 / self.rate_bps + self.delay_s


@dataclass(frozen=True)
class Drive:
    """What one drive did: datagrams, CPU seconds, virtual seconds, and whether it completed."""

    hosts: int
    message_bytes: int
    cc: str
    tx: int
    rx: int
    polls: int
    cpu_s: float
    virtual_s: float
    delivered: int  # messages delivered, all hosts (verify_failures: how many of them carried wrong bytes)
    expected: int  # messages the workload sends
    verify_failures: int
    incomplete: tuple[str, ...]  # hosts whose agent would not be done

    @property
    def complete(self) -> bool:
        return not self.incomplete and self.verify_failures == 0 and self.delivered == self.expected

    @property
    def us_per_datagram(self) -> float:
        return self.cpu_s * 1e6 / (self.tx + self.rx) if self.tx + self.rx else float("inf")


def config_from_scenario(path: Path = SCENARIO, cc: str | None = None) -> tuple[TransportConfig, IdealNetwork, int]:
    """The transport settings an agent of the scenario runs with (testbed/emulation/run.py passes
    the same), `cc` replacing the scenario's; the ideal network whose fixed delay makes a DATA cell
    and its ACK take the scenario's base RTT; and the scenario's seed."""
    scenario = load_scenario(str(path))
    d = scenario.derived
    cfg = TransportConfig(
        cc=cc or scenario.transport.cc, cell_size=scenario.fabric.cell_size,
        link_rate_bps=scenario.links.host.rate_mbps * 1e6, bdp_cells=d.bdp_cells,
        base_rtt_s=d.base_rtt_us / 1e6, reorder_window_cells=scenario.transport.reorder_window_cells,
        entropy_values=scenario.fabric.entropy_values,
    ).with_scenario(scenario.to_dict()["transport"])
    serialise = (d.cell_wire_bytes + d.credit_wire_bytes) * 8 / cfg.link_rate_bps
    network = IdealNetwork(cfg.link_rate_bps, (d.base_rtt_us / 1e6 - serialise) / 2)
    return cfg, network, scenario.seed


def permutation(hosts: int, message_bytes: int) -> list[MessageSpec]:
    """Host i sends one message to host i + hosts/2 (modulo hosts), all at time 0."""
    names = [f"h{i}" for i in range(1, hosts + 1)]
    return [MessageSpec(names[i], names[(i + hosts // 2) % hosts], 0, message_bytes) for i in range(hosts)]


@dataclass
class Hosts:
    """The hosts of a workload, each an endpoint and a runner with its payloads built ahead."""

    addr: dict[str, str]
    endpoints: dict[str, Endpoint]
    runners: dict[str, WorkloadRunner]
    expected_in: dict[str, set[tuple[str, int]]]

    @classmethod
    def build(cls, cfg: TransportConfig, specs: list[MessageSpec], seed: int) -> "Hosts":
        names = sorted({s.src for s in specs} | {s.dst for s in specs}, key=lambda h: (len(h), h))
        addr = {h: f"10.0.{i // 250}.{i % 250 + 1}" for i, h in enumerate(names)}
        host_of = {a: h for h, a in addr.items()}
        endpoints, runners = {}, {}
        for h in names:
            endpoints[h] = Endpoint(addr[h], cfg, wire_from_schedule=True)
            runners[h] = WorkloadRunner(h, endpoints[h], specs, seed, addr_of=addr.__getitem__,
                                        name_of=lambda a: host_of.get(a, a))
            runners[h].prepare()
        expected_in = {h: {(s.src, s.msg_id) for s in specs if s.dst == h} for h in names}
        return cls(addr, endpoints, runners, expected_in)

    def not_done(self) -> tuple[str, ...]:
        """Hosts the agent's `_done` would not pass: a message to it missing, or one of its own
        not started or not acknowledged."""
        return tuple(h for h, r in self.runners.items()
                     if not (self.expected_in[h] <= r.received and r.finished()))


def drive(hosts: Hosts, network: IdealNetwork, limit_s: float) -> tuple[int, int, int, float]:
    """Run `hosts` on `network` by the module's rule; returns datagrams sent, datagrams received,
    polls (of a runner and its endpoint) and the virtual time of the last event served."""
    eps, runners, addr = hosts.endpoints, hosts.runners, hosts.addr
    host_of = {a: h for h, a in addr.items()}
    events: list[tuple] = [(0.0, _DEADLINE, i, h, 0) for i, h in enumerate(eps)]
    heapq.heapify(events)
    version = dict.fromkeys(eps, 0)  # a deadline entry counts only while it is its host's latest
    order = len(events)
    tx = rx = polls = 0
    t = 0.0
    arrival, pop, push = network.arrival, heapq.heappop, heapq.heappush
    while events:
        t, kind, _, h, item = pop(events)
        if t > limit_s:
            break
        if kind == _ARRIVAL:
            src, data = item
            eps[h].receive(t, src, data, 0, t)
            rx += 1
        elif item != version[h]:
            continue
        ep, runner = eps[h], runners[h]
        polls += 1
        runner.poll(t)
        here = addr[h]
        for x in ep.poll(t):
            tx += 1
            order += 1
            at = arrival(x.start, len(x.data))
            push(events, (at if at > t else t, _ARRIVAL, order, host_of[x.dst], (here, x.data)))
        due = ep.polled_deadline
        runner_due = runner.next_deadline(t)
        if runner_due is not None and (due is None or runner_due < due):
            due = runner_due
        version[h] += 1
        if due is not None:
            order += 1
            push(events, (due if due > t else t + 1e-9, _DEADLINE, order, h, version[h]))
    return tx, rx, polls, t


def measure(cc: str | None = None, hosts: int = 16, message_bytes: int = 2 << 20, scenario: Path = SCENARIO,
            limit_s: float = 600.0) -> Drive:
    """One drive of a permutation on the scenario's ideal network; CPU time of the drive only."""
    cfg, network, seed = config_from_scenario(scenario, cc)
    specs = permutation(hosts, message_bytes)
    built = Hosts.build(cfg, specs, seed)
    cpu0 = time.process_time()
    tx, rx, polls, virtual_s = drive(built, network, limit_s)
    cpu = time.process_time() - cpu0
    runners = built.runners.values()
    return Drive(hosts, message_bytes, cfg.cc, tx, rx, polls, cpu, virtual_s,
                 delivered=sum(len(r.received) for r in runners), expected=len(specs),
                 verify_failures=sum(r.verify_failures for r in runners), incomplete=built.not_done())


def median_drive(cc: str | None = None, rounds: int = 3, **kw) -> tuple[Drive, float, float]:
    """`rounds` drives; the median one by CPU per datagram (or the first incomplete one, if any),
    and the lowest and highest figures."""
    drives = sorted((measure(cc, **kw) for _ in range(rounds)), key=lambda d: d.us_per_datagram)
    shown = next((d for d in drives if not d.complete), drives[len(drives) // 2])
    return shown, drives[0].us_per_datagram, drives[-1].us_per_datagram


def line(d: Drive, low: float | None = None, high: float | None = None) -> str:
    """A benchmark line: its figure, its units and what it verified; with the range of its rounds."""
    verdict = ("every message delivered and verified" if d.complete else
               f"INCOMPLETE: {d.delivered} of {d.expected} messages delivered, {d.verify_failures} failed "
               f"verification, hosts not done: {', '.join(d.incomplete) or 'none'}")
    spread = "" if low is None else f", median of drives ranging {low:.1f}-{high:.1f}"
    return (f"transport floor, cc={d.cc} ({d.hosts} hosts in one process, permutation of "
            f"{d.message_bytes / (1 << 20):g} MiB, ideal network, virtual clock): {d.us_per_datagram:.1f} CPU us "
            f"per datagram sent or received{spread} ({d.tx} sent, {d.rx} received, {d.polls} polls, "
            f"{d.cpu_s:.2f} CPU s, virtual {d.virtual_s:.2f} s); {verdict}")
