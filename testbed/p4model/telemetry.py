"""Fine telemetry inside a switch or fabric process: every port sampled every 100 ms.

Model: the data plane keeps the counters (the native engine in C, the Python
traffic manager on the fallback path) and a sampler thread, never the packet
thread, reads all ports of all the process's switches in one call per period
(NativeFabric.sample, TrafficManager.sample) and appends one JSON line per
switch to a file.  The lines are the simulator's (testbed.simulation.telemetry):
`tx`/`rx` per port (the program's FabricEgress.tx_port and FabricIngress.rx_port
counters when it has them, else the data plane's), `drops_packets` by reason
(`queue_full`, `link_loss` and the program's own drop counters),
`ecn_marks_packets` (FabricEgress.ecn_marks), `max_qdepth_packets` (the deepest
queue since the previous sample; reading restarts it), `port_drops_packets` and
`tx_by_type` (packets and bytes accepted for transmission per cell type).
The program's counters are read from its own memory, not over P4Runtime.
Counters are cumulative since the switch started; `t_s` is seconds since the
run's epoch.  The first sample is taken at start, the last at stop.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.cells.wire import TYPE_NAMES

INTERVAL_S = 0.1  # the simulator's period too (testbed/simulation/telemetry.py)
DROP_REASONS = {1: "no_route", 2: "ttl_expired", 3: "bad_cell_length", 4: "credit_over_rate", 5: "not_ipv4",
                6: "bad_ipv4_checksum", 7: "port_unconfigured", 8: "port_unbound", 9: "spoofed_mac",
                10: "spoofed_ipv4", 11: "foreign_tenant", 12: "tenant_over_rate_data",
                13: "tenant_over_rate"}  # fabric.p4's drop counters' indices
TX, RX, MARKS = "FabricEgress.tx_port", "FabricIngress.rx_port", "FabricEgress.ecn_marks"
DROP_COUNTERS = ("FabricIngress.drops", "FabricEgress.drops")


def _counter(pipeline, name: str):
    counters = getattr(pipeline, "counters", None) or {}
    return counters.get(name)


def switch_record(name: str, t_s: float, ports: list[dict], pipeline) -> dict:
    """One switch's line from its ports' data-plane figures (NativeFabric.sample or
    TrafficManager.sample records) and its program's counters (None: no program)."""
    tx_c, rx_c, marks_c = (_counter(pipeline, n) for n in (TX, RX, MARKS))
    tx, rx, marks, peaks, port_drops, port_lost, types = {}, {}, {}, {}, {}, {}, {}
    drops = {"queue_full": 0, "link_loss": 0}
    for r in ports:
        port = int(r["port"])
        packets, nbytes = r["class_packets"], r["class_bytes"]
        if tx_c is not None and port < tx_c.size:
            tx[port] = {"packets": int(tx_c.packets[port]), "bytes": int(tx_c.bytes[port])}
        else:
            tx[port] = {"packets": int(sum(packets)), "bytes": int(sum(nbytes))}
        if rx_c is not None and port < rx_c.size:
            rx[port] = {"packets": int(rx_c.packets[port]), "bytes": int(rx_c.bytes[port])}
        elif "rx" in r:
            rx[port] = {"packets": int(r["rx"]), "bytes": 0}
        if marks_c is not None and port < marks_c.size and marks_c.packets[port]:
            marks[port] = int(marks_c.packets[port])
        if r["peak"]:
            peaks[port] = int(r["peak"])
        drops["queue_full"] += int(r["queue_full"])
        drops["link_loss"] += int(r["lost"])
        port_drops[port] = int(r["queue_full"]) + int(r["lost"])
        if int(r["lost"]):
            port_lost[port] = int(r["lost"])  # dropped as its lossy cable's loss, before the tx counter
        by_type: dict[str, dict[str, int]] = {}
        for cls, n in enumerate(packets):
            if n:
                entry = by_type.setdefault(TYPE_NAMES.get(cls, "other"), {"packets": 0, "bytes": 0})
                entry["packets"] += int(n)
                entry["bytes"] += int(nbytes[cls])
        types[port] = by_type
    for counter_name in DROP_COUNTERS:
        counter = _counter(pipeline, counter_name)
        if counter is None:
            continue
        for index in range(counter.size):
            if counter.packets[index]:
                reason = DROP_REASONS.get(index, f"reason_{index}")
                drops[reason] = drops.get(reason, 0) + int(counter.packets[index])
    return {"t_s": round(t_s, 4), "switch": name, "tx": tx, "rx": rx,
            "drops_packets": {k: v for k, v in drops.items() if v}, "ecn_marks_packets": marks,
            "max_qdepth_packets": peaks, "port_drops_packets": port_drops, "port_lost_packets": port_lost,
            "tx_by_type": types}


