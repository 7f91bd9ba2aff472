"""The N x N reachability matrix of a scenario's fabric, measured on its own program and plan.

Model.  The scenario's switches as the simulator runs them (`emulation.model_fabric`: the
scenario's P4 program with the controller's plan written through the in-process P4Runtime
control plane, every cable in the native engine).  For each ordered pair of hosts, one
conforming DATA cell leaves the source's first NIC port; the pair reaches iff the destination's
NIC received it, and the program drop counters that rose for it (read over P4Runtime from every
switch: `FabricIngress.drops`, `FabricEgress.drops`) are recorded with switch and reason.  A
source's cells go out together, a cell time apart (`measure` says when it falls back to one
cell at a time).

The rule it checks (`expected`): with tenants, a pair reaches iff both hosts are of one tenant,
and a pair across tenants is dropped once, at the source's ToR, as a foreign tenant (drop reason
11), or as an unbound port (8) when the source is in no tenant; without tenants every pair
reaches.  `check` names every pair that breaks it.
"""

from __future__ import annotations

import math
import socket
import struct
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from testbed.control.tenants import tenant_of_host
from testbed.p4model.telemetry import DROP_COUNTERS, DROP_REASONS

SETTLE_NS = 1_000_000_000  # at least a second of model time after a burst, and 4 base RTTs (`_Prober`)


@dataclass(frozen=True)
class PairResult:
    src: str
    dst: str
    delivered: bool
    drops: tuple[tuple[str, str, int], ...] = ()  # (switch, reason, packets) of each counter that rose


@dataclass
class Matrix:
    hosts: tuple[str, ...]
    tenant_of: dict[str, int]  # host -> tenant id (empty: no tenants)
    pairs: list[PairResult] = field(default_factory=list)

    def expected(self, src: str, dst: str) -> bool:
        """Whether the pair should reach: same tenant, or no tenants at all."""
        return not self.tenant_of or (src in self.tenant_of and self.tenant_of.get(src) == self.tenant_of.get(dst))

    def reason(self, src: str) -> str:
        """The drop reason a cell from `src` to another tenant is counted under at its ToR."""
        return "foreign_tenant" if src in self.tenant_of else "port_unbound"

    def check(self, tor_of: dict[str, str]) -> list[str]:
        """One line per pair that breaks the rule (empty: the matrix is as the tenants say)."""
        wrong = []
        for r in self.pairs:
            want = self.expected(r.src, r.dst)
            if want and not r.delivered:
                wrong.append(f"{r.src} -> {r.dst}: should reach, was dropped ({_drops_text(r)})")
            elif not want and r.delivered:
                wrong.append(f"{r.src} -> {r.dst}: crosses tenants, was delivered")
            elif not want and r.drops != ((tor_of[r.src], self.reason(r.src), 1),):
                wrong.append(f"{r.src} -> {r.dst}: crosses tenants; expected one {self.reason(r.src)} drop at "
                             f"{tor_of[r.src]}, counted {_drops_text(r)}")
        return wrong

    def summary(self) -> str:
        within = [r for r in self.pairs if self.expected(r.src, r.dst)]
        across = [r for r in self.pairs if not self.expected(r.src, r.dst)]
        line = f"reachability: {sum(r.delivered for r in within)}/{len(within)} pairs within tenants reach"
        if self.tenant_of:
            line += f", {sum(r.delivered for r in across)}/{len(across)} pairs across tenants reach"
        return line


def render(matrix: Matrix, tor_of: dict[str, str]) -> list[str]:
    """The matrix as text, a row per source: 'o' reaches as it should, '.' dropped as it should,
    'X' breaks the rule (`check` says how); then the summary and every broken pair."""
    wrong = {tuple(line.split(":")[0].split(" -> ")) for line in matrix.check(tor_of)}
    by_pair = {(r.src, r.dst): r for r in matrix.pairs}
    width = max(len(h) for h in matrix.hosts)
    names = {t: f"t{t}" for t in set(matrix.tenant_of.values())}
    lines = ["rows send, columns receive: o reaches, . dropped, as the tenants say (tN: tenant id N); "
             "X breaks the rule",
             " " * (width + 5) + " ".join(h[-2:].rjust(2) for h in matrix.hosts)]
    for src in matrix.hosts:
        cells = []
        for dst in matrix.hosts:
            r = by_pair.get((src, dst))
            cells.append(" -" if r is None else " X" if (src, dst) in wrong else " o" if r.delivered else " .")
        tenant = names.get(matrix.tenant_of.get(src), "--") if matrix.tenant_of else ""
        lines.append(f"{src.ljust(width)} {tenant.ljust(3)} " + " ".join(cells))
    return lines + [matrix.summary()] + matrix.check(tor_of)


def _drops_text(r: PairResult) -> str:
    return ", ".join(f"{reason} at {switch}" + (f" x{n}" if n > 1 else "") for switch, reason, n in r.drops) \
        or "no drop counted"


