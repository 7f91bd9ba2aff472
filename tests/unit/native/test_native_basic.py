"""basic.p4 on the native back end against the Python pipeline: random
LPM entries (written through the same Table interface the control plane
uses) and random IPv4/non-IPv4 frames give the same packets and ports."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler
from testbed.p4model.pipeline import load
from testbed.p4model.runtime.tables import ActionCall, TableEntry

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) on this machine")

BASIC = Path(__file__).parents[3] / "p4src" / "basic.p4"
TABLE = "BasicIngress.ipv4_lpm"

entry = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 32), st.booleans(),
                  st.integers(0, 2**48 - 1), st.integers(0, 510))
frame = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 255), st.booleans(),
                  st.binary(min_size=0, max_size=40), st.integers(0, 15))


def _ipv4(dst: int, ttl: int, payload: bytes) -> bytes:
    eth = bytes.fromhex("0000000000010000000000020800")
    ip = bytes([0x45, 0, 0, 20 + len(payload), 0, 1, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1]) + dst.to_bytes(4, "big")
    return eth + ip + payload


@settings(max_examples=120, deadline=None)
@given(entries=st.lists(entry, max_size=12), frames=st.lists(frame, min_size=1, max_size=12))
def test_basic_native_equals_python(entries, frames):
    pipes = [load(BASIC, backend="python"), load(BASIC, backend="native")]
    assert hasattr(pipes[1], "so_path")
    for value, plen, forward, mac, port in entries:
        for pipe in pipes:
            table = pipe.tables[TABLE]
            call = ActionCall("BasicIngress.set_nhop", (mac, port)) if forward else \
                ActionCall("BasicIngress.drop", ())
            masked = value & (((1 << plen) - 1) << (32 - plen)) if plen else 0
            if table.find(((masked, plen),)) is None:
                table.insert(TableEntry(match=((masked, plen),), action=call))
    for dst, ttl, ipv4, payload, in_port in frames:
        data = _ipv4(dst, ttl, payload) if ipv4 else payload
        assert pipes[1].process(in_port, data) == pipes[0].process(in_port, data)
    # deletes and a changed default reach the C table too
    for pipe in pipes:
        table = pipe.tables[TABLE]
        for e in table.entries()[::2]:
            table.delete(e.match)
        table.set_default(ActionCall("BasicIngress.set_nhop", (0xAA, 7)))
    for dst, ttl, ipv4, payload, in_port in frames:
        data = _ipv4(dst, ttl, payload) if ipv4 else payload
        assert pipes[1].process(in_port, data) == pipes[0].process(in_port, data)
