"""The native fabric engine makes every copy a program asks for: multicast replicas through the
PRE's groups, I2E and E2E clones through its clone sessions, resubmit and recirculation, as the
control plane changes them.  The multicast test holds it to the native pipeline (which
tests/unit/native/test_native_replication.py holds to the Python target); the copy tests hold it
to the Python pipeline itself on random groups, sessions and frames (tests/unit/native/
replicate.p4 picks the operations from each frame's bits), and an engine with a broken copy
(wrong instance_type, wrong egress port) fails them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")

NATIVE_TESTS = Path(__file__).resolve().parents[1] / "native"
REPLICATE = NATIVE_TESTS / "replicate.p4"
COPY_STATS = ("clones", "resubmits", "recirculations", "replicas", "loop_drops")


def _pipeline(name: str):
    from testbed.p4model.backend.native.binding import NativePipeline
    from testbed.p4model.frontend import load_program

    return NativePipeline(load_program(NATIVE_TESTS / name))


def test_a_switch_with_a_copying_program_stays_on_the_engine():
    from testbed.emulation.packet_path import native_problem
    from testbed.p4model.engine.realtime import _require_native
    from testbed.p4model.switch.main import _engine_mode

    assert _engine_mode(None, _pipeline("replicate.p4")) is True
    _require_native(_pipeline("replicate.p4"))   # a SetForwardingPipelineConfig with it is taken
    assert native_problem(REPLICATE) is None


def test_the_engine_multicasts_as_the_native_pipeline_does():
    """One switch, eight host ports: the engine's copies (port, bytes: egress_rid, instance_type and
    egress_port written by egress) are the pipeline's, also after the groups change."""
    from testbed.p4model.backend.native.binding import NativePipeline
    from testbed.p4model.clock import ManualClock
    from testbed.p4model.engine.binding import NativeFabric
    from testbed.p4model.frontend import load_program
    from testbed.p4model.tm.model import TrafficManager

    program = load_program(Path(__file__).with_name("mcast.p4"))
    reference, pipeline = NativePipeline(program), NativePipeline(program, clock=ManualClock())
    assert pipeline.replication.keys() == {"multicast"}
    engine = NativeFabric(seed=1, hosts=8)
    engine.keep()
    switch = engine.add_switch(pipeline, TrafficManager(ManualClock(), ports=range(8)))
    for port in range(8):
        engine.host_port(switch, port, port)
    t = 0

    def both(frame: bytes) -> None:
        nonlocal t
        t += 1_000_000
        engine.inject(switch, 0, frame, t)
        engine.run(t + 500_000)
        got = sorted((host, data) for _, host, data in engine.take())
        assert got == sorted(reference.process(0, frame)), frame.hex()

    for pre in (reference.pre, pipeline.pre):
        pre.insert_group(5, [(1, 2), (1, 3), (9, 7)])
        pre.create_group(6)
        pre.associate_node(6, pre.create_node(4, [1, 6]))
    tagged = lambda group, drop=False: (b"\xff" if drop else b"\x00") + bytes(3) + group.to_bytes(2, "big") \
        + bytes(6) + b"\x88\xb5" + b"payload"   # noqa: E731
    for frame in (tagged(5), tagged(6), tagged(7), tagged(5, drop=True), bytes(5) + b"\x04" + bytes(6) + b"\x08\x00"):
        both(frame)
    assert len([1 for _ in reference.process(0, tagged(5))]) == 3
    for pre in (reference.pre, pipeline.pre):   # a control-plane change reaches the engine's copy
        pre.modify_group(5, [(2, 4)])
        pre.delete_group(6)
    for frame in (tagged(5), tagged(6)):
        both(frame)


_replicas = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7)), max_size=5, unique=True)