def _read_drops(fabric) -> dict[tuple[str, int], int]:
    """(switch, reason index) -> packets, from every switch's drop counters over P4Runtime."""
    out: dict[tuple[str, int], int] = {}
    index = fabric.p4info_index
    for switch, control in fabric.controls.items():
        for name in DROP_COUNTERS:
            entity = p4runtime_pb2.Entity()
            entity.counter_entry.counter_id = index.counter(name).preamble.id
            for e in control.read(entity):
                packets = e.counter_entry.data.packet_count
                if packets:
                    key = (switch, e.counter_entry.index.index)
                    out[key] = out.get(key, 0) + packets
    return out


def _delivered(fabric, host: str) -> int:
    """Frames the fabric delivered to any NIC port of `host`."""
    return sum(fabric.engine.delivered(i) for (name, _port), i in fabric.nic_index.items() if name == host)


class _Prober:
    """Cells into the built fabric, and what they did: deliveries and drop counters that rose."""

    def __init__(self, scenario) -> None:
        from testbed.emulation.model_fabric import build_scenario

        self.fabric = build_scenario(scenario, backend="native", seed=scenario.seed)
        self.scenario = scenario
        self.now = 0
        self.templates: dict[str, bytearray] = {}
        self.drops = _read_drops(self.fabric)
        wire_bits = 8 * scenario.derived.cell_wire_bytes
        self.spacing_ns = math.ceil(wire_bits / (scenario.links.host.rate_mbps * 1e6) * 1e9) + 1
        # a cell crosses the longest path well within a base RTT (there and back, with a cell and an ACK)
        self.settle_ns = max(SETTLE_NS, math.ceil(4 * scenario.derived.base_rtt_us * 1e3))

    def cell(self, src: str, dst: str) -> bytes:
        """A conforming DATA cell from `src` to `dst`: one frame built per source (model_fabric's),
        its destination address and IPv4 checksum rewritten per destination (UDP checksum 0)."""
        from testbed.emulation.model_fabric import data_cells

        template = self.templates.get(src)
        if template is None:
            frame = bytearray(data_cells(self.fabric, src, dst, 1, count=1)[0])
            frame[40:42] = b"\0\0"  # IPv4 lets UDP go without a checksum
            template = self.templates[src] = frame
        frame = bytearray(template)
        frame[30:34] = socket.inet_aton(self.scenario.topo.node(dst).ip)
        frame[24:26] = b"\0\0"
        total = sum(struct.unpack("!10H", frame[14:34]))
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        frame[24:26] = struct.pack("!H", ~total & 0xFFFF)
        return bytes(frame)

    def send(self, src: str, dsts: list[str]) -> tuple[list[bool], tuple]:
        """One cell from `src` to each of `dsts`, a cell time apart as its NIC would send them, the
        fabric then left to settle: which were delivered, and the drop counters that rose."""
        fabric = self.fabric
        before = [_delivered(fabric, dst) for dst in dsts]
        for i, dst in enumerate(dsts):
            fabric.inject(src, self.cell(src, dst), self.now + i * self.spacing_ns)
        end = self.now + len(dsts) * self.spacing_ns + self.settle_ns
        self.now = fabric.run_until(end, self.now)
        after = _read_drops(fabric)
        rose = tuple((switch, DROP_REASONS.get(reason, f"reason_{reason}"), n - self.drops.get((switch, reason), 0))
                     for (switch, reason), n in sorted(after.items()) if n > self.drops.get((switch, reason), 0))
        self.drops = after
        return [_delivered(fabric, dst) > n for dst, n in zip(dsts, before)], rose


def measure(scenario) -> Matrix:
    """Every ordered pair of the scenario's hosts (see the module docstring).  Each source sends
    to every other host in one burst; when what its burst's drop counters show is exactly one
    drop of the expected reason at its ToR per undelivered cell, each undelivered pair is given
    one, else that source's pairs are measured again one cell at a time (exact attribution)."""
    topo = scenario.topo
    matrix = Matrix(tuple(topo.hosts), tenant_of_host(scenario.tenants))
    prober = _Prober(scenario)
    for src in topo.hosts:
        dsts = [h for h in topo.hosts if h != src]
        delivered, rose = prober.send(src, dsts)
        lost = delivered.count(False)
        if not lost and not rose:
            matrix.pairs += [PairResult(src, dst, True) for dst in dsts]
        elif rose == ((topo.tors_of(src)[0], matrix.reason(src), lost),):
            one = ((topo.tors_of(src)[0], matrix.reason(src), 1),)
            matrix.pairs += [PairResult(src, dst, ok, () if ok else one) for dst, ok in zip(dsts, delivered)]
        else:
            for dst in dsts:
                (ok,), alone = prober.send(src, [dst])
                matrix.pairs.append(PairResult(src, dst, ok, alone))
    return matrix
