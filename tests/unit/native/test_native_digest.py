"""Digests and truncate on the native back end against the Python pipeline (the reference):
digest.p4 asks for digests (structs holding a header, a 128-bit field, a bool and an int; a
later one replacing an earlier one; one in egress, which v1model ignores) and truncation (in
ingress and egress, beside clone sessions' packet_length_bytes), chosen by each frame's bits.
The same frames on the same ports and the same digests in the same order, on random frames and
sessions; and the digests reach a P4Runtime DigestList as the Python switch's do."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler
from testbed.p4model.clock import ManualClock
from testbed.p4model.pipeline import load

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) on this machine")

PROGRAM = Path(__file__).parent / "digest.p4"

replicas = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7)), min_size=1, max_size=3, unique=True)
sessions = st.dictionaries(st.integers(0, 7), st.tuples(replicas, st.sampled_from([0, 0, 10, 40])), max_size=8)
# in port, eth.dst, eth.src, req.op, req.a, req.b, req.n, req.wide, req.s, the rest, tagged
frames = st.lists(st.tuples(st.integers(0, 7), st.binary(min_size=6, max_size=6), st.binary(min_size=6, max_size=6),
                            st.integers(0, 255), st.integers(0, 60), st.integers(0, 60), st.integers(0, 255),
                            st.integers(0, 2**128 - 1), st.integers(0, 255), st.binary(max_size=30),
                            st.sampled_from([True, True, False])), min_size=1, max_size=8)


def _frame(dst, src, op, a, b, n, wide, s, rest, tagged) -> bytes:
    eth = dst + src + (b"\x88\xb6" if tagged else b"\x08\x00")
    req = bytes([op, a, b, n]) + wide.to_bytes(16, "big") + bytes([s])
    return eth + (req if tagged else b"") + rest


@pytest.fixture(scope="module", params=["copies", "one call"])
def pipes(request, tmp_path_factory):
    """digest.p4 as it is (a program that clones: NativePipeline's copy path), and without its
    clone calls (the one-call path, tb_ingress and tb_egress)."""
    program = PROGRAM
    if request.param == "one call":
        program = tmp_path_factory.mktemp("digest") / "digest_no_clones.p4"
        program.write_text("\n".join(line for line in PROGRAM.read_text().splitlines() if "clone(" not in line))
    native = load(program, backend="native", clock=ManualClock())
    assert native.replicates is (request.param == "copies")
    return load(program, backend="python", clock=ManualClock()), native


def _send(pipes, port: int, data: bytes):
    python, native = pipes
    return (native.process(port, data), native.digests.drain()), (python.process(port, data), python.digests.drain())


@settings(max_examples=150, deadline=None)
@given(sessions=sessions, frames=frames)
def test_digests_and_truncation_native_equal_python(pipes, sessions, frames):
    for pipe in pipes:
        pipe.digests.drain()   # nothing left from an earlier example
        pipe.pre.reset()
        for sid, (reps, limit) in sessions.items():
            pipe.pre.set_clone_session(sid, reps, packet_length_bytes=limit)
    for frame in frames:
        port, rest = frame[0], frame[1:]
        data = _frame(*rest)
        native, python = _send(pipes, port, data)
        assert native == python, (port, data.hex())


def test_a_digest_and_truncation_by_hand(pipes):
    """Known values: the wide digest's 128-bit leaves, the later digest replacing the earlier,
    the egress digest ignored, the smaller truncation winning."""
    for pipe in pipes:
        pipe.pre.reset()
    wide = (1 << 127) | 5
    # op: wide digest (bit 0), ingress truncate to a=30 (bit 1), egress truncate to b=20 (bit 4),
    # egress digest (bit 5, ignored)
    data = _frame(b"\x00" * 5 + b"\x02", b"\x0a" * 6, 0b0011_0011, 30, 20, 9, wide, 0xfe, bytes(40), True)
    (out, digests), python = _send(pipes, 1, data)
    assert (out, digests) == python
    assert out == [(2, data[:20])]
    assert digests == [("wide_t", (0b0011_0011, 30, 20, 9, wide, 0xfe, wide ^ 1, 0x88b6))]
    # learn digest twice in ingress: the second (from req) replaces the first (from eth)
    data = _frame(b"\x00" * 5 + b"\x13", b"\x0b" * 6, 0b0000_0100, 0, 0, 0x21, 0, 0x81, b"", True)
    (out, digests), python = _send(pipes, 0, data)
    assert (out, digests) == python
    assert digests == [("learn_t", (int.from_bytes(data[:6], "big"), 0x21, 1, 0x7e))]
    # no request header: the invalid header's fields in a digest
    data = _frame(b"\x00" * 5 + b"\x41", b"\x0c" * 6, 0, 0, 0, 0, 0, 0, b"abc", False)
    (out, digests), python = _send(pipes, 0, data)
    assert (out, digests) == python and digests == [("wide_t", (0, 0, 0, 0, 0, 0, 7, 0x0800))]


def test_native_digests_reach_a_digest_list(pipes):
    """The P4Runtime server's DigestManager turns the native pipeline's digests into the same
    DigestList as the Python pipeline's."""
    from p4.v1 import p4runtime_pb2

    from testbed.p4model.frontend import load_program
    from testbed.p4model.p4info import generate
    from testbed.p4model.p4runtime.digests import DigestManager

    p4info = generate(load_program(PROGRAM))
    config = p4runtime_pb2.DigestEntry.Config(max_list_size=1)
    lists = {}
    for name, pipe in zip(("python", "native"), pipes):
        sent = lists.setdefault(name, [])
        manager = DigestManager(p4info, lambda _id: config, sent.append)
        pipe.pre.reset()
        data = _frame(b"\x00" * 5 + b"\x12", b"\x0d" * 6, 0b0000_0001, 0, 0, 3, 77, 5, b"", True)
        pipe.process(3, data)
        manager.collect(pipe.digests.drain(), 1000)
        manager.poll(10_000_000)
        assert manager.dropped_unconfigured == 0
    assert lists["native"] and [m.SerializeToString() for m in lists["native"]] == \
        [m.SerializeToString() for m in lists["python"]]
