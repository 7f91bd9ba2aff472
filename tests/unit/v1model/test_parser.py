"""Parser behaviour through a loaded program (v1m_parser.p4): stacks,
lookahead, advance, verify, parser errors, reject/no-match quirks."""

from __future__ import annotations

import pytest

from .conftest import load_program


@pytest.fixture(scope="module")
def pipe():
    return load_program("v1m_parser.p4")


def run(pipe, data):
    out = pipe.process(3, data)
    assert len(out) == 1 and out[0][0] == 2
    return out[0][1]


def test_stack_then_header_no_error(pipe):
    data = bytes([0x02, 0x03, 0x77]) + b"zz"
    assert run(pipe, data) == bytes([0, 0x02, 2]) + data


def test_lookahead_does_not_consume_and_advance_skips(pipe):
    data = bytes([0xFF, 0x03, 0x77]) + b"p"
    # the skipped byte is not re-emitted: it was consumed by advance
    assert run(pipe, data) == bytes([0, 0xFF, 1, 0x03, 0x77]) + b"p"


def test_stack_overflow_is_stack_out_of_bounds(pipe):
    data = bytes([0x02, 0x02, 0x02, 0x02, 0x05])
    # three tags valid, the rest becomes payload; ingress still runs
    assert run(pipe, data) == bytes([2, 0x02, 3]) + data


def test_short_packet_is_packet_too_short(pipe):
    assert run(pipe, bytes([0x02])) == bytes([1, 0x02, 1, 0x02])


def test_failed_verify_keeps_extracted_header(pipe):
    data = bytes([0x03, 0xEE, 0x01])
    assert run(pipe, data) == bytes([3, 0x03, 1]) + data


@pytest.mark.parametrize("value", [0x99, 0x42])
def test_reject_and_no_match_are_accept_with_no_error(pipe, value):
    data = bytes([0x03, value])
    assert run(pipe, data) == bytes([0, 0x03, 1]) + data


def test_push_front_shifts_and_new_element_is_set(pipe):
    data = bytes([0x03, 0x55])
    assert run(pipe, data) == bytes([0, 0x03, 1, 0x22, 0x03, 0x55])


def test_pop_front_removes_first(pipe):
    data = bytes([0x02, 0x03, 0x66])
    assert run(pipe, data) == bytes([0, 0x02, 2, 0x03, 0x66])


def test_empty_packet(pipe):
    assert run(pipe, b"") == bytes([1, 0, 0])
