"""Expression semantics through a loaded program (v1m_exprs.p4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import load_program


@pytest.fixture(scope="module")
def pipe():
    return load_program("v1m_exprs.p4")


def s8(v):
    v &= 0xFF
    return v - 256 if v & 0x80 else v


def expected(a, b, c, d):
    def sat_s(v):
        return max(-128, min(127, v))
    sw = 10 if b == 1 else 20 if b in (2, 3) else 30
    out = [
        (a + b) & 0xFF, (a - b) & 0xFF, min(a + b, 255), max(a - b, 0),
        s8(c + d) & 0xFF, sat_s(c + d) & 0xFF, (a << 3) & 0xFF, a >> (b & 7),
        (c >> 2) & 0xFF,
    ]
    cat = (a << 8) | b
    rest = [a >> 4, b | 0x0F, (-a) & 0xFF, a ^ 0xFF, (a * 3) & 0xFF, max(a, b),
            ((a << 1) & 0xFF) ^ ((a + 1) & 0xFF), sw]
    return bytes(out) + cat.to_bytes(2, "big") + bytes(rest)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 255), st.integers(0, 255), st.integers(-128, 127), st.integers(-128, 127))
def test_operators_match_p4_semantics(pipe, a, b, c, d):
    inp = bytes([a, b, c & 0xFF, d & 0xFF])
    out = pipe.process(0, inp)
    assert out == [(1, inp + expected(a, b, c, d))]


@pytest.mark.parametrize("b,sw", [(1, 10), (2, 20), (3, 20), (4, 30)])
def test_switch_on_expression_with_fallthrough(pipe, b, sw):
    (_, data), = pipe.process(0, bytes([5, b, 0, 0]))
    assert data[-1] == sw
