"""Polling the switches during a run: port counters, drops, marks, queue peaks.

Everything comes from the fabric program's own counters and registers
(p4src/README.md), so it means the same on both targets.  Counters are read
over P4Runtime on both; bmv2's P4Runtime server has no register reads, so
there the queue peak register is zeroed at the start and read at the end
through its Thrift CLI (testbed/bmv2_cli.py): one peak per port over the
whole run, where the builtin target gives one per sample.  Samples
are kept in memory and written as JSON lines at the end; each sample carries
its time in seconds since the run's epoch and every value names its unit.

This poll is slow (every 5 s): it is the P4Runtime view users read.  The
fine series of a builtin run (every port every 100 ms, per cell type) comes
from the switch processes themselves (testbed/p4model/telemetry.py, no
P4Runtime); the run writes those samples to telemetry.jsonl instead of these
when every switch has them (emulation/run.py).  bmv2 runs keep these.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.bmv2_cli import Bmv2CliError, read_and_reset_register
from testbed.control.p4runtime_client import P4RuntimeClient, P4RuntimeError
from testbed.p4model.telemetry import DROP_REASONS


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


PORT_COUNTERS = ("FabricEgress.tx_port", "FabricIngress.rx_port", "FabricEgress.ecn_marks")
DROP_COUNTERS = ("FabricIngress.drops", "FabricEgress.drops")
PEAK_REGISTER = "FabricEgress.max_qdepth"


def read_switch(client: P4RuntimeClient, t_s: float, reset_peaks: bool = True,
                ports: list[int] | None = None, peaks_over_p4runtime: bool = True) -> SwitchSample:
    """One sample.  With `ports`, only those cells of the per-port arrays are read,
    in one Read, and the peaks reset in one Write: a P4Runtime call runs on the
    builtin switch's packet thread, and reading all 512 cells of four arrays every
    0.5 s held packets for milliseconds (p99 dequeue lag 2-8 ms against 0.1-0.3 ms
    without polling, 6-switch incast at 5 Mbit/s)."""
    if ports is not None:
        return _read_ports(client, t_s, reset_peaks and peaks_over_p4runtime, sorted(ports), peaks_over_p4runtime)
    tx = client.read_counter("FabricEgress.tx_port")
    rx = client.read_counter("FabricIngress.rx_port")
    drops: dict[str, int] = {}
    for counter in ("FabricIngress.drops", "FabricEgress.drops"):
        for index, (packets, _) in client.read_counter(counter).items():
            if packets:
                reason = DROP_REASONS.get(index, f"reason_{index}")
                drops[reason] = drops.get(reason, 0) + packets
    marks = {i: p for i, (p, _) in client.read_counter("FabricEgress.ecn_marks").items() if p}
    peaks = ({i: v for i, v in client.read_register(PEAK_REGISTER).items() if v}
             if peaks_over_p4runtime else {})
    if reset_peaks and peaks_over_p4runtime:
        for index in peaks:
            client.write_register("FabricEgress.max_qdepth", index, 0)
    return SwitchSample(t_s, client.name, dict(tx), dict(rx), drops, marks, peaks)


def _read_ports(client: P4RuntimeClient, t_s: float, reset_peaks: bool, ports: list[int],
                with_peaks: bool = True) -> SwitchSample:
    from p4.v1 import p4runtime_pb2

    from testbed.control.p4info_index import decode_value, encode_value

    index = client.index
    if index is None:
        raise P4RuntimeError(f"{client.name}: no pipeline set yet")
    ids = {index.counter(name).preamble.id: name for name in PORT_COUNTERS + DROP_COUNTERS}
    entities = []
    for name in PORT_COUNTERS:
        for port in ports:
            entity = p4runtime_pb2.Entity()
            entity.counter_entry.counter_id = index.counter(name).preamble.id
            entity.counter_entry.index.index = port
            entities.append(entity)
    for name in DROP_COUNTERS:  # 16 cells each (fabric.p4's DROP_REASONS): read whole
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = index.counter(name).preamble.id
        entities.append(entity)
    register = index.register(PEAK_REGISTER)
    for port in ports if with_peaks else ():
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = register.preamble.id
        entity.register_entry.index.index = port
        entities.append(entity)
    values: dict[str, dict[int, tuple[int, int]]] = {name: {} for name in PORT_COUNTERS + DROP_COUNTERS}
    peaks: dict[int, int] = {}
    for e in client.read(entities):
        if e.HasField("counter_entry"):
            c = e.counter_entry
            values[ids[c.counter_id]][c.index.index] = (c.data.packet_count, c.data.byte_count)
        elif e.HasField("register_entry"):
            value = decode_value(e.register_entry.data.bitstring)
            if value:
                peaks[e.register_entry.index.index] = value
    drops: dict[str, int] = {}
    for name in DROP_COUNTERS:
        for i, (packets, _) in values[name].items():
            if packets:
                reason = DROP_REASONS.get(i, f"reason_{i}")
                drops[reason] = drops.get(reason, 0) + packets
    if reset_peaks and peaks:
        width = register.type_spec.bitstring.bit.bitwidth or 64
        updates = []
        for port in peaks:
            update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
            update.entity.register_entry.register_id = register.preamble.id
            update.entity.register_entry.index.index = port
            update.entity.register_entry.data.bitstring = encode_value(0, width, f"{PEAK_REGISTER}[{port}]")
            updates.append(update)
        client.write(updates)
    tx, rx, marks = (values[name] for name in PORT_COUNTERS)
    # every port asked for is kept, zeros included: an idle link is a figure, not a gap
    return SwitchSample(t_s, client.name, dict(tx), dict(rx),
                        drops, {p: c[0] for p, c in marks.items() if c[0]}, peaks)


@dataclass
class Collector:
    """Samples every switch once at start (before any traffic), every
    `interval_s` while traffic flows, and once at stop, over P4Runtime.

    Every poll is work on the switches' packet threads and shows up in their
    departure lag: with the pure-Python protobuf that p4runtime 1.4.1 pins,
    one poll costs a builtin switch about 3.4 ms of CPU (default scenario,
    spray variant, worst p99 lag: 5-11 ms polled every 0.5 s, about 2 ms
    every 5 s, 1.3-1.8 ms unpolled).  Figures that need precision, like link
    utilisation, come from the first and final samples over the traffic
    window of the agents' records, so the series in between can be sparse.
    """

    clients: list[P4RuntimeClient]
    epoch: float
    interval_s: float = 5.0
    ports: dict[str, list[int]] | None = None  # switch -> its port numbers (None: read whole arrays)
    thrift_ports: dict[str, int] | None = None  # bmv2: switch -> Thrift port, for the peak register
    samples: list[SwitchSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="telemetry")

    def start(self) -> "Collector":
        self.sample_once()  # the baseline, before the agents send anything
        self._cli_peaks()  # bmv2: zero the peaks, as the first P4Runtime read does on the builtin target
        self._thread.start()
        return self

    def sample_once(self) -> None:
        now = time.time() - self.epoch
        for client in self.clients:
            try:
                ports = None if self.ports is None else self.ports.get(client.name)
                self.samples.append(read_switch(client, now, ports=ports,
                                                peaks_over_p4runtime=self.thrift_ports is None))
            except P4RuntimeError as error:
                self.errors.append(str(error))

    def _cli_peaks(self) -> None:
        """bmv2 only: read and zero each switch's peak register; the peaks join its latest sample."""
        if self.thrift_ports is None:
            return
        latest = {s.switch: s for s in self.samples}
        for client in self.clients:
            try:
                peaks = read_and_reset_register(client.name, self.thrift_ports[client.name], PEAK_REGISTER)
            except Bmv2CliError as error:
                self.errors.append(str(error))
                continue
            if client.name in latest:
                wanted = None if self.ports is None else set(self.ports.get(client.name, ()))
                latest[client.name].max_qdepth.update(
                    {p: v for p, v in peaks.items() if wanted is None or p in wanted})

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample_once()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.sample_once()  # the final totals
        self._cli_peaks()

    def write(self, path: Path) -> None:
        with open(path, "w") as out:
            for sample in self.samples:
                out.write(json.dumps(sample.to_json()) + "\n")