@pytest.fixture(scope="module")
def mcast_switch():
    from testbed.p4model.backend.native.binding import NativePipeline
    from testbed.p4model.clock import ManualClock
    from testbed.p4model.engine.binding import NativeFabric
    from testbed.p4model.frontend import load_program
    from testbed.p4model.tm.model import TrafficManager

    program = load_program(Path(__file__).with_name("mcast.p4"))
    reference, pipeline = NativePipeline(program), NativePipeline(program, clock=ManualClock())
    engine = NativeFabric(seed=1, hosts=8)
    engine.keep()
    switch = engine.add_switch(pipeline, TrafficManager(ManualClock(), ports=range(8)))
    for port in range(8):
        engine.host_port(switch, port, port)
    return reference, pipeline, engine, switch, [0]


@settings(max_examples=60, deadline=None)
@given(groups=st.dictionaries(st.integers(1, 3), _replicas, max_size=3),
       frames=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 4), st.booleans(), st.booleans(),
                                 st.binary(max_size=20)), min_size=1, max_size=6))
def test_random_groups_and_frames_multicast_the_same(mcast_switch, groups, frames):
    reference, pipeline, engine, switch, clock = mcast_switch
    for pre in (reference.pre, pipeline.pre):
        pre.reset()
        for gid, reps in groups.items():
            pre.insert_group(gid, reps)
    for port, group, tagged, drop, rest in frames:
        frame = (b"\xff" if drop else b"\x00") + bytes(3) + group.to_bytes(2, "big") + bytes(6) \
            + (b"\x88\xb5" if tagged else b"\x08\x00") + rest
        clock[0] += 1_000_000
        engine.inject(switch, port, frame, clock[0])
        engine.run(clock[0] + 500_000)
        got = sorted((host, data) for _, host, data in engine.take())
        assert got == sorted(reference.process(port, frame)), frame.hex()


# the copy tests: random multicast groups, clone sessions (replicas, packet_length_bytes) and frames
_copy_replicas = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7)), max_size=4, unique=True)
_groups = st.dictionaries(st.integers(1, 3), _copy_replicas, max_size=3)
# most of the sessions a frame can name (tag.n[2:0]) exist, with one replica or more: clones happen
_sessions = st.dictionaries(st.integers(0, 7), st.tuples(_copy_replicas.filter(bool), st.sampled_from([0, 0, 16, 20])),
                            min_size=3, max_size=8)
# in port, eth.dst, tag.op (which copies), tag.n (session, loop bound), tag.grp, the rest, tagged
_frames = st.lists(st.tuples(st.integers(0, 7), st.binary(min_size=6, max_size=6), st.integers(0, 255),
                             st.integers(0, 0x7F), st.integers(0, 4), st.binary(max_size=12),
                             st.sampled_from([True, True, True, False])),
                   min_size=1, max_size=6)


def _copy_frame(dst: bytes, op: int, n: int, grp: int, rest: bytes, tagged: bool) -> bytes:
    eth = dst + bytes(range(6)) + (b"\x88\xb5" if tagged else b"\x08\x00")
    tag = bytes([op, n]) + grp.to_bytes(2, "big") + bytes([3, 1, 5, 0, 0, 0, 0, 0])
    return eth + (tag if tagged else b"") + rest


class CopySwitch:
    """replicate.p4 on the Python pipeline (the reference) and in an engine switch with 16 host
    ports (an engine built from `source`, engine.c by default)."""

    def __init__(self, source: str | None = None, max_passes: int | None = None, program: Path = REPLICATE) -> None:
        from testbed.p4model.backend.native.binding import NativePipeline
        from testbed.p4model.clock import ManualClock
        from testbed.p4model.engine.binding import NativeFabric
        from testbed.p4model.frontend import load_program
        from testbed.p4model.pipeline import load
        from testbed.p4model.tm.model import TrafficManager

        self.python = load(program, backend="python", clock=ManualClock())
        self.native = NativePipeline(load_program(program), clock=ManualClock())
        if max_passes is not None:   # the bound on resubmit/recirculation passes, on both
            self.python.switch.max_passes = self.native.max_passes = max_passes
        self.engine = NativeFabric(seed=1, hosts=16, source=source)
        self.engine.keep()
        self.switch = self.engine.add_switch(self.native, TrafficManager(ManualClock(), ports=range(16)))
        for port in range(16):   # eth.dst[3:0] is the unicast port
            self.engine.host_port(self.switch, port, port)
        self.t = 0

    def configure(self, groups: dict, sessions: dict) -> None:
        """The same groups and sessions on both (the engine's copy follows pre.on_change)."""
        for pre in (self.python.pre, self.native.pre):
            pre.reset()
            for gid, reps in groups.items():
                pre.insert_group(gid, reps)
            for sid, (reps, limit) in sessions.items():
                pre.set_clone_session(sid, reps, packet_length_bytes=limit)

    def send(self, port: int, frame: bytes) -> tuple[list, list]:
        """(the engine's deliveries, the Python pipeline's output), each as sorted (port, bytes)."""
        self.t += 1_000_000
        self.engine.inject(self.switch, port, frame, self.t)
        self.engine.run(self.t + 500_000)
        got = sorted((host, data) for _, host, data in self.engine.take())
        return got, sorted(self.python.process(port, frame))

    def counts(self) -> tuple[dict, dict]:
        engine = self.engine.switch_stats(self.switch)
        return {k: engine[k] for k in COPY_STATS}, {k: self.python.stats[k] for k in COPY_STATS}


