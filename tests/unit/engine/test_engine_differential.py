"""The native fabric engine against the Python fabric loop it replaces.

Two leaves and two spines run stamp.p4 (basic.p4 that writes the queue
metadata into each packet) once as Python switches in a FabricLoop and once
as native pipelines in the C engine, with the same traffic-manager settings
(priority queues, rates, delays, short queues, a pps-shaped queue, PFC, and
queues served by deficit round robin).
Random traffic (seeded by hypothesis) must reach every host as the same
frames at the same nanosecond, and every queue must count the same."""

from __future__ import annotations

import ipaddress
import random
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler
from testbed.p4model.clock import ManualClock
from testbed.p4model.tm.model import TrafficManager

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")

PROGRAM = Path(__file__).with_name("stamp.p4")
TABLE = "BasicIngress.ipv4_lpm"
HOSTS = {0: ("L1", 1, "10.0.1.1"), 1: ("L1", 2, "10.0.1.129"), 2: ("L2", 1, "10.0.2.1"), 3: ("L2", 2, "10.0.2.129")}
CABLES = [("L1", 3, "S1", 1), ("L1", 4, "S2", 1), ("L2", 3, "S1", 2), ("L2", 4, "S2", 2)]
SWITCHES = ("L1", "L2", "S1", "S2")
PORTS = {"L1": (1, 2, 3, 4), "L2": (1, 2, 3, 4), "S1": (1, 2), "S2": (1, 2)}


def routes(name: str) -> list[tuple[str, int, int]]:
    """(prefix, length, port) of one switch: hosts below a leaf, halves of the other leaf's /24 per spine."""
    if name.startswith("S"):
        return [("10.0.1.0", 24, 1), ("10.0.2.0", 24, 2)]
    own, other = ("10.0.1", "10.0.2") if name == "L1" else ("10.0.2", "10.0.1")
    return [(f"{own}.1", 32, 1), (f"{own}.129", 32, 2), (f"{other}.0", 25, 3), (f"{other}.128", 25, 4)]


def configure(tm: TrafficManager, name: str, pfc: bool, weighted: bool = False) -> None:
    """The same settings for both runs: slow uplinks, short queues, one pps-shaped queue, PFC;
    `weighted`: both queues of every port by deficit round robin (quanta below and above a frame's
    length), but S1's port 1 keeps queue 1 strict above its weighted queue 0."""
    tm.set_port_rate_bps(100_000_000)
    tm.set_port_delay_us(2)
    for port in PORTS[name]:
        tm.set_queue_depth(6, port)
    if name.startswith("L"):
        for port in (3, 4):
            tm.set_port_rate_bps(80_000_000, port)
            tm.set_port_delay_us(3.5, port)
    else:
        tm.set_port_rate_bps(30_000_000)
    if name == "S1":
        tm.set_queue_rate(20_000, 2, 0)
        tm.set_queue_depth_bytes(6000, 1, 1)
    if pfc:
        tm.set_pfc(4, 2, priority=1, pool=12)
    if weighted:
        for port in PORTS[name]:
            tm.set_queue_weight(300, port, 0)
            tm.set_queue_weight(0 if (name, port) == ("S1", 1) else 1100, port, 1)


def entries(pipeline, name: str) -> None:
    from testbed.p4model.runtime.tables import ActionCall, TableEntry

    table = pipeline.tables[TABLE]
    for prefix, length, port in routes(name):
        value = int(ipaddress.IPv4Address(prefix))
        table.insert(TableEntry(match=((value, length),), action=ActionCall("BasicIngress.set_nhop",
                                                                            (0x020000000000 + port, port))))


