"""bmv2 egress-queue semantics of the traffic manager."""

import pytest

from testbed.errors import TestbedError
from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import DROP_FULL, DROP_PRIORITY, TMConfigError, TrafficManager

SECOND = 1_000_000_000


def drain(tm, clock, until_ns, step_ns):
    out = []
    while clock.now_ns() <= until_ns:
        out += tm.dequeue_ready()
        clock.advance_ns(step_ns)
    return out


def test_burst_of_16_at_one_packet_per_second():
    clock = ManualClock()
    tm = TrafficManager(clock)
    tm.set_queue_rate(1, 3)
    results = [tm.enqueue(3, 0, bytes(100)) for _ in range(16)]
    assert [r.enq_qdepth for r in results] == list(range(16))
    assert all(r.accepted and r.enq_timestamp_us == 0 for r in results)
    out = drain(tm, clock, 20 * SECOND, SECOND // 2)
    assert [d.deq_qdepth for d in out] == list(range(15, -1, -1))
    assert [d.enq_qdepth for d in out] == list(range(16))
    assert [d.deq_ns for d in out] == [i * SECOND for i in range(16)]
    assert [d.deq_timedelta_us for d in out] == [i * 1_000_000 for i in range(16)]


def test_unlimited_rate_departs_at_enqueue_time_and_defaults():
    clock = ManualClock(5_000)
    tm = TrafficManager(clock)
    assert tm.next_event_ns() is None
    tm.enqueue(1, 0, b"abc")
    assert tm.next_event_ns() == 5_000
    clock.advance_ns(2_500)
    (d,) = tm.dequeue_ready()
    assert (d.port, d.priority, d.packet, d.length) == (1, 0, b"abc", 3)
    assert (d.enq_ts_us, d.deq_ts_us, d.deq_timedelta_us, d.transmit_at_ns) == (5, 5, 0, 5_000)
    assert tm.dequeue_lag.summary()["max_lag_us"] == 2
    assert tm.queue_stats(1)[0]["limit_packets"] == 64


def test_rate_pps_spaces_departures_and_restarts_after_idle():
    clock = ManualClock()
    tm = TrafficManager(clock, rate_pps=1000)  # 1 ms per packet
    for _ in range(3):
        tm.enqueue(0, 0, bytes(10))
    clock.set_ns(10 * SECOND)
    first = tm.dequeue_ready()
    assert [d.deq_ns for d in first] == [0, 1_000_000, 2_000_000]
    tm.enqueue(0, 0, bytes(10))  # queue idle long enough: leaves at once
    assert tm.dequeue_ready()[0].deq_ns == 10 * SECOND


def test_tail_drop_counts_and_byte_limit():
    clock = ManualClock()
    tm = TrafficManager(clock, depth=4, rate_pps=1)
    results = [tm.enqueue(2, 0, bytes(100)) for _ in range(7)]
    assert [r.accepted for r in results] == [True] * 4 + [False] * 3
    assert {r.drop_reason for r in results[4:]} == {DROP_FULL}
    assert [r.enq_qdepth for r in results[4:]] == [4, 4, 4]
    row = tm.queue_stats(2)[0]
    assert (row["depth"], row["enqueued"], row["dropped_full"], row["dropped_bytes"]) == (4, 4, 3, 300)
    tm.set_queue_depth_bytes(450, 2, 0)
    tm.set_queue_depth(100, 2)
    assert not tm.enqueue(2, 0, bytes(100)).accepted  # 400 + 100 > 450
    assert tm.enqueue(2, 0, bytes(50)).accepted
    assert tm.queue_stats(2)[0]["bytes"] == 450


def test_priority_beyond_configured_queues_is_dropped_and_counted():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2)
    result = tm.enqueue(1, 2, bytes(60))
    assert (result.accepted, result.drop_reason) == (False, DROP_PRIORITY)
    assert tm.enqueue(1, 1, bytes(60)).accepted
    stats = tm.stats()
    assert stats["totals"]["dropped_priority"] == 1
    assert stats["ports"][0]["dropped_priority_bytes"] == 60
    single = TrafficManager(clock)
    assert single.enqueue(1, 1, bytes(60)).drop_reason == DROP_PRIORITY


def test_strict_priority_highest_index_first_among_eligible():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=3, port_rate_bps=8_000_000)  # 100 B = 100 us
    for prio, name in [(0, "low-a"), (0, "low-b"), (1, "mid"), (2, "high"), (0, "low-c")]:
        tm.enqueue(5, prio, name, length=100)
    clock.set_ns(SECOND)
    out = tm.dequeue_ready()
    assert [d.packet for d in out] == ["high", "mid", "low-a", "low-b", "low-c"]
    assert [d.deq_ns for d in out] == [i * 100_000 for i in range(5)]
    assert [d.priority for d in out] == [2, 1, 0, 0, 0]


def test_late_high_priority_packet_overtakes_waiting_low_priority():
    """Priority decides at service time; the packet on the wire is not preempted."""
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, port_rate_bps=8_000_000)
    for i in range(3):
        tm.enqueue(1, 0, f"low{i}", length=100)
    clock.set_ns(50_000)  # low0 is on the wire until 100 us
    tm.enqueue(1, 1, "high", length=100)
    clock.set_ns(SECOND)
    out = tm.dequeue_ready()
    assert [(d.packet, d.deq_ns) for d in out] == [
        ("low0", 0), ("high", 100_000), ("low1", 200_000), ("low2", 300_000)]
    assert out[1].deq_timedelta_us == 50


