"""bit<W> with 64 < W <= 128 on the native back end (IPv6 addresses as table keys: LPM and
ternary on 128 bits, split into 64-bit words in the C rows; arithmetic, shifts, slices, casts):
native and Python give the same packets and ports for random entries and frames."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler
from testbed.p4model.pipeline import load
from testbed.p4model.runtime.tables import ActionCall, TableEntry

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) on this machine")

PROGRAM = Path(__file__).parent / "wide.p4"
ADDR = st.integers(0, 2**128 - 1)
MASKS = (0, 2**128 - 1, (2**64 - 1) << 64, 2**64 - 1, 0xFF << 120)

route = st.tuples(ADDR, st.integers(0, 128), st.sampled_from(["I.fwd", "I.rewrite", "I.drop"]), st.integers(0, 7))
acl = st.tuples(ADDR, st.sampled_from(MASKS), st.integers(0, 3), st.integers(1, 4))
frame = st.tuples(ADDR, ADDR, st.integers(0, 3), st.binary(max_size=8), st.integers(0, 3))


def _ipv6(sa: int, da: int, nh: int, tail: bytes) -> bytes:
    eth = bytes(range(12)) + b"\x86\xdd"
    ip6 = bytes([0x60, 0, 0, 1, 0, 8, nh, 64]) + sa.to_bytes(16, "big") + da.to_bytes(16, "big")
    return eth + ip6 + tail


@settings(max_examples=60, deadline=None)
@given(routes=st.lists(route, max_size=6), acls=st.lists(acl, max_size=4),
       frames=st.lists(frame, min_size=1, max_size=12))
def test_wide_keys_native_equals_python(routes, acls, frames):
    pipes = [load(PROGRAM, backend="python"), load(PROGRAM, backend="native")]
    assert hasattr(pipes[1], "so_path")
    for pipe in pipes:
        for addr, plen, action, port in routes:
            match = ((addr >> (128 - plen) << (128 - plen)) if plen else 0, plen),
            if pipe.tables["I.route"].find(match) is None:
                args = () if action == "I.drop" else (port,)
                pipe.tables["I.route"].insert(TableEntry(match=match, action=ActionCall(action, args)))
        for addr, mask, nh, prio in acls:
            match = ((addr & mask, mask), nh)
            if pipe.tables["I.acl"].find(match, prio) is None:
                pipe.tables["I.acl"].insert(TableEntry(match=match, priority=prio, action=ActionCall("I.drop", ())))
    for k, (sa, da, nh, tail, port) in enumerate(frames):
        if routes and k % 2:   # aim at an installed route
            da = (routes[k % len(routes)][0] & ~0xFF) | (da & 0xFF)
        data = _ipv6(sa, da, nh, tail)
        assert pipes[1].process(port, data) == pipes[0].process(port, data)
        assert pipes[1].process(port, data[:40]) == pipes[0].process(port, data[:40])


@pytest.mark.parametrize("field, use, construct", [
    ("bit<130> y;", "", "bit<130>"),                                   # not whole bytes
    ("bit<336> y;", "m.y = m.y + 1;", "bit<336>"),                     # computed with
    ("bit<336> y;", "m.x = (bit<128>)m.y;", "bit<336>"),
])
def test_wider_than_128_bits_is_refused_in_one_line(tmp_path, field, use, construct):
    """A field over 128 bits is data only (extract, emit, copy, ==; tests/unit/native/widebytes.p4):
    one that is not whole bytes, or an expression on one, is refused in one line."""
    from testbed.p4model.backend.native import NativeUnsupported

    path = tmp_path / "w336.p4"
    path.write_text(PROGRAM.read_text().replace("struct M { bit<128> x; }", f"struct M {{ bit<128> x; {field} }}")
                    .replace("      m.x = h.ip6.da + h.ip6.sa;", f"      m.x = h.ip6.da + h.ip6.sa; {use}"))
    with pytest.raises(NativeUnsupported) as info:
        load(path, backend="native")
    assert "\n" not in str(info.value) and construct in str(info.value)
