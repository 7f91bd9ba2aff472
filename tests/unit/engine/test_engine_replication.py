"""The native fabric engine makes multicast copies as the native pipeline does (which
tests/unit/native/test_native_replication.py holds to the Python target), through the PRE's
groups as the control plane changes them; a program that can ask for clones, resubmit or
recirculation is refused by the engine in one line naming the construct, and a switch started
with it runs the Python loop over its native pipeline, which makes those copies."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import NativeUnsupported, compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")

NATIVE_TESTS = Path(__file__).resolve().parents[1] / "native"


def _pipeline(name: str):
    from testbed.p4model.backend.native.binding import NativePipeline
    from testbed.p4model.frontend import load_program

    return NativePipeline(load_program(NATIVE_TESTS / name))


def test_the_engine_refuses_a_program_that_asks_for_copies_in_one_line():
    from testbed.p4model.engine.binding import NativeFabric, engine_refusal

    replicating, plain = _pipeline("replicate.p4"), _pipeline("forward.p4")
    assert engine_refusal(plain) is None
    fabric = NativeFabric()
    with pytest.raises(NativeUnsupported) as info:
        fabric.set_pipeline(0, replicating, 511)
    text = str(info.value)
    assert "\n" not in text and "replicate.p4:" in text and "clone" in text and "fabric engine" in text
    assert replicating not in fabric.pipelines


def test_a_switch_started_with_such_a_program_runs_the_python_loop(caplog):
    from testbed.p4model.switch.main import _engine_mode

    with caplog.at_level(logging.WARNING):
        assert _engine_mode(None, _pipeline("replicate.p4")) is False
    lines = [r.getMessage() for r in caplog.records if "Python loop drives the native pipeline" in r.getMessage()]
    assert len(lines) == 1 and "clone" in lines[0] and "\n" not in lines[0]
    assert _engine_mode(None, _pipeline("forward.p4")) is True


def test_an_engine_switch_refuses_such_a_program_sent_later():
    from testbed.p4model.engine.realtime import _require_native
    from testbed.p4model.p4runtime.status import RpcError

    _require_native(_pipeline("forward.p4"))
    with pytest.raises(RpcError) as info:
        _require_native(_pipeline("replicate.p4"))
    assert "clone" in str(info.value) and "\n" not in str(info.value)


def test_a_run_notes_that_its_switches_leave_the_engine():
    from testbed.emulation.packet_path import _native_check

    problem, engine = _native_check(NATIVE_TESTS / "replicate.p4")
    assert problem is None and "clone" in engine and "fabric engine" in engine and "\n" not in engine
    assert _native_check(Path(__file__).with_name("mcast.p4")) == (None, None)   # the engine multicasts
    assert _native_check(NATIVE_TESTS / "forward.p4") == (None, None)


def test_the_engine_multicasts_as_the_native_pipeline_does():
    """One switch, eight host ports: the engine's copies (port, bytes: egress_rid, instance_type and
    egress_port written by egress) are the pipeline's, also after the groups change."""
    from testbed.p4model.backend.native.binding import NativePipeline
    from testbed.p4model.clock import ManualClock
    from testbed.p4model.engine.binding import NativeFabric, engine_refusal
    from testbed.p4model.frontend import load_program
    from testbed.p4model.tm.model import TrafficManager

    program = load_program(Path(__file__).with_name("mcast.p4"))
    reference, pipeline = NativePipeline(program), NativePipeline(program, clock=ManualClock())
    assert engine_refusal(pipeline) is None and pipeline.replication.keys() == {"multicast"}
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
