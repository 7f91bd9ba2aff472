"""The v1model packet flow through a loaded program (v1m_flow.p4):
resubmit, clones, recirculation, multicast, drop, exit, truncate and the
instance_type / field-list preservation each copy sees."""

from __future__ import annotations

import pytest

from .conftest import load_program

CTL_LEN = 11


def pkt(op, tail=b"payload"):
    return bytes([op]) + bytes(CTL_LEN - 1) + tail


def fields(data):
    return {"op": data[0], "itype": data[1], "count": data[2], "kept": data[3], "lost": data[4],
            "rid": int.from_bytes(data[5:7], "big"), "len": int.from_bytes(data[7:9], "big")}


@pytest.fixture()
def pipe():
    p = load_program("v1m_flow.p4")
    p.pre.set_clone_session(5, [(0, 4)])
    p.pre.set_group(7, [(1, 3), (2, 2)])
    return p


def test_normal_packet(pipe):
    (port, data), = pipe.process(0, pkt(0))
    assert port == 1
    f = fields(data)
    assert (f["itype"], f["count"], f["kept"], f["lost"], f["rid"]) == (0, 1, 0xAA, 0xBB, 0)
    assert f["len"] == len(pkt(0))
    assert data[CTL_LEN:] == b"payload"


def test_resubmit_preserves_only_the_field_list(pipe):
    (port, data), = pipe.process(0, pkt(1))
    f = fields(data)
    # the resubmitted pass is enqueued as a normal packet (bmv2 sets 0)
    assert (port, f["itype"], f["kept"], f["lost"], f["count"]) == (1, 0, 0xAA, 0, 1)


def test_ingress_clone_reparses_original_and_comes_first(pipe):
    out = pipe.process(0, pkt(2))
    assert [p for p, _ in out] == [4, 1]
    clone, orig = fields(out[0][1]), fields(out[1][1])
    assert (clone["itype"], clone["kept"], clone["lost"], clone["count"]) == (1, 0xAA, 0, 1)
    assert (orig["itype"], orig["kept"], orig["lost"]) == (0, 0xAA, 0xBB)


def test_multicast_copies_carry_rid_and_replication_type(pipe):
    out = pipe.process(0, pkt(3))
    got = sorted((port, fields(d)["rid"], fields(d)["itype"]) for port, d in out)
    assert got == [(2, 2, 5), (3, 1, 5)]


def test_recirculate_reenters_with_deparsed_bytes(pipe):
    (port, data), = pipe.process(0, pkt(4))
    f = fields(data)
    assert (port, f["count"], f["kept"], f["lost"], f["itype"]) == (1, 2, 0xAA, 0, 0)


def test_egress_clone_copies_modified_headers(pipe):
    out = pipe.process(0, pkt(5))
    assert [p for p, _ in out] == [1, 4]
    orig, clone = fields(out[0][1]), fields(out[1][1])
    assert (orig["itype"], orig["count"]) == (0, 1)
    assert (clone["itype"], clone["count"], clone["kept"], clone["lost"]) == (2, 2, 0xAA, 0)


def test_mark_to_drop_in_ingress_and_egress(pipe):
    assert pipe.process(0, pkt(6)) == []
    assert pipe.process(0, pkt(9)) == []


def test_mark_to_drop_clears_multicast(pipe):
    assert pipe.process(0, pkt(11)) == []


def test_exit_ends_ingress(pipe):
    (port, _), = pipe.process(0, pkt(7))
    assert port == 0


def test_truncate(pipe):
    (_, data), = pipe.process(0, pkt(8))
    assert len(data) == 3


def test_set_valid_grows_egress_packet_length(pipe):
    (_, data), = pipe.process(0, pkt(10))
    assert fields(data)["len"] == len(pkt(10)) + 2
    assert len(data) == len(pkt(10)) + 2


def test_endless_resubmit_and_recirculate_are_bounded(pipe):
    assert pipe.process(0, pkt(12)) == []
    assert pipe.process(0, pkt(13)) == []
    assert pipe.stats["loop_drops"] == 2