def frame(src: int, dst: int, size: int, prio: int, seq: int) -> bytes:
    """An IPv4 UDP frame; every other one to the cells' port with a cell type, so the queues' per-class
    counts see cells as well as OTHER."""
    from testbed.cells.wire import CELL_UDP_PORT

    ip_len = size - 14
    header = struct.pack("!BBHHHBBH4s4s", 0x45, prio, ip_len, seq & 0xFFFF, 0, 64, 17, 0,
                         ipaddress.IPv4Address(HOSTS[src][2]).packed, ipaddress.IPv4Address(HOSTS[dst][2]).packed)
    udp = struct.pack("!HHHH", 50000, CELL_UDP_PORT if seq % 2 else 9000, ip_len - 20, 0)
    body = bytes([seq % 7]) + bytes(ip_len - 29)
    return bytes.fromhex("020000000001020000000002") + b"\x08\x00" + header + udp + body


def traffic(seed: int, count: int, span_us: int = 400) -> list[tuple[int, int, bytes]]:
    """(time_ns, host, frame) sorted by time: random pairs, sizes and priorities."""
    rng = random.Random(seed)
    out = []
    for seq in range(count):
        src = rng.randrange(4)
        dst = rng.choice([h for h in HOSTS if h != src])
        out.append((rng.randrange(0, span_us) * 1000 + 7, src,
                    frame(src, dst, rng.randrange(64, 1500), rng.randrange(2), seq)))
    out.sort(key=lambda x: x[0])
    return out


class RecordingHostPort:
    """A host's end of its ToR port: keeps (time, frame) of everything the ToR sends it."""

    def __init__(self, number: int, host: int, clock, log: list) -> None:
        self.number, self.iface, self.fd = number, f"h{host}", None
        self.host, self.clock, self.log = host, clock, log

    def send(self, data: bytes) -> bool:
        self.log.append((self.clock.now_ns(), self.host, bytes(data)))
        return True

    def close(self) -> None:
        pass


def run_python(program, sends, pfc: bool, weighted: bool = False):
    from testbed.emulation.model_fabric import ModelFabric
    from testbed.p4model.fabric.loop import FabricLoop
    from testbed.p4model.pipeline import Pipeline
    from testbed.p4model.switch.loop import Switch

    clock, log = ManualClock(), []
    switches = {}
    for name in SWITCHES:
        ports = {port: RecordingHostPort(port, h, clock, log) for h, (sw, port, _) in HOSTS.items() if sw == name}
        memory = {port: f"{name}-eth{port}" for port in PORTS[name] if port not in ports}
        switch = Switch(ports, clock=clock, memory_ports=memory, priority_queues=2)
        pipeline = Pipeline(program, clock=clock, seed=1)
        entries(pipeline, name)
        switch.install(SimpleNamespace(pipeline=pipeline))
        configure(switch.tm, name, pfc, weighted)
        switches[name] = switch
    loop = FabricLoop(switches, clock)
    for a, ap, b, bp in CABLES:
        loop.connect(a, ap, b, bp)
    fabric = ModelFabric(None, None, switches, loop, clock)
    now = 0
    for at, host, data in sends:
        now = fabric.run_until(at, now)
        sw, port, _ = HOSTS[host]
        switches[sw].receive_frames(port, (data,), at)
        loop.touched.add(switches[sw])
    fabric.run_until(10**10, now)
    return log, switches


def run_native(program, sends, pfc: bool, weighted: bool = False):
    from testbed.p4model.backend.native.binding import NativePipeline
    from testbed.p4model.engine import NativeFabric

    clock = ManualClock()
    engine = NativeFabric(seed=1, hosts=len(HOSTS))
    engine.keep()
    index = {}
    for name in SWITCHES:
        pipeline = NativePipeline(program, clock=clock, seed=1)
        entries(pipeline, name)
        tm = TrafficManager(clock, priority_queues=2, ports=PORTS[name])
        configure(tm, name, pfc, weighted)
        index[name] = engine.add_switch(pipeline, tm)
    for h, (sw, port, _) in HOSTS.items():
        engine.host_port(index[sw], port, h)
    for a, ap, b, bp in CABLES:
        engine.cable(index[a], ap, index[b], bp)
    for at, host, data in sends:
        engine.run(at)
        sw, port, _ = HOSTS[host]
        engine.inject(index[sw], port, data, at)
    assert engine.run(10**10) is None
    return engine.take(), engine, index


