"""Packet replication on the native back end against the Python pipeline
(the reference): multicast through the PRE's groups, I2E and E2E clones
through its clone sessions (field lists by index and by data, the
session's packet_length_bytes), resubmit and recirculate, on random
groups, sessions and frames (replicate.p4 picks the operations from the
frame's bits).  Same frames on the same ports in the same order, and the
same replication counters."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler
from testbed.p4model.clock import ManualClock
from testbed.p4model.pipeline import load

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) on this machine")

PROGRAM = Path(__file__).parent / "replicate.p4"
STATS = ("received", "transmitted", "dropped", "clones", "resubmits", "recirculations", "replicas", "loop_drops")

replicas = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7)), max_size=4, unique=True)
groups = st.dictionaries(st.integers(1, 3), replicas, max_size=3)
sessions = st.dictionaries(st.integers(0, 8), st.tuples(replicas, st.sampled_from([0, 0, 16, 20])), max_size=5)
# port, eth.dst, tag.op, tag.n (session in the low bits, the loop bound in the high ones), tag.grp, ...
frame = st.tuples(st.integers(0, 7), st.binary(min_size=6, max_size=6), st.integers(0, 255),
                  st.integers(0, 0x7F), st.integers(0, 4), st.binary(min_size=0, max_size=12), st.booleans())


def _frame(dst: bytes, op: int, n: int, grp: int, rest: bytes, tagged: bool) -> bytes:
    eth = dst + bytes(range(6)) + (b"\x88\xb5" if tagged else b"\x08\x00")
    tag = bytes([op, n]) + grp.to_bytes(2, "big") + bytes([3, 1, 5, 0, 0, 0, 0, 0])
    return eth + (tag if tagged else b"") + rest


@pytest.fixture(scope="module")
def pipes():
    return load(PROGRAM, backend="python", clock=ManualClock()), load(PROGRAM, backend="native", clock=ManualClock())


@settings(max_examples=100, deadline=None)
@given(groups=groups, sessions=sessions, frames=st.lists(frame, min_size=1, max_size=8))
def test_replication_native_equals_python(pipes, groups, sessions, frames):
    python, native = pipes
    assert native.backend == "native" and native.replicates
    for pipe in pipes:
        pipe.pre.reset()
        for gid, reps in groups.items():
            pipe.pre.insert_group(gid, reps)
        for sid, (reps, limit) in sessions.items():
            pipe.pre.set_clone_session(sid, reps, packet_length_bytes=limit)
    before = [{k: p.stats[k] for k in STATS} for p in pipes]
    for port, dst, op, n, grp, rest, tagged in frames:
        data = _frame(dst, op, n, grp, rest, tagged)
        assert native.process(port, data) == python.process(port, data), (port, data.hex())
    after = [{k: p.stats[k] - b[k] for k in STATS} for p, b in zip(pipes, before)]
    assert after[0] == after[1]


def test_replication_is_counted(pipes):
    """One frame asking for multicast, an I2E clone and an E2E clone: the copies in bmv2's order."""
    python, native = pipes
    for pipe in pipes:
        pipe.pre.reset()
        pipe.pre.insert_group(2, [(1, 3), (2, 4)])
        pipe.pre.set_clone_session(1, [(7, 5)], packet_length_bytes=20)
    data = _frame(b"\x00" * 5 + b"\x01", 0b0001_0011, 0x31, 2, b"xyz", True)
    before = [{k: p.stats[k] for k in STATS} for p in pipes]
    out = native.process(0, data)
    assert out == python.process(0, data)
    # the I2E clone (port 5), the replicas (3, 4), then each replica's E2E clone (port 5)
    assert [port for port, _ in out] == [5, 3, 4, 5, 5]
    assert all(len(frame) == 20 for port, frame in out if port == 5)   # the session's limit
    assert len(out[1][1]) == len(out[2][1]) == len(data)
    for pipe, b in zip(pipes, before):
        assert {k: pipe.stats[k] - b[k] for k in ("replicas", "clones", "transmitted")} == \
            {"replicas": 2, "clones": 3, "transmitted": 5}


def test_a_program_without_replication_says_so():
    native = load(Path(__file__).parent / "forward.p4", backend="native")
    assert native.replicates is False
