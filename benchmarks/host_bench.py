"""Host transport speed: simulated cells per wall second, codec rate, loopback goodput."""

from __future__ import annotations

import time

from testbed.cells import wire

from testbed.host import workloads
from testbed.host.config import TransportConfig
from testbed.simulation.sim import LinkSpec, star


def _incast(cc: str) -> str:
    cfg = TransportConfig(cc=cc, link_rate_bps=100e6, bdp_cells=16)
    spec = LinkSpec(rate_bps=100e6, delay_s=cfg.rtt_s / 4 - cfg.cell_time_s / 2, buffer_cells=32,
                    ecn=(3.2, 16, 0.2))
    net = star(9, cfg, spec)
    net.load(workloads.incast([f"h{i}" for i in range(1, 9)], "h9", 256 * 1024))
    started = time.perf_counter()
    net.run(10.0)
    wall = time.perf_counter() - started
    cells = sum(p.stats.tx_packets for p in net.ports)
    done_ms = max(r["delivered_us"] for r in net.records() if r["kind"] == "message_delivered") / 1e3
    return (f"sim incast 8:1 {cc}: {cells / wall:,.0f} packet-hops/s, {net.sim.events / wall:,.0f} events/s, "
            f"incast done at virtual {done_ms:.1f} ms, wall {wall * 1e3:.0f} ms, max queue "
            f"{net.max_queue_cells():.1f} cells, drops {net.drops()} packets")


def _codec() -> str:
    cell = wire.CellPacket(type=wire.DATA, flow_id=1, msg_id=2, psn=3, aux=4096, body=bytes(1024))
    n = 50_000
    started = time.perf_counter()
    for _ in range(n):
        wire.decode(wire.encode(cell), 1024)
    wall = time.perf_counter() - started
    return f"wire encode+decode: {n / wall:,.0f} cells/s ({wall / n * 1e6:.2f} us/cell)"


def run() -> list[str]:
    return [_codec()] + [_incast(cc) for cc in ("tita", "dcqcn", "none")]
