"""The 100 ms telemetry of a run on the program network (program_net.py).

Switch samples are what an emulated fabric process of the native engine writes
(`p4model.telemetry.engine_records`): every port's counters from the engine in
one call, the program's own counters (`FabricEgress.tx_port`,
`FabricIngress.rx_port`, `FabricEgress.ecn_marks`, the drop counters by reason)
read from its memory, the queue peak since the previous sample.  So the
telemetry holds what the program counted, not a model of it.  Host series are
sim.py's (`records/<host>.stats.json` "series"): `t_s`, `in_order_cells`,
`port_tx` (frames per NIC port), `tx_bytes` and `rx_bytes` (frames on the NIC's
ports, cumulative), `messages_delivered`, `messages_acked`, `period_s`,
`data_cell_payload_bytes`.

The first sample is at 0, then one every `period_s` of the run's clock and a
last one at the end.  A sample sees every event at or before its time; the
engine stops at each sample time (a split of its work that changes nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.p4model.telemetry import engine_records
from testbed.simulation.program_net import ProgramNetwork


class ProgramSampler:
    """Samples a ProgramNetwork every `period_s` of virtual time."""

    def __init__(self, net: ProgramNetwork, period_s: float) -> None:
        if period_s <= 0:
            raise ValueError("the sample period must be above 0")
        self.net, self.period_s = net, period_s
        fabric = net.fabric
        self.names = {i: name for name, i in fabric.index.items()}
        self.pipelines = {i: fabric.switches[name].datapath.pipeline for name, i in fabric.index.items()}
        self.samples: list[dict] = []
        self.series: dict[str, dict[str, list]] = {
            h: {"t_s": [], "in_order_cells": [], "port_tx": [], "tx_bytes": [], "rx_bytes": [],
                "messages_delivered": [], "messages_acked": []} for h in net.hosts}
        self._n = 0
        self._last_ns: int | None = None
        self._records_seen: dict[str, int] = {}
        self._acked: dict[str, int] = {}

    def start(self) -> "ProgramSampler":
        self.net.every(0, self._tick)
        return self

    def restarted(self, switch: str) -> None:
        """`switch` runs a new pipeline (it was restarted): its program's counters are read from it."""
        self.pipelines[self.net.fabric.index[switch]] = self.net.fabric.switches[switch].datapath.pipeline

    def _tick(self, now_ns: int) -> int:
        self.sample(now_ns)
        self._n += 1
        return round(self._n * self.period_s * 1e9)

    def finish(self) -> None:
        if self._last_ns != self.net.now_ns:
            self.sample(self.net.now_ns)

    def sample(self, now_ns: int) -> None:
        self._last_ns = now_ns
        t_s = now_ns / 1e9
        self.samples.extend(engine_records(self.net.engine, self.names, self.pipelines, t_s))
        for name, host in self.net.hosts.items():
            s = self.series[name]
            s["t_s"].append(round(t_s, 6))
            s["in_order_cells"].append(host.ep.in_order_cells)
            s["port_tx"].append(list(host.port_tx))
            s["tx_bytes"].append(host.tx_bytes)
            s["rx_bytes"].append(host.rx_bytes)
            runner = host.runner
            s["messages_delivered"].append(len(runner.received) if runner else 0)
            if runner is not None:
                seen = self._records_seen.get(name, 0)
                self._acked[name] = self._acked.get(name, 0) + sum(
                    1 for r in runner.records[seen:] if r["kind"] == "message_sent")
                self._records_seen[name] = len(runner.records)
            s["messages_acked"].append(self._acked.get(name, 0))

    def write(self, path: Path) -> None:
        with open(path, "w") as out:
            for sample in self.samples:
                out.write(json.dumps(sample) + "\n")

    def host_series(self, host: str, cell_size: int) -> dict:
        return dict(self.series[host], period_s=self.period_s, data_cell_payload_bytes=cell_size)
