"""The simulator's telemetry: switch counters and host series on the virtual clock.

Switch samples are the emulated run's `telemetry.jsonl` lines
(`testbed.telemetry.collector.SwitchSample`), so one reader serves both:
`{"t_s", "switch", "tx": {port: {"packets", "bytes"}}, "rx": {...},
"drops_packets": {reason: packets}, "ecn_marks_packets": {port: packets},
"max_qdepth_packets": {port: packets}}`, counters cumulative since the switch
started (a restarted switch counts from zero again, as its P4 counters do),
the queue peak the deepest data queue since the previous sample. The
simulator adds what the emulation's poll cannot give cheaply:
`"port_drops_packets": {port: packets}` (turned away by the port's full
queue, lost on its cut or lossy cable, or flushed when its switch stopped)
and `"tx_by_type": {port: {cell type: {"packets", "bytes"}}}`. Drop reasons:
`queue_full` (data queue), `credit_queue_full` (the credit meter's queue),
`link_down` and `link_loss` (frames it sent that its cable lost),
`switch_down` (frames that reached it, or were queued in it, while it was
stopped), `no_route`. A port's `tx` is its egress, its `rx` what arrived
through it from its peer. The first sample is at 0 (before any traffic),
then one every `period_s` of the run's clock (observed between events, so
sampling changes nothing of the run) and a last one at the end.

Host series go in `records/<host>.stats.json` under "series" (host_series.py;
`in_order_cells` through the NIC, a local channel's not counted).
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.cells import wire
from testbed.p4model.telemetry import INTERVAL_S
from testbed.simulation.host_series import HostSeries
from testbed.simulation.sim import Network, Port

PERIOD_S = INTERVAL_S  # on the scenario's clock (a slowed run samples every PERIOD_S x its time stretch)


class Sampler:
    """Samples `net` (built by sim.from_topology) every `period_s` of virtual time."""

    def __init__(self, net: Network, period_s: float = PERIOD_S) -> None:
        if net.topo is None:
            raise ValueError("telemetry needs a network built from a topology (sim.from_topology)")
        if period_s <= 0:
            raise ValueError("the sample period must be above 0")
        self.net = net
        self.period_s = period_s
        topo = net.topo
        self.switch_ports: dict[str, list[tuple[int, Port]]] = {
            s: [(p.number, net.port_of[(s, p.number)]) for p in topo.ports(s)] for s in topo.switches}
        self.host_ports: dict[str, list[Port]] = {
            h: [net.port_of[(h, p.number)] for p in topo.ports(h)] for h in topo.hosts}
        self.samples: list[dict] = []
        self.hosts = HostSeries(topo.hosts)
        self._zero: dict[str, dict] = {s: {} for s in topo.switches}  # counters at the switch's (re)start
        self._last_t = None
        self._n = 0

    def start(self) -> "Sampler":
        self.net.sim.every(0.0, self._tick)
        return self

    def _tick(self) -> float:
        self.sample()
        self._n += 1
        return self._n * self.period_s  # on the grid, with no drift from adding

    def restarted(self, switch: str) -> None:
        """The switch started again: its counters count from zero from now."""
        self._zero[switch] = self._counts(switch)

    def finish(self) -> None:
        """The last sample, at the end of the run (unless one was just taken)."""
        if self._last_t != self.net.sim.now:
            self.sample()

    @staticmethod
    def _port_counts(port: Port) -> dict:
        st, back = port.stats, port.reverse.stats
        return {"tx": (st.tx_packets, st.tx_bytes), "rx": (back.delivered_packets, back.delivered_bytes),
                "marks": st.ce_marks, "queue_full": st.drops, "credit_queue_full": st.credit_drops,
                "link_down": st.down_losses, "link_loss": st.loss_drops, "flushed": st.flushed,
                "types": {k: tuple(v) for k, v in port.tx_types.items()}}

    def _counts(self, switch: str) -> dict:
        return {"ports": {n: self._port_counts(p) for n, p in self.switch_ports[switch]},
                "switch_down": self.net.switches[switch].down_drops,
                "no_route": self.net.switches[switch].no_route}

    def sample(self) -> None:
        now = self.net.sim.now
        self._last_t = now
        for switch, ports in self.switch_ports.items():
            counts, zero = self._counts(switch), self._zero[switch]
            zp = zero.get("ports", {})
            tx, rx, marks, peaks, port_drops, types = {}, {}, {}, {}, {}, {}
            drops = {"queue_full": 0, "credit_queue_full": 0, "link_down": 0, "link_loss": 0,
                     "switch_down": counts["switch_down"] - zero.get("switch_down", 0),
                     "no_route": counts["no_route"] - zero.get("no_route", 0)}
            for number, port in ports:
                c, z = counts["ports"][number], zp.get(number)
                d = (lambda key: c[key] - z[key]) if z else (lambda key: c[key])
                tx[number] = {"packets": c["tx"][0] - (z["tx"][0] if z else 0),
                              "bytes": c["tx"][1] - (z["tx"][1] if z else 0)}
                rx[number] = {"packets": c["rx"][0] - (z["rx"][0] if z else 0),
                              "bytes": c["rx"][1] - (z["rx"][1] if z else 0)}
                if d("marks"):
                    marks[number] = d("marks")
                if port.peak_packets:
                    peaks[number] = port.peak_packets
                port.peak_packets = len(port.data_q)  # the next period starts from what is queued
                lost = 0
                for key in ("queue_full", "credit_queue_full", "link_down", "link_loss"):
                    drops[key] += d(key)
                    lost += d(key)
                drops["switch_down"] += d("flushed")
                lost += d("flushed")
                port_drops[number] = lost
                zt = z["types"] if z else {}
                types[number] = {wire.TYPE_NAMES.get(k, "other"): {"packets": v[0] - zt.get(k, (0, 0))[0],
                                                                    "bytes": v[1] - zt.get(k, (0, 0))[1]}
                                 for k, v in c["types"].items()}
            self.samples.append({"t_s": round(now, 6), "switch": switch, "tx": tx, "rx": rx,
                                 "drops_packets": {k: v for k, v in drops.items() if v},
                                 "ecn_marks_packets": marks, "max_qdepth_packets": peaks,
                                 "port_drops_packets": port_drops, "tx_by_type": types})
        for host, ports in self.host_ports.items():
            h = self.net.hosts[host]
            self.hosts.append(host, now, h.ep.in_order_cells, [p.stats.tx_packets for p in ports],
                              sum(p.stats.tx_bytes for p in ports),
                              sum(p.reverse.stats.delivered_bytes for p in ports), h.runner)

    def write(self, path: Path) -> None:
        with open(path, "w") as out:
            for sample in self.samples:
                out.write(json.dumps(sample) + "\n")

    def host_series(self, host: str, cell_size: int) -> dict:
        return self.hosts.document(host, self.period_s, cell_size)
