"""The generated header codec (one struct per header) on awkward layouts:
fields sharing a byte, signed fields, a bool, 48/24-bit fields split over
several struct items and a field wider than 16 bytes (v1m_header_layouts.p4)."""

from __future__ import annotations

import pytest

from .conftest import load_program

WIDE = (1 << 136) - 3  # all ones but bit 1: the xor with 1 is visible


@pytest.fixture(scope="module")
def pipe():
    return load_program("v1m_header_layouts.p4")


def mix_bytes(a, b, mac, x, f, g, wide, s, flag):
    """mix_t laid out by hand (b and s two's complement)."""
    value = a
    for v, w in ((b & 0xF, 4), (mac, 48), (x, 24), (f, 1), (g, 7), (wide, 136), (s & 0xFFFF, 16),
                 (int(flag), 1), (0x55, 7)):
        value = (value << w) | v
    return value.to_bytes(31, "big")


@pytest.mark.parametrize("b, s, flag", [(-3, -2, True), (5, 1000, False), (-8, -32768, False)])
def test_fields_read_and_written_exactly(pipe, b, s, flag):
    mac, x = 0x0A0B0C0D0EFF, 0xFFFFFF
    data = mix_bytes(0x9, b, mac, x, 1, 0x5A, WIDE, s, flag) + b"payload"
    (port, out), = pipe.process(1, data)
    assert port == 2
    res = out[:28]
    assert res[:5] == bytes([0x9, b < 0, s < 0, flag, 0x5A])
    assert int.from_bytes(res[5:11], "big") == mac + 1
    assert int.from_bytes(res[11:28], "big") == WIDE ^ 1
    b_out = ((b + 1 + 8) % 16) - 8
    s_out = ((s - 1 + 32768) % 65536) - 32768
    assert out[28:] == mix_bytes(0x9, b_out, mac, 0, 1, 0x5A, WIDE, s_out, not flag) + b"payload"


def test_a_short_header_is_not_extracted(pipe):
    data = mix_bytes(1, 1, 1, 1, 1, 1, 1, 1, True)[:30]
    (port, out), = pipe.process(1, data)
    # mix stays invalid (PacketTooShort), so res reports zeros and mix is not emitted
    assert port == 2 and out[:5] == bytes(5) and out[28:] == data
