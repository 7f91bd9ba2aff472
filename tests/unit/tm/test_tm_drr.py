"""Deficit round robin between weighted queues of the traffic manager (set_queue_weight), the rule
engine.c follows too (tests/unit/engine/test_engine_differential.py holds the two together)."""

import pytest

from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import TMConfigError, TrafficManager
from testbed.p4model.tm.command_language import TMCommands

MS = 1_000_000


def backlog(tm, port, counts: dict[int, int], length: int = 1000) -> None:
    for prio, n in counts.items():
        for _ in range(n):
            assert tm.enqueue(port, prio, bytes(length), now_ns=0).accepted


def test_backlogged_queues_share_the_link_by_their_quanta():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, port_rate_bps=8_000_000, depth=64)  # 1000 B = 1 ms
    tm.set_queue_weight(1000, 1, 0)
    tm.set_queue_weight(3000, 1, 1)
    backlog(tm, 1, {0: 40, 1: 40})
    order = [d.priority for d in tm.dequeue_ready(now_ns=20 * MS - 1)]
    assert len(order) == 20
    # cursor at queue 0: one frame per turn for queue 0, three for queue 1
    assert order[:8] == [0, 1, 1, 1, 0, 1, 1, 1]
    assert (order.count(0), order.count(1)) == (5, 15)


def test_a_quantum_below_a_frame_accumulates_over_turns():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, port_rate_bps=8_000_000)
    tm.set_queue_weight(400, 1, 0)   # 2.5 turns per 1000-byte frame
    tm.set_queue_weight(1000, 1, 1)
    backlog(tm, 1, {0: 20, 1: 20})
    order = [d.priority for d in tm.dequeue_ready(now_ns=14 * MS - 1)]
    assert (order.count(0), order.count(1)) == (4, 10)


def test_a_strict_queue_goes_first_whatever_its_index():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=3, port_rate_bps=8_000_000)
    tm.set_queue_weight(1000, 1, 0)
    tm.set_queue_weight(1000, 1, 2)   # weighted queue 2 ranks below strict queue 1
    backlog(tm, 1, {0: 3, 1: 3, 2: 3})
    order = [d.priority for d in tm.dequeue_ready(now_ns=9 * MS)]
    assert order == [1, 1, 1, 0, 2, 0, 2, 0, 2]


def test_an_emptied_queue_keeps_no_deficit():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, port_rate_bps=8_000_000)
    tm.set_queue_weight(5000, 1, 0)
    tm.set_queue_weight(5000, 1, 1)
    backlog(tm, 1, {0: 1, 1: 6})
    assert [d.priority for d in tm.dequeue_ready(now_ns=7 * MS)] == [0, 1, 1, 1, 1, 1, 1]
    assert tm._ports[1].queues[0].deficit == 0
    # queue 0 comes back: it starts from its quantum, not from 4000 bytes left of its last turn
    backlog(tm, 1, {0: 6, 1: 6})
    order = [d.priority for d in tm.dequeue_ready(now_ns=20 * MS - 1)]
    assert order.count(0) == 6 and order.count(1) == 6


def test_weights_off_is_strict_priority_and_the_idle_fast_path_returns():
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, port_rate_bps=8_000_000)
    tm.set_queue_weight(1000, 1, 0)
    assert tm.depart_now(1, 0, 0, 1000) is None   # a weighted port queues every packet
    tm.set_queue_weight(0, 1, 0)
    assert tm.depart_now(1, 0, 0, 1000) is not None
    backlog(tm, 1, {0: 2, 1: 2})
    assert [d.priority for d in tm.dequeue_ready(now_ns=10 * MS)] == [1, 1, 0, 0]


def test_weights_are_checked_and_take_the_command_line():
    tm = TrafficManager(ManualClock(), priority_queues=2)
    with pytest.raises(TMConfigError):
        tm.set_queue_weight(-1, 1, 0)
    with pytest.raises(TMConfigError):
        tm.set_queue_weight(100, 1, 5)
    reply = TMCommands(tm).execute("set_queue_weight 1500 3 1")
    assert reply["ok"] and reply["result"]["queues"] == 1
    assert [row.get("weight") for row in tm.queue_stats(3)] == [None, 1500]
    # all ports, later ones too
    TMCommands(tm).execute("set_queue_weight 700")
    tm.enqueue(9, 0, bytes(100), now_ns=0)
    assert tm._ports[9].weighted and tm._ports[9].queues[1].weight == 700