@pytest.fixture(scope="module")
def copy_switch():
    switch = CopySwitch()
    assert {"clone", "resubmit", "recirculate", "multicast"} <= switch.native.replication.keys()
    return switch


@settings(max_examples=100, deadline=None)
@given(groups=_groups, sessions=_sessions, frames=_frames)
def test_random_sessions_groups_and_frames_copy_as_the_python_pipeline(copy_switch, groups, sessions, frames):
    """Every frame out of every port, byte for byte (instance_type, egress_rid, egress_port and the
    kept field lists are written into each copy), and the same copy counters."""
    copy_switch.configure(groups, sessions)
    engine0, python0 = copy_switch.counts()
    for port, dst, op, n, grp, rest, tagged in frames:
        data = _copy_frame(dst, op, n, grp, rest, tagged)
        got, want = copy_switch.send(port, data)
        assert got == want, (port, data.hex())
    engine1, python1 = copy_switch.counts()
    assert {k: engine1[k] - engine0[k] for k in COPY_STATS} == {k: python1[k] - python0[k] for k in COPY_STATS}


def test_clones_resubmits_and_recirculations_in_one_frame(copy_switch):
    """A frame asking for multicast, I2E and E2E clones: the replicas, the session-cut clones; a
    frame that resubmits, one that recirculates until the loop bound drops it."""
    copy_switch.configure({2: [(1, 3), (2, 4)]}, {1: ([(7, 5)], 20)})
    engine0, _ = copy_switch.counts()
    got, want = copy_switch.send(0, _copy_frame(b"\x00" * 5 + b"\x01", 0b0001_0011, 0x31, 2, b"xyz", True))
    assert got == want and sorted(port for port, _ in got) == [3, 4, 5, 5, 5]
    assert all(len(frame) == 20 for port, frame in got if port == 5)   # the session's packet_length_bytes
    for op, n in ((0b1000_1000, 0x30), (0b0010_0000, 0x70), (0b1010_0000, 0x70)):   # resubmit, recirculate
        got, want = copy_switch.send(2, _copy_frame(b"\x00" * 5 + b"\x06", op, n, 0, b"", True))
        assert got == want and len(got) == 1
    engine1, _ = copy_switch.counts()
    assert engine1["clones"] - engine0["clones"] == 3 and engine1["replicas"] - engine0["replicas"] == 2
    assert engine1["resubmits"] > engine0["resubmits"] and engine1["recirculations"] > engine0["recirculations"]
    # ingress_drops counts a frame whose ingress made no copy at all, as the Python switch loop does
    stats = copy_switch.engine.switch_stats
    drops = stats(copy_switch.switch)["ingress_drops"]
    copy_switch.send(0, _copy_frame(b"\x00" * 5 + b"\xf1", 0, 0x31, 0, b"", True))           # dropped
    copy_switch.send(0, _copy_frame(b"\x00" * 5 + b"\xf1", 0b0000_0010, 0x31, 0, b"", True))  # dropped, cloned
    copy_switch.send(0, _copy_frame(b"\x00" * 5 + b"\x01", 0b0000_0001, 0x31, 3, b"", True))  # no group 3
    assert stats(copy_switch.switch)["ingress_drops"] - drops == 2


