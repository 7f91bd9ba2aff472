"""Priority flow control in the traffic manager: obeying pauses, and when to send them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import TrafficManager
from testbed.p4model.tm.command_language import TMCommands
from testbed.p4model.tm.model import TMConfigError

US = 1000
RATE = 8_000_000  # 1000 bytes take 1000 us


def _tm(**kw):
    clock = ManualClock()
    return clock, TrafficManager(clock, priority_queues=2, port_rate_bps=RATE, **kw)


def test_a_paused_priority_waits_for_the_resume_while_the_other_goes_on():
    clock, tm = _tm()
    tm.pause(1, 0, until_ns=10**12, at_ns=0)
    for i in range(3):
        tm.offer(1, 0, f"data{i}", 0, 1000)
    tm.offer(1, 1, "credit", 0, 1000)
    clock.set_ns(5000 * US)
    out = tm.dequeue_ready()
    assert [d.packet for d in out] == ["credit"]
    tm.pause(1, 0, until_ns=0, at_ns=6000 * US)  # XON at 6 ms
    clock.set_ns(20_000 * US)
    out = tm.dequeue_ready()
    assert [(d.packet, d.deq_ns) for d in out] == [("data0", 6000 * US), ("data1", 7000 * US),
                                                   ("data2", 8000 * US)]
    port = tm.port_stats(1)[0]
    assert (port["pfc_pauses_received"], port["pfc_resumes_received"], port["pfc_paused_us"]) == (1, 1, 6000)


def test_the_packet_on_the_wire_finishes_and_departures_before_the_pause_stand():
    clock, tm = _tm()
    for i in range(3):
        tm.offer(1, 0, i, 0, 1000)
    tm.pause(1, 0, until_ns=10**12, at_ns=1500 * US)  # packet 1 started at 1000 us
    clock.set_ns(10_000 * US)
    assert [(d.packet, d.deq_ns) for d in tm.dequeue_ready()] == [(0, 0), (1, 1000 * US)]
    assert tm.next_event_ns() == 10**12


def test_a_pause_ends_by_itself_at_its_time_without_a_resume():
    clock, tm = _tm()
    tm.pause(2, 0, until_ns=3000 * US, at_ns=0)
    tm.offer(2, 0, "x", 0, 1000)
    assert tm.next_event_ns() == 3000 * US
    clock.set_ns(3000 * US)
    assert [(d.packet, d.deq_ns) for d in tm.dequeue_ready()] == [("x", 3000 * US)]


def test_an_idle_paused_port_takes_no_packet_past_its_queue():
    clock, tm = _tm()
    tm.pause(1, 0, until_ns=10**12, at_ns=0)
    assert tm.depart_now(1, 0, 0, 1000) is None
    tm.pause(1, 0, until_ns=0, at_ns=1)
    assert tm.depart_now(1, 0, 2, 1000) is not None


def test_xoff_is_due_at_the_xoff_th_packet_of_one_source_and_xon_when_it_drains_to_xon():
    clock, tm = _tm()
    tm.set_pfc(3, 1)
    for i in range(4):
        tm.offer(9, 0, ("a", i), i * US, 1000, source=5)
    tm.offer(9, 0, "b", 4 * US, 1000, source=6)  # another source: its own count
    # the first went on the wire at once (a packet in service is no longer queued): the 4th is the 3rd
    assert tm.pfc_events == [(5, 0, True, 3 * US)]
    tm.pfc_events.clear()
    clock.set_ns(100_000 * US)
    out = tm.dequeue_ready()
    assert len(out) == 5
    # source 5 had 3 queued: the second of them leaving (at 2000 us) takes it to 1
    assert tm.pfc_events == [(5, 0, False, 2000 * US)]
    assert tm.pfc_stats()["by_source_port"] == {"5": {"xoff": 1, "xon": 1}}


def test_other_priorities_and_packets_from_no_port_are_not_charged():
    clock, tm = _tm()
    tm.set_pfc(1, 0)
    tm.offer(9, 1, "credit", 0, 100, source=5)
    tm.offer(9, 0, "recirculated", 0, 100, source=-1)
    assert tm.pfc_events == []
    assert tm.pfc_stats()["queued_packets"] == 1


def test_with_pfc_the_lossless_priority_shares_one_pool_instead_of_each_queue_limit():
    clock, tm = _tm(depth=2)
    tm.set_pfc(4, 2, pool=5)
    codes = [tm.offer(1 + i % 2, 0, i, 0, 100, source=7 + i % 3) for i in range(6)]
    assert codes[:5] == [0, 0, 1, 1, 2]  # port 1 holds 3 > its limit of 2
    assert codes[5] < 0
    assert tm.offer(1, 1, "credit", 0, 100) == 0  # the other priority keeps its own limit
    tm.offer(1, 1, "credit", 0, 100)
    assert tm.offer(1, 1, "credit", 0, 100) < 0


def test_pfc_settings_are_checked_and_are_a_command():
    clock, tm = _tm()
    with pytest.raises(TMConfigError, match="XON < XOFF"):
        tm.set_pfc(4, 4)
    reply = TMCommands(tm).execute("set_pfc 8 4")
    assert reply["ok"] and reply["result"]["xoff"] == 8
    assert TMCommands(tm).execute("set_pfc 8")["ok"] is False
    assert tm.stats()["pfc"]["pool_packets"] >= 8


@settings(max_examples=60, deadline=None)
@given(arrivals=st.lists(st.tuples(st.integers(0, 20_000), st.integers(0, 1)), min_size=1, max_size=30),
       pauses=st.lists(st.tuples(st.integers(0, 20_000), st.integers(1, 8_000)), max_size=4))
def test_no_packet_of_a_paused_priority_starts_inside_a_pause_and_each_queue_keeps_its_order(arrivals, pauses):
    clock, tm = _tm()
    events = sorted([(t * US, "arrive", prio) for t, prio in arrivals]
                    + [(t * US, "pause", d * US) for t, d in pauses])
    intervals, out = [], []
    for n, (t, kind, arg) in enumerate(events):
        clock.set_ns(t)
        out += tm.dequeue_ready(t - 1) if t else []
        if kind == "arrive":
            tm.offer(3, arg, (arg, n), t, 1000)
        else:
            tm.pause(3, 0, t + arg, t)
            intervals.append((t, t + arg))
    clock.set_ns(10**12)
    out += tm.dequeue_ready()
    assert len(out) == len(arrivals)
    for d in out:
        if d.priority == 0:
            # a later pause frame replaces an earlier one (its time restarts), as in 802.1Qbb
            active = [(a, b) for a, b in intervals if a <= d.deq_ns]
            if active:
                start, end = active[-1]
                assert not start < d.deq_ns < end
    for prio in (0, 1):
        seq = [d.packet[1] for d in out if d.priority == prio]
        assert seq == sorted(seq)
