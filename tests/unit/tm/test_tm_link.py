"""The link model: port rate in bits/s, propagation delay, runtime changes."""

from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import TrafficManager, TransmitSchedule

SECOND = 1_000_000_000


def test_bps_rate_occupies_the_port_for_length_times_8_over_rate():
    clock = ManualClock()
    tm = TrafficManager(clock, port_rate_bps=10_000_000)  # 10 Mbit/s
    for length in (1250, 125, 1000):  # 1000 us, 100 us, 800 us
        tm.enqueue(4, 0, length, length=length)
    clock.set_ns(SECOND)
    out = tm.dequeue_ready()
    assert [d.deq_ns for d in out] == [0, 1_000_000, 1_100_000]
    assert [d.transmit_at_ns for d in out] == [1_000_000, 1_100_000, 1_900_000]
    total_bits = sum(8 * d.length for d in out)
    assert total_bits / (out[-1].transmit_at_ns / SECOND) == 10_000_000


def test_bps_rate_rounds_serialisation_up_so_the_rate_is_never_exceeded():
    clock = ManualClock()
    tm = TrafficManager(clock, port_rate_bps=3_000_000)
    for _ in range(3):
        tm.enqueue(0, 0, None, length=1)  # 8 bits = 2666.67 ns
    clock.set_ns(SECOND)
    assert [d.deq_ns for d in tm.dequeue_ready()] == [0, 2667, 5334]


def test_delay_adds_exactly_the_delay_and_keeps_order():
    clock = ManualClock()
    tm = TrafficManager(clock, port_delay_us=250)
    for i in range(5):
        tm.enqueue(1, 0, i, length=64)
        clock.advance_ns(10_000)
    out = tm.dequeue_ready()
    assert [d.packet for d in out] == list(range(5))
    assert [d.transmit_at_ns - d.deq_ns for d in out] == [250_000] * 5


def test_shorter_delay_at_run_time_never_reorders():
    clock = ManualClock()
    tm = TrafficManager(clock)
    tm.set_port_delay_us(1000, 1)
    tm.enqueue(1, 0, "before", length=64)
    first = tm.dequeue_ready()
    clock.advance_ns(100_000)
    tm.set_port_delay_us(10, 1)
    tm.enqueue(1, 0, "after", length=64)
    second = tm.dequeue_ready()
    assert first[0].transmit_at_ns == 1_000_000
    assert second[0].transmit_at_ns == 1_000_000  # would be 110 us; held behind "before"
    clock.advance_ns(5_000_000)
    tm.enqueue(1, 0, "later", length=64)
    assert tm.dequeue_ready()[0].transmit_at_ns == clock.now_ns() + 10_000


def test_runtime_rate_change_applies_from_the_moment_it_is_made():
    clock = ManualClock()
    tm = TrafficManager(clock, port_rate_bps=8_000_000)  # 100 B = 100 us
    for i in range(4):
        tm.enqueue(1, 0, i, length=100)
    clock.set_ns(150_000)  # packets 0 and 1 have started at the old rate
    tm.set_port_rate_bps(800_000, 1)  # 100 B = 1 ms
    clock.set_ns(SECOND)
    out = tm.dequeue_ready()
    assert [d.deq_ns for d in out] == [0, 100_000, 200_000, 1_200_000]


def test_runtime_queue_rate_and_depth_changes():
    clock = ManualClock()
    tm = TrafficManager(clock, ports=[1, 2])
    tm.set_queue_rate(10)  # every port, and ports created later
    tm.set_queue_depth(2, 2)
    assert [tm.enqueue(2, 0, i, length=1).accepted for i in range(3)] == [True, True, False]
    assert tm.enqueue(7, 0, "new port", length=1).accepted
    rows = {(r["port"], r["priority"]): r for r in tm.queue_stats()}
    assert rows[(7, 0)]["rate_pps"] == 10 and rows[(1, 0)]["rate_pps"] == 10
    assert rows[(1, 0)]["limit_packets"] == 64 and rows[(2, 0)]["limit_packets"] == 2
    clock.set_ns(SECOND)
    assert [d.deq_ns for d in tm.dequeue_ready() if d.port == 2] == [0, 100_000_000]


def test_transmit_schedule_holds_packets_until_transmit_at():
    clock = ManualClock()
    tm = TrafficManager(clock, port_delay_us=100, port_rate_bps=8_000_000)
    schedule = TransmitSchedule()
    for i in range(3):
        tm.enqueue(i % 2, 0, i, length=100)
    clock.set_ns(100_000)  # packet 2 waits for packet 0 on port 0
    for d in tm.dequeue_ready():
        schedule.push(d.port, d.transmit_at_ns, d.packet)
    assert len(schedule) == 3 and schedule.next_ns() == 200_000
    assert schedule.pop_due(199_999) == []
    assert sorted(schedule.pop_due(200_000)) == [(0, 0), (1, 1)]
    assert schedule.next_ns() == 300_000
    assert schedule.pop_due(310_000) == [(0, 2)]
    assert len(schedule) == 0 and schedule.next_ns() is None
    assert schedule.transmit_lag.summary()["max_lag_us"] == 10
    schedule.push(3, 500, "a")
    schedule.push(3, 400, "b")  # an earlier time is held behind "a"
    assert schedule.pop_due(450) == [] and schedule.pop_due(500) == [(3, "a"), (3, "b")]
