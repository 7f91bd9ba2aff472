"""Registers, counters, meters (bmv2 trTCM), action profiles, digests, random."""

import pytest
from hypothesis import given, settings, strategies as st

from testbed.p4model.clock import ManualClock
from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.externs import (
    ActionProfile, CounterArray, DigestQueue, MeterArray, RandomSource, RegisterArray,
)
from testbed.p4model.runtime.meters import GREEN, RED, YELLOW, MeterState
from testbed.p4model.runtime.tables import ActionCall, TableEntry


def code_of(fn, *args, **kw):
    with pytest.raises(ControlPlaneError) as info:
        fn(*args, **kw)
    return info.value.code


def test_register_read_write_bounds_and_wrap():
    r = RegisterArray("r", 4, 8)
    r.write(1, 0x1FF)
    assert r.read(1) == 0xFF
    assert r.read(4) is None and r.read(-1) is None
    r.write(4, 5)
    assert r.values == [0, 0xFF, 0, 0]
    assert code_of(r.cp_read, 4) == "OUT_OF_RANGE"
    assert code_of(r.cp_write, 0, 256) == "INVALID_ARGUMENT"
    r.cp_write(0, 7)
    assert r.cp_read(0) == 7


def test_counter():
    c = CounterArray("c", 2, "packets_and_bytes")
    c.count(0, 100)
    c.count(0, 50)
    c.count(2, 50)
    assert c.read(0) == (2, 150) and c.read(1) == (0, 0)
    c.write(1, 3, 4)
    assert c.read(1) == (3, 4)
    assert code_of(c.read, 2) == "OUT_OF_RANGE"
    assert code_of(c.write, 0, -1, 0) == "INVALID_ARGUMENT"


def test_meter_unconfigured_is_green():
    m = MeterArray("m", 2, "packets", ManualClock())
    assert all(m.execute(0, 1500) == GREEN for _ in range(100))
    assert m.execute(5, 10) == GREEN
    assert m.get_config(0) is None


def test_meter_packets_burst_then_colours():
    clock = ManualClock()
    m = MeterArray("m", 1, "packets", clock)
    # committed 1 pkt/s burst 2, peak 2 pkt/s burst 3
    m.set_config(0, 1, 2, 2, 3)
    assert [m.execute(0, 64) for _ in range(4)] == [GREEN, GREEN, YELLOW, RED]
    clock.advance_ns(1_000_000_000)      # +1 committed token, +2 peak tokens
    assert [m.execute(0, 64) for _ in range(3)] == [GREEN, YELLOW, RED]
    m.reset_config(0)
    assert m.execute(0, 64) == GREEN


def test_meter_bytes_uses_packet_length():
    clock = ManualClock()
    cell = MeterState("bytes", clock)
    cell.set_config(1000, 1500, 2000, 3000)
    assert cell.execute(1500) == GREEN       # both buckets had enough
    assert cell.execute(1500) == YELLOW      # committed empty, peak 1500 left
    assert cell.execute(100) == RED          # peak empty
    clock.advance_ns(500_000_000)            # +500 committed, +1000 peak
    assert cell.execute(400) == GREEN


def test_meter_rates_validated():
    cell = MeterState("packets", ManualClock())
    assert code_of(cell.set_config, 10, 1, 5, 1) == "INVALID_ARGUMENT"
    assert code_of(cell.set_config, -1, 1, 5, 1) == "INVALID_ARGUMENT"
    m = MeterArray("m", 1, "packets", ManualClock())
    assert code_of(m.set_config, 3, 1, 1, 1, 1) == "OUT_OF_RANGE"


@settings(max_examples=40, deadline=None)
@given(st.integers(10, 1000), st.integers(1, 20), st.integers(1, 4), st.integers(1, 20))
def test_meter_never_green_while_rate_exceeded(cir, cburst, factor, pburst_extra):
    """Sending at more than the peak rate for long: after the bursts are
    used up, the share of GREEN packets never exceeds cir/send_rate."""
    pir = cir * factor
    send_rate = pir * 3
    clock = ManualClock()
    cell = MeterState("packets", clock)
    cell.set_config(cir, cburst, pir, cburst + pburst_extra)
    gap_ns = 1_000_000_000 // send_rate
    colours = []
    for _ in range(3000):
        colours.append(cell.execute(64))
        clock.advance_ns(gap_ns)
    elapsed_s = 3000 * gap_ns / 1e9
    greens = colours.count(GREEN)
    non_red = len(colours) - colours.count(RED)
    assert greens <= cburst + cir * elapsed_s + 1
    assert non_red <= cburst + pburst_extra + pir * elapsed_s + 1
    tail = colours[-500:]
    assert tail.count(GREEN) < len(tail)     # a rate exceeded long-run is never all green
    assert RED in tail


