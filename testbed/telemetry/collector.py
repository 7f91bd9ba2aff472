"""Polling the switches during a run: port counters, drops, marks, queue peaks.

Everything comes from the fabric program's own counters and registers over
P4Runtime (p4src/README.md), so it reads the same on both targets.  Samples
are kept in memory and written as JSON lines at the end; each sample carries
its time in seconds since the run's epoch and every value names its unit.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.control.p4runtime_client import P4RuntimeClient, P4RuntimeError

DROP_REASONS = {1: "no_route", 2: "ttl_expired", 3: "bad_cell_length", 4: "credit_over_rate", 5: "not_ipv4",
                6: "bad_ipv4_checksum", 7: "port_unconfigured"}


@dataclass
class SwitchSample:
    t_s: float
    switch: str
    tx: dict[int, tuple[int, int]]  # port -> (packets, bytes)
    rx: dict[int, tuple[int, int]]
    drops: dict[str, int]  # reason -> packets, ingress and egress added
    ecn_marks: dict[int, int]  # port -> packets marked CE
    max_qdepth: dict[int, int]  # port -> packets, since the previous sample

    def to_json(self) -> dict:
        return {"t_s": round(self.t_s, 4), "switch": self.switch,
                "tx": {p: {"packets": c[0], "bytes": c[1]} for p, c in self.tx.items()},
                "rx": {p: {"packets": c[0], "bytes": c[1]} for p, c in self.rx.items()},
                "drops_packets": self.drops, "ecn_marks_packets": self.ecn_marks,
                "max_qdepth_packets": self.max_qdepth}


def read_switch(client: P4RuntimeClient, t_s: float, reset_peaks: bool = True) -> SwitchSample:
    tx = client.read_counter("FabricEgress.tx_port")
    rx = client.read_counter("FabricIngress.rx_port")
    drops: dict[str, int] = {}
    for counter in ("FabricIngress.drops", "FabricEgress.drops"):
        for index, (packets, _) in client.read_counter(counter).items():
            if packets:
                reason = DROP_REASONS.get(index, f"reason_{index}")
                drops[reason] = drops.get(reason, 0) + packets
    marks = {i: p for i, (p, _) in client.read_counter("FabricEgress.ecn_marks").items() if p}
    peaks = {i: v for i, v in client.read_register("FabricEgress.max_qdepth").items() if v}
    if reset_peaks:
        for index in peaks:
            client.write_register("FabricEgress.max_qdepth", index, 0)
    return SwitchSample(t_s, client.name, {p: c for p, c in tx.items() if c[0]},
                        {p: c for p, c in rx.items() if c[0]}, drops, marks, peaks)


@dataclass
class Collector:
    """Samples every switch every `interval_s` in a background thread."""

    clients: list[P4RuntimeClient]
    epoch: float
    interval_s: float = 0.5
    samples: list[SwitchSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="telemetry")

    def start(self) -> "Collector":
        self._thread.start()
        return self

    def sample_once(self) -> None:
        now = time.time() - self.epoch
        for client in self.clients:
            try:
                self.samples.append(read_switch(client, now))
            except P4RuntimeError as error:
                self.errors.append(str(error))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample_once()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.sample_once()  # the final totals

    def write(self, path: Path) -> None:
        with open(path, "w") as out:
            for sample in self.samples:
                out.write(json.dumps(sample.to_json()) + "\n")