def test_same_instant_arrival_counts_first_unless_already_dequeued():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, port_rate_bps=1_000_000)
    tm.enqueue(0, 0, "low", length=100)
    tm.enqueue(0, 1, "high", length=100)  # same instant: both wait, priority decides
    assert [d.packet for d in tm.dequeue_ready()] == ["high"]
    clock.advance_ns(800_000)
    tm.enqueue(0, 0, "low2", length=100)
    assert [d.packet for d in tm.dequeue_ready()] == ["low"]
    tm.enqueue(0, 1, "high2", length=100)  # the port already chose at this instant
    clock.advance_ns(800_000)
    assert [d.packet for d in tm.dequeue_ready()] == ["high2"]


def test_per_queue_rate_with_unlimited_port_is_bmv2_behaviour():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2)
    tm.set_queue_rate(1000, 1, 1)  # only the high queue is shaped
    for i in range(2):
        tm.enqueue(1, 1, f"h{i}", length=100)
        tm.enqueue(1, 0, f"l{i}", length=100)
    out = tm.dequeue_ready()
    assert [d.packet for d in out] == ["h0", "l0", "l1"]
    clock.set_ns(1_000_000)
    assert [d.packet for d in tm.dequeue_ready()] == ["h1"]


def test_result_does_not_depend_on_how_late_dequeue_is_called():
    def run(step_ns):
        clock = ManualClock()
        tm = TrafficManager(clock, priority_queues=2, port_rate_bps=1_000_000, rate_pps=5000)
        out = []
        for i in range(40):
            tm.enqueue(i % 3, i % 2, i, length=50 + 10 * i)
            clock.advance_ns(37_000)
            if clock.now_ns() % step_ns < 37_000:
                out += tm.dequeue_ready()
        clock.advance_ns(SECOND)
        out += tm.dequeue_ready()
        return sorted((d.port, d.deq_ns, d.packet, d.enq_qdepth, d.deq_qdepth) for d in out)

    assert run(37_000) == run(400_000) == run(10 * SECOND)


def test_next_event_reports_the_earliest_scheduled_dequeue():
    clock = ManualClock()
    tm = TrafficManager(clock, rate_pps=100)
    tm.enqueue(1, 0, b"a")
    tm.enqueue(1, 0, b"b")
    tm.enqueue(2, 0, b"c")
    assert tm.next_event_ns() == 0
    assert len(tm.dequeue_ready()) == 2
    assert tm.next_event_ns() == 10_000_000
    clock.set_ns(10_000_000)
    assert [d.packet for d in tm.dequeue_ready()] == [b"b"]
    assert tm.next_event_ns() is None


def test_invalid_settings_raise_testbed_errors():
    clock = ManualClock()
    with pytest.raises(TMConfigError, match="priority_queues"):
        TrafficManager(clock, priority_queues=9)
    tm = TrafficManager(clock, priority_queues=2)
    for call in (lambda: tm.set_queue_rate(-1), lambda: tm.set_queue_depth(1.5),
                 lambda: tm.set_queue_depth(10, 511), lambda: tm.set_queue_rate(10, 1, 2),
                 lambda: tm.set_queue_rate(10, None, 1), lambda: tm.set_port_rate_bps(1e6),
                 lambda: tm.set_port_delay_us(-3), lambda: tm.enqueue(600, 0, b"x")):
        with pytest.raises(TestbedError):
            call()



def test_departure_is_read_by_egress_as_queue_metadata():
    """v1model's egress reads a Departure as it is: QueueMeta's names are its names."""
    from testbed.p4model.v1model import QueueMeta

    clock = ManualClock(3_000)
    tm = TrafficManager(clock)
    tm.set_queue_rate(1000, 1)
    tm.enqueue(1, 0, b"a")
    tm.enqueue(1, 0, b"b")
    clock.advance_ns(2_000_000)
    _, second = tm.dequeue_ready()
    assert second.packet == b"b"
    assert {name: getattr(second, name) for name in QueueMeta._fields} == {
        "enq_ts_us": 3, "enq_qdepth": 1, "deq_timedelta_us": 1000, "deq_qdepth": 0, "deq_ts_us": 1003}


def test_a_refused_setting_changes_nothing_and_a_global_one_reaches_later_ports():
    """A priority without a port is refused before anything changes (also
    not the default of ports made later); a setting for all ports is that
    default, a setting for one port is not."""
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, ports=[1])
    with pytest.raises(TMConfigError):
        tm.set_queue_rate(10, None, 1)
    with pytest.raises(TMConfigError):
        tm.set_queue_depth(3, None, 0)
    assert tm.offer(9, 0, "p", clock.now_ns(), 100) == 0  # a port made after the refusals
    for port in (1, 9):
        assert [(q["rate_pps"], q["limit_packets"]) for q in tm.queue_stats(port)] == [(0, 64), (0, 64)]
    tm.set_queue_rate(1000)
    tm.set_queue_depth(5, 3)
    tm.set_port_delay_us(50)
    tm.set_port_rate_bps(8_000_000, 4)
    for _ in range(3):  # port 7 is made by its first packet
        assert tm.offer(7, 0, "p", clock.now_ns(), 100) >= 0
    assert [(q["rate_pps"], q["limit_packets"]) for q in tm.queue_stats(7)] == [(1000, 64), (1000, 64)]
    assert (tm.port_stats(7)[0]["delay_us"], tm.port_stats(7)[0]["rate_bps"]) == (50, 0)
    clock.advance_ns(SECOND)  # the rate is in force at once: 1000 pps spaces the burst by 1 ms
    times = [d.deq_ns for d in tm.dequeue_ready() if d.port == 7]
    assert [b - a for a, b in zip(times, times[1:])] == [1_000_000, 1_000_000]
