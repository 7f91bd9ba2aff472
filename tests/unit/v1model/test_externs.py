"""Stateful externs through a loaded program (v1m_externs.p4)."""

from __future__ import annotations

import struct

import pytest

from testbed.p4model.runtime import hashing
from testbed.p4model.runtime.tables import ActionCall, TableEntry

from .conftest import load_program


def flow(src=0x0A000001, dst=0x0A000002, sport=1000, dport=80, op=1, val=5):
    return struct.pack("!IIHHBIHB", src, dst, sport, dport, op, val, 0, 0)


@pytest.fixture()
def pipe():
    p = load_program("v1m_externs.p4", seed=1)
    prof = p.action_profiles["MyIngress.ecmp_sel"] if "MyIngress.ecmp_sel" in p.action_profiles \
        else next(iter(p.action_profiles.values()))
    for mid, port in ((1, 5), (2, 6), (3, 7)):
        prof.insert_member(mid, ActionCall(_name(p, "set_port"), (port,)))
    prof.insert_group(10, [1, 2, 3])
    _table(p, "ecmp").insert(TableEntry(match=(0x0A000002,), group_id=10))
    return p


def _name(p, suffix):
    for t in p.tables.values():
        for a in t.action_names:
            if a.endswith(suffix):
                return a
    raise KeyError(suffix)


def _table(p, suffix):
    return next(t for name, t in p.tables.items() if name.endswith(suffix))


def test_hash_register_and_selector(pipe):
    src, dst, sport, dport = 0x0A000001, 0x0A000002, 1234, 80
    (port, data), = pipe.process(0, flow(src, dst, sport, dport, op=2, val=7))
    h = hashing.crc16(struct.pack("!IIHH", src, dst, sport, dport)) % 65536
    assert int.from_bytes(data[13:17], "big") == 0          # register was 0
    assert int.from_bytes(data[17:19], "big") == h
    sel = hashing.crc16(struct.pack("!IH", src, sport))
    assert port == (5, 6, 7)[sel % 3]
    (_, data), = pipe.process(0, flow(src, dst, sport, dport, op=2, val=1))
    assert int.from_bytes(data[13:17], "big") == 7          # accumulated
    reg = next(iter(pipe.registers.values()))
    assert reg.values[2] == 8


def test_counter_counts_packets_and_bytes(pipe):
    for _ in range(3):
        pipe.process(0, flow(op=4))
    ctr = next(iter(pipe.counters.values()))
    assert ctr.packets[4] == 3 and ctr.bytes[4] == 3 * len(flow())


def test_unconfigured_meter_is_green(pipe):
    (_, data), = pipe.process(0, flow())
    assert data[-1] == 0


def test_direct_counter_counts_hits(pipe):
    acl = _table(pipe, "acl")
    acl.insert(TableEntry(match=((3, 0xFF),), priority=1, action=ActionCall(_name(pipe, "count_it"))))
    pipe.process(0, flow(op=3))
    pipe.process(0, flow(op=3))
    pipe.process(0, flow(op=1))
    entry, = acl.entries()
    assert entry.counter_packets == 2


def test_digest_queued(pipe):
    pipe.process(0, flow(src=0x01020304, op=9))
    items = pipe.digests.drain()
    assert len(items) == 1
    name, values = items[0]
    assert values == (0x01020304, 9)


def test_miss_default_drop(pipe):
    assert pipe.process(0, flow(dst=1)) == []
