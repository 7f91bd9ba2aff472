"""Malformed frames never crash the native engine: random bytes of every length (empty, shorter than
an Ethernet header, truncated IPv4, oversized), MAC control frames that are not PFC, frames to ports
that do not exist; every frame is accounted for in the switches' counters."""

from __future__ import annotations

import random

import pytest

from testbed.p4model.backend.native import compiler
from testbed.p4model.tm.model import MAX_PORT

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")


def test_random_frames_are_dropped_or_forwarded_never_crash(program):
    from test_engine_differential import frame, run_native

    rng = random.Random(5)
    sends = []
    for i in range(60_000):
        kind = rng.randrange(6)
        if kind == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 14)))  # shorter than Ethernet
        elif kind == 1:
            good = frame(rng.randrange(4), rng.randrange(4), rng.randrange(64, 200), rng.randrange(8), i)
            data = good[:rng.randrange(14, 34)]  # IPv4 header cut short
        elif kind == 2:
            data = b"\x01\x80\xc2\x00\x00\x01" + bytes(6) + b"\x88\x08" + bytes(rng.randrange(0, 60))
        elif kind == 3:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(14, 1600)))
        elif kind == 4:
            data = bytes(20000)  # larger than any frame the engine takes
        else:
            data = frame(rng.randrange(4), rng.randrange(4), rng.randrange(64, 1500), rng.randrange(8), i)
        sends.append((i * 50 + 7, rng.randrange(4), data))
    kept, engine, index = run_native(program, sends, pfc=True)
    received = sum(engine.switch_stats(i)["rx"] for i in index.values())
    leaves = sum(engine.switch_stats(index[n])["rx"] for n in ("L1", "L2"))
    assert leaves >= len(sends)  # every injected frame reached its leaf
    for name, i in index.items():  # every frame received ends in exactly one place
        s = engine.switch_stats(i)
        ends = (s["tx"] - s["pfc_frames_tx"] + s["no_interface"] + s["ingress_drops"] + s["tm_drops"]
                + s["drop_port"] + s["egress_drops"] + s["pipeline_errors"] + s["pfc_frames_rx"]
                + s["pfc_malformed"] + s["no_pipeline"])
        assert s["rx"] == ends, (name, s)
    assert received > len(sends) and len(kept) > 0
    assert engine.switch_stats(index["L1"])["pfc_malformed"] > 0


def test_bad_ports_and_switches_are_one_line_errors(program):
    from test_engine_differential import run_native

    _, engine, index = run_native(program, [], pfc=False)
    with pytest.raises(ValueError, match="cannot put a frame on switch"):
        engine.inject(0, MAX_PORT + 1, b"x" * 60, 0)
    with pytest.raises(ValueError, match="cannot put a frame on switch"):
        engine.inject(99, 1, b"x" * 60, 0)
    with pytest.raises(ValueError, match="no switch 99"):
        engine.switch_stats(99)
    with pytest.raises(ValueError, match="no cable"):
        engine.cable(0, 1, 99, 1)