def test_the_loop_bound_drops_as_the_python_pipeline():
    """Resubmit and recirculation passes beyond the bound (5 here) are dropped and counted."""
    switch = CopySwitch(max_passes=5)
    switch.configure({}, {})
    for op in (0b0000_1000, 0b1000_1000, 0b0010_0000, 0b1010_0000):   # resubmit, recirculate
        got, want = switch.send(1, _copy_frame(b"\x00" * 5 + b"\x02", op, 0xF0, 0, b"", True))
        assert got == want == []
    engine, python = switch.counts()
    assert engine == python and engine["loop_drops"] == 4


@pytest.mark.parametrize("right, wrong", [
    ("R->set_type(copy, IT_REPLICATION);", "R->set_type(copy, IT_NORMAL);"),   # a replica's instance_type
    ("put_job(e, s, number, row[2], copy, k->data", "put_job(e, s, number, row[2] ^ 1, copy, k->data"),  # E2E port
])
def test_an_engine_with_a_broken_copy_fails_the_comparison(right, wrong):
    """The comparison sees a wrong instance_type on a multicast replica and an E2E clone sent out of
    the wrong port (engine.c altered here, built apart)."""
    from testbed.p4model.engine.binding import ENGINE_SOURCE

    source = ENGINE_SOURCE.read_text()
    assert source.count(right) == 1
    switch = CopySwitch(source.replace(right, wrong))
    switch.configure({2: [(1, 3), (2, 4)]}, {1: ([(7, 5)], 20)})
    got, want = switch.send(0, _copy_frame(b"\x00" * 5 + b"\x01", 0b0001_0001, 0x31, 2, b"xyz", True))
    assert got != want


@pytest.fixture(scope="module", params=["copies", "one call"])
def digest_switch(request, tmp_path_factory):
    """tests/unit/native/digest.p4 (digests, truncate, clones) in the engine, and without its clone
    calls (the engine's one-call path: tb_ingress, tb_egress)."""
    program = NATIVE_TESTS / "digest.p4"
    if request.param == "one call":
        program = tmp_path_factory.mktemp("digest") / "digest_no_clones.p4"
        program.write_text("\n".join(line for line in (NATIVE_TESTS / "digest.p4").read_text().splitlines()
                                     if "clone(" not in line))
    switch = CopySwitch(program=program)
    assert switch.native.digest_layouts and switch.native.replicates is (request.param == "copies")
    return switch


_digest_frames = st.lists(st.tuples(st.integers(0, 7), st.binary(min_size=6, max_size=6), st.integers(0, 255),
                                    st.integers(0, 60), st.integers(0, 60), st.integers(0, 255),
                                    st.integers(0, 2**128 - 1), st.integers(0, 255), st.binary(max_size=30),
                                    st.sampled_from([True, True, False])), min_size=1, max_size=6)


@settings(max_examples=80, deadline=None)
@given(sessions=_sessions, frames=_digest_frames)
def test_the_engine_digests_and_truncates_as_the_python_pipeline(digest_switch, sessions, frames):
    """Every frame (cut where the program or a clone session says) and every digest, in order: the
    engine's digests reach the pipeline's DigestQueue through take_cpu, as in real time."""
    digest_switch.configure({}, sessions)
    for pipe in (digest_switch.python, digest_switch.native):
        pipe.digests.drain()
    for port, dst, op, a, b, n, wide, sv, rest, tagged in frames:
        eth = dst + bytes(range(6)) + (b"\x88\xb6" if tagged else b"\x08\x00")
        data = eth + (bytes([op, a, b, n]) + wide.to_bytes(16, "big") + bytes([sv]) if tagged else b"") + rest
        got, want = digest_switch.send(port, data)
        assert got == want, (port, data.hex())
        assert digest_switch.engine.take_cpu() == []   # digest records are not CPU frames
        assert digest_switch.native.digests.drain() == digest_switch.python.digests.drain(), data.hex()
