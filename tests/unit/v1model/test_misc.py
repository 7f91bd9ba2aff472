"""Control flow and value features through a loaded program (v1m_misc.p4)."""

from __future__ import annotations

import logging

import pytest

from testbed.p4model.runtime import hashing

from .conftest import load_program


@pytest.fixture(scope="module")
def pipe():
    return load_program("v1m_misc.p4")


def cmd(op, res=0, vlen=0, ck=0, tail=b""):
    return bytes([op, res, 0, vlen]) + ck.to_bytes(2, "big") + tail


def run(pipe, data):
    (port, out), = pipe.process(0, data)
    assert port == 1
    return out


def test_const_entries_first_listed_wins_and_action_run_fallthrough(pipe):
    assert run(pipe, cmd(1))[1:3] == bytes([0x11, 1])     # both entries match: first wins
    assert run(pipe, cmd(0x21))[1:3] == bytes([0x11, 1])
    assert run(pipe, cmd(2))[1:3] == bytes([0xEE, 1])     # 'other' falls into set_res's body
    assert run(pipe, cmd(0x10))[1:3] == bytes([0, 2])     # miss: NoAction -> default


def test_sub_control_instances_copy_in_out(pipe):
    assert run(pipe, cmd(3))[1] == 0x22 + 5 + 7


def test_direct_action_call_out_and_inout(pipe):
    assert run(pipe, cmd(4))[1:3] == bytes([3, 11])


def test_varbit_extract_and_emit(pipe):
    data = cmd(0x10, vlen=3, tail=b"abc") + b"rest"
    out = run(pipe, data)
    assert out[6:] == b"abcrest"


def test_varbit_too_long_is_header_too_short(pipe):
    data = cmd(0x10, vlen=5, tail=b"abcdefgh")
    # 40 bits > varbit<32>: parsing stops, the bytes stay as payload
    assert run(pipe, data)[6:] == b"abcdefgh"


def test_union_set_valid_invalidates_sibling(pipe):
    data = cmd(6) + b"\x12\x34"
    out = run(pipe, data)
    assert out[6:] == b"\x5a"       # b invalid, a valid with x set


def test_header_assignment_copies_validity(pipe):
    out = run(pipe, cmd(5) + b"\x77")
    assert out[6:] == b"\x77\x77"     # ab.a then copy
    out = run(pipe, cmd(0x10))
    assert out[6:] == b""             # copy stays invalid


def test_verify_checksum_mismatch_sets_checksum_error(pipe):
    good = hashing.csum16(bytes([7, 0]))
    assert run(pipe, cmd(7, ck=good))[1] == 0
    assert run(pipe, cmd(7, ck=good ^ 1))[1] == 1


def test_failed_assert_drops_with_location(pipe, caplog):
    with caplog.at_level(logging.ERROR):
        assert pipe.process(0, cmd(8, res=0)) == []
    assert "v1m_misc.p4" in caplog.text and "assert" in caplog.text
    assert run(pipe, cmd(8, res=1))[1] == 1     # op 8 misses the table: res kept


def test_controls_that_do_nothing_are_known_and_skipped():
    """basic_ipv4's verify_checksum and egress are empty: not called per packet."""
    pipe = load_program("basic_ipv4.p4")
    assert pipe.compiled.empty_blocks == {"verify_checksum", "egress"}
    assert pipe.switch._verify is None and pipe.switch._egress is None
    assert pipe.switch._compute is not None