def engine_records(engine, names: dict[int, str], pipelines: dict[int, object], t_s: float,
                   internal: dict[str, set] | None = None) -> list[dict]:
    """Every switch of a NativeFabric in one engine call (under its lock only the C copy of the
    counters: the packet thread waits for nothing else); `internal`: per switch name, ports left
    out (its CPU and drop ports)."""
    with engine.locked():
        copy = engine.sample_copy()
    ports = engine.sample_records(copy)
    by_switch: dict[int, list[dict]] = {}
    for r in ports:
        by_switch.setdefault(int(r["switch"]), []).append(r)
    return [switch_record(names[i], t_s, _cabled(by_switch.get(i, []), (internal or {}).get(names[i])),
                          pipelines.get(i))
            for i in sorted(names)]


def tm_records(switches: dict[str, tuple[object, object]], t_s: float,
               internal: dict[str, set] | None = None) -> list[dict]:
    """Python-path switches: name -> (TrafficManager, pipeline or None).  The packet thread shares
    the GIL with this one: it is let in between two switches (about 0.1 ms of work each)."""
    out = []
    for name, (tm, pipeline) in sorted(switches.items()):
        out.append(switch_record(name, t_s, _cabled(tm.sample(), (internal or {}).get(name)), pipeline))
        time.sleep(0)
    return out


def _cabled(ports: list[dict], skip: set | None) -> list[dict]:
    """The port records without the ports in `skip`."""
    return [r for r in ports if int(r["port"]) not in skip] if skip else ports


def loop_reader(switches: dict, loop):
    """read(t_s) for a process's switches (name -> testbed.p4model.switch.loop.Switch) moved by `loop`:
    an EngineLoop's engine in one call, else each switch's Python traffic manager. Each switch's
    CPU and drop ports are left out: the lines name the ports a cable or host is on, as the
    simulator's do."""
    def pipeline(switch):
        return switch.datapath.pipeline if switch.datapath is not None else None

    internal = {name: {p for p in (getattr(s, "cpu_port", None), getattr(s, "drop_port", None)) if p is not None}
                for name, s in switches.items()}
    engine = getattr(loop, "engine", None)
    if engine is not None:   # each read takes the programs loaded now (a controller may load one later)
        names = {i: name for name, i in loop.index.items()}
        return lambda t_s: engine_records(engine, names, {i: pipeline(switches[n]) for i, n in names.items()},
                                          t_s, internal)
    return lambda t_s: tm_records({n: (s.tm, pipeline(s)) for n, s in switches.items()}, t_s, internal)


@dataclass
class PortSampler:
    """Calls `read(t_s)` (a list of lines) at start, every `interval_s` and at stop, on its own
    thread, and appends the lines to `path` (flushed each period, so a killed run keeps what it had)."""

    read: object
    path: Path
    epoch: float
    interval_s: float = INTERVAL_S
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.interval_s > 0:
            raise ValueError(f"telemetry interval {self.interval_s!r}: must be above 0 s")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="tb-telemetry")
        self._out = None

    def start(self) -> "PortSampler":
        self._out = open(self.path, "a")
        self.sample_once()
        self._thread.start()
        return self

    def sample_once(self) -> None:
        t_s = time.time() - self.epoch
        try:
            lines = self.read(t_s)
        except (ValueError, OSError) as error:
            self.errors.append(f"telemetry at {t_s:.3f} s: {error}")
            return
        self._out.write("".join(json.dumps(line) + "\n" for line in lines))
        self._out.flush()

    def _loop(self) -> None:
        n = 1
        start = time.monotonic()
        while not self._stop.wait(max(0.0, start + n * self.interval_s - time.monotonic())):
            self.sample_once()
            n += 1

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        if self._out is not None:
            self.sample_once()
            self._out.close()
            self._out = None