QUEUE_FIELDS = ("enqueued", "dequeued", "dropped_full", "passed", "max_depth", "enq_bytes", "drop_bytes")


def compare(program, seed: int, count: int, pfc: bool, span_us: int = 400, weighted: bool = False):
    sends = traffic(seed, count, span_us)
    py_log, py_switches = run_python(program, sends, pfc, weighted)
    native_log, engine, index = run_native(program, sends, pfc, weighted)
    py_frames = [(t, h, f) for t, h, f in py_log if f[12:14] != b"\x88\x08"]
    native_frames = [(t, h, f) for t, h, f in native_log if f[12:14] != b"\x88\x08"]
    assert len(native_frames) == len(py_frames)
    for host in HOSTS:
        assert [x for x in native_frames if x[1] == host] == [x for x in py_frames if x[1] == host], host
    assert sorted(native_log) == sorted(py_log)  # pause frames to hosts included
    for name in SWITCHES:
        tm = py_switches[name].tm
        for number, port in tm._ports.items():
            for prio, q in enumerate(port.queues):
                native = engine.queue_stats(index[name], number, prio)
                assert native is not None, (name, number)
                assert {f: native[f] for f in QUEUE_FIELDS} == {f: getattr(q, f) for f in QUEUE_FIELDS}, \
                    (name, number, prio)
                assert native["class_packets"] == q.class_packets
                assert native["class_drops"] == q.class_drops
            stats = engine.port_stats(index[name], number)
            assert stats["dropped_priority"] == port.dropped_priority
            assert (stats["pauses_received"], stats["resumes_received"], stats["paused_ns"]) == \
                   (port.pauses_received, port.resumes_received, port.paused_ns), (name, number)
        native_sw = engine.switch_stats(index[name])
        assert native_sw["tm_drops"] == py_switches[name].stats["tm_drops"]
        assert native_sw["pfc_frames_tx"] == py_switches[name].stats["pfc_frames_tx"]
        assert native_sw["pfc_frames_rx"] == py_switches[name].stats["pfc_frames_rx"]
    return engine, index


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pfc=st.booleans())
def test_same_frames_same_times_same_counts(program, seed, pfc):
    compare(program, seed, 160, pfc)


def test_a_burst_queues_drops_and_pauses_as_the_python_loop(program):
    """Heavy load: queues fill, tail-drop, the pps-shaped queue holds, PFC pauses both ways."""
    for pfc in (False, True):
        engine, index = compare(program, 7, 500, pfc, span_us=1500)
        stats = {name: engine.switch_stats(i) for name, i in index.items()}
        assert stats["S1"]["tm_drops"] + stats["S2"]["tm_drops"] > 0 or pfc
        assert max(engine.queue_stats(index["S1"], 2, 0)["max_depth"], 0) > 1
        if pfc:  # the spines pause the leaves' uplinks, the leaves pause hosts
            assert stats["S1"]["pfc_frames_tx"] + stats["S2"]["pfc_frames_tx"] > 0
            assert stats["L1"]["pfc_frames_rx"] + stats["L2"]["pfc_frames_rx"] > 0
            assert stats["L1"]["pfc_frames_tx"] + stats["L2"]["pfc_frames_tx"] > 0


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pfc=st.booleans())
def test_deficit_round_robin_same_frames_same_times(program, seed, pfc):
    compare(program, seed, 160, pfc, weighted=True)


def test_a_burst_under_deficit_round_robin_as_the_python_loop(program):
    """Heavy load with both queues weighted: their turns, drops and pauses match the Python loop's."""
    for pfc in (False, True):
        engine, index = compare(program, 11, 500, pfc, span_us=1500, weighted=True)
        assert max(engine.queue_stats(index["S1"], 2, 0)["max_depth"], engine.queue_stats(index["S1"], 2, 1)["max_depth"]) > 1
