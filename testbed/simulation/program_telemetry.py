"""The 100 ms telemetry of a run on the program network (program_net.py).

Switch samples are what an emulated fabric process of the native engine writes
(`p4model.telemetry.engine_records`): every port's counters from the engine in
one call, the program's own counters (`FabricEgress.tx_port`,
`FabricIngress.rx_port`, `FabricEgress.ecn_marks`, the drop counters by reason)
read from its memory, the queue peak since the previous sample.  So the
telemetry holds what the program counted, not a model of it.  Host series are
sim.py's (host_series.py).

The first sample is at 0, then one every `period_s` of the run's clock and a
last one at the end.  A sample sees every event at or before its time; the
engine stops at each sample time (a split of its work that changes nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.p4model.telemetry import engine_records
from testbed.simulation.host_series import HostSeries
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
        self.hosts = HostSeries(net.hosts)
        self._n = 0
        self._last_ns: int | None = None

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
            self.hosts.append(name, t_s, host.ep.in_order_cells, list(host.port_tx), host.tx_bytes, host.rx_bytes,
                              host.runner)

    def write(self, path: Path) -> None:
        with open(path, "w") as out:
            for sample in self.samples:
                out.write(json.dumps(sample) + "\n")

    def host_series(self, host: str, cell_size: int) -> dict:
        return self.hosts.document(host, self.period_s, cell_size)