def test_action_profile_members_and_groups():
    p = ActionProfile("p", 4, with_selector=True, max_group_size=3,
                      action_names=["fwd"], action_params={"fwd": (9,)})
    p.insert_member(3, ActionCall("fwd", (3,)))
    p.insert_member(1, ActionCall("fwd", (1,)))
    p.insert_member(2, ActionCall("fwd", (2,)))
    assert code_of(p.insert_member, 1, ActionCall("fwd", (1,))) == "ALREADY_EXISTS"
    assert code_of(p.insert_member, 9, ActionCall("drop")) == "INVALID_ARGUMENT"
    assert code_of(p.insert_member, 9, ActionCall("fwd", (999,))) == "INVALID_ARGUMENT"
    assert code_of(p.modify_member, 9, ActionCall("fwd", (1,))) == "NOT_FOUND"
    p.insert_group(7, [3, 1, 2])
    entry = TableEntry((0,), group_id=7)
    # members in ascending id order, hash mod n
    assert [p.resolve(entry, h).args for h in range(4)] == [(1,), (2,), (3,), (1,)]
    assert code_of(p.insert_group, 7, [1]) == "ALREADY_EXISTS"
    assert code_of(p.insert_group, 8, [1, 1]) == "INVALID_ARGUMENT"
    assert code_of(p.insert_group, 8, [9]) == "NOT_FOUND"
    assert code_of(p.insert_group, 8, [1], max_size=4) == "INVALID_ARGUMENT"
    assert code_of(p.insert_group, 8, [1, 2], max_size=1) == "RESOURCE_EXHAUSTED"
    assert code_of(p.delete_member, 1) == "FAILED_PRECONDITION"
    p.modify_group(7, [2])
    assert p.resolve(entry, 12345) == ActionCall("fwd", (2,))
    p.delete_member(1)
    p.modify_group(7, [])
    assert p.resolve(entry, 0) is None
    p.delete_group(7)
    assert code_of(p.delete_group, 7) == "NOT_FOUND"
    p.insert_member(4, ActionCall("fwd", (4,)))
    p.insert_member(5, ActionCall("fwd", (5,)))
    assert code_of(p.insert_member, 6, ActionCall("fwd", (6,))) == "RESOURCE_EXHAUSTED"


def test_action_profile_without_selector_has_no_groups():
    p = ActionProfile("p", 4, with_selector=False)
    p.insert_member(1, ActionCall("a"))
    assert code_of(p.insert_group, 1, [1]) == "INVALID_ARGUMENT"
    assert p.resolve(TableEntry((0,), member_id=1), None) == ActionCall("a")


def test_digest_queue():
    q = DigestQueue(capacity=2)
    q.push("d", (1, 2))
    q.push("d", [3, 4])
    q.push("e", (5,))
    assert len(q) == 2 and q.dropped == 1
    assert q.drain() == [("d", (3, 4)), ("e", (5,))]
    assert q.drain() == []


def test_random_source_inclusive_and_seeded():
    a, b = RandomSource(7), RandomSource(7)
    values = [a.uniform(3, 5) for _ in range(300)]
    assert values == [b.uniform(3, 5) for _ in range(300)]
    assert set(values) == {3, 4, 5}
    assert a.uniform(9, 9) == 9


def test_meter_tokens_accrue_on_clock_whole_units_as_bmv2():
    """bmv2 counts tokens as floor(us_since_origin * rate): at 1 packet/s a
    token arrives at each whole second of the clock, whenever the last
    packet was."""
    clock = ManualClock()
    cell = MeterState("packets", clock)
    cell.set_config(1, 1, 1, 1)
    clock.set_ns(600_000_000)
    assert cell.execute(64) == GREEN          # buckets start full
    clock.set_ns(1_100_000_000)
    assert cell.execute(64) == GREEN          # token of second 1
    clock.set_ns(1_900_000_000)
    assert cell.execute(64) == RED            # no new whole second
    clock.set_ns(2_000_000_000)
    assert cell.execute(64) == GREEN


def test_meter_reconfigure_refills_buckets():
    clock = ManualClock()
    cell = MeterState("packets", clock)
    cell.set_config(1, 1, 1, 1)
    assert cell.execute(64) == GREEN
    assert cell.execute(64) == RED
    cell.set_config(1, 1, 1, 1)
    assert cell.get_config() == (1, 1, 1, 1)
    assert cell.execute(64) == GREEN
