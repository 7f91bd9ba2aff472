"""Random enqueue/advance/dequeue sequences keep the traffic manager's invariants."""

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import Departure, TrafficManager

PORTS = 3

enq = st.tuples(st.just("enq"), st.integers(0, PORTS - 1), st.integers(0, 3), st.integers(1, 1500))
ops = st.lists(
    st.one_of(
        enq, enq, enq,  # mostly arrivals, so queues build up and priorities compete
        st.tuples(st.just("adv"), st.integers(0, 400_000)),
        st.tuples(st.just("deq")),
        st.tuples(st.just("depth"), st.integers(0, PORTS - 1), st.integers(0, 6)),
    ),
    min_size=10,
    max_size=150,
)


# a switch's TM set-ups: priorities, queue rate (pps), link rate (bits/s), link delay
setups = dict(
    prios=st.integers(1, 3),
    rate_pps=st.sampled_from([0, 1000, 20_000]),
    rate_bps=st.sampled_from([0, 3_000_000, 50_000_000]),
    delay_us=st.sampled_from([0, 50]),
)


@settings(max_examples=250, deadline=None)
@given(ops=ops, depth=st.integers(1, 6), **setups)
def test_invariants(ops, prios, depth, rate_pps, rate_bps, delay_us):
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=prios, depth=depth, rate_pps=rate_pps,
                        port_rate_bps=rate_bps, port_delay_us=delay_us, ports=range(PORTS))
    accepted = defaultdict(list)  # (port, prio) -> packet ids in enqueue order
    enq_ns, lengths = {}, {}
    offered = defaultdict(int)
    departures = []
    next_id = 0
    for op in ops:
        if op[0] == "enq":
            _, port, prio, length = op
            offered[port] += 1
            result = tm.enqueue(port, prio, next_id, length=length)
            if result.accepted:
                limit = next(r["limit_packets"] for r in tm.queue_stats(port) if r["priority"] == prio)
                assert result.enq_qdepth < limit
                accepted[(port, prio)].append(next_id)
                enq_ns[next_id], lengths[next_id] = clock.now_ns(), length
            else:
                assert result.drop_reason == ("priority" if prio >= prios else "queue_full")
            next_id += 1
        elif op[0] == "adv":
            clock.advance_ns(op[1])
        elif op[0] == "deq":
            departures += tm.dequeue_ready()
        else:
            tm.set_queue_depth(op[2], op[1])
        for row in tm.queue_stats():
            assert row["depth"] <= max(row["limit_packets"], row["max_depth"])
    clock.advance_ns(10**12)
    departures += tm.dequeue_ready()
    assert tm.next_event_ns() is None

    # FIFO per queue, and every accepted packet leaves exactly once
    per_queue = defaultdict(list)
    for d in departures:
        per_queue[(d.port, d.priority)].append(d.packet)
    assert dict(per_queue) == {k: v for k, v in accepted.items() if v}

    # enq_qdepth / deq_qdepth match the queue's contents (ties at one instant may go either way)
    for queue in per_queue.values():
        left = {d.packet: d for d in departures}
        for i, pid in enumerate(queue):
            d, now = left[pid], enq_ns[pid]
            before = [left[q].deq_ns for q in queue[:i]]
            assert sum(t > now for t in before) <= d.enq_qdepth <= sum(t >= now for t in before)
            after = [enq_ns[q] for q in queue[i + 1:]]
            assert sum(t < d.deq_ns for t in after) <= d.deq_qdepth <= sum(t <= d.deq_ns for t in after)

    # accounting adds up
    stats = tm.stats()
    for row in stats["queues"]:
        assert row["depth"] == 0 and row["bytes"] == 0
        assert row["enqueued"] == row["dequeued"] == len(accepted[(row["port"], row["priority"])])
        assert row["enqueued_bytes"] == row["dequeued_bytes"]
    for port_row in stats["ports"]:
        port = port_row["port"]
        queue_rows = [r for r in stats["queues"] if r["port"] == port]
        assert offered[port] == (sum(r["enqueued"] + r["dropped_full"] for r in queue_rows)
                                 + port_row["dropped_priority"])

    # timing: causality, serialisation, delay, order on the wire, metadata sums
    by_port = defaultdict(list)
    for d in departures:
        by_port[d.port].append(d)
        assert d.deq_ns >= enq_ns[d.packet]
        assert d.enq_ts_us + d.deq_timedelta_us == d.deq_ts_us == d.deq_ns // 1000
        assert d.transmit_at_ns >= d.deq_ns + delay_us * 1000
    for port, ds in by_port.items():
        for a, b in zip(ds, ds[1:]):
            serialisation = -(-lengths[a.packet] * 8 * 10**9 // rate_bps) if rate_bps else 0
            assert b.deq_ns >= a.deq_ns + serialisation
            assert b.transmit_at_ns >= a.transmit_at_ns
        if rate_pps == 0:  # strict priority: nothing higher waited while a lower one left
            for d in ds:
                for h in ds:
                    if h.priority > d.priority:
                        assert not (enq_ns[h.packet] < d.deq_ns < h.deq_ns)


@settings(max_examples=250, deadline=None)
@given(ops=ops, depth=st.integers(0, 6), **setups)
def test_depart_now_is_offer_then_dequeue(ops, prios, depth, rate_pps, rate_bps, delay_us):
    """The switch's fast path hands out exactly the departures (times, depths,
    order per port) and counters that offer() + dequeue_ready(now) give
    (the TM serviced right after each arrival, as the switch does)."""
    runs = []
    for fast in (False, True):
        clock = ManualClock()
        tm = TrafficManager(clock, priority_queues=prios, depth=depth, rate_pps=rate_pps,
                            port_rate_bps=rate_bps, port_delay_us=delay_us, ports=range(PORTS))
        out, codes = [], []
        for i, op in enumerate(ops):
            if op[0] == "enq":
                _, port, prio, length = op
                if fast:
                    now = clock.now_ns()
                    at = tm.depart_now(port, prio, now, length)
                    if at is None:
                        codes.append(tm.offer(port, prio, i, now, length))
                    else:  # the queue metadata depart_now implies
                        codes.append(0)
                        us = now // 1000
                        out.append(Departure(port, prio, i, length, us, 0, us, 0, 0, at, now))
                else:
                    codes.append(tm.offer(port, prio, i, clock.now_ns(), length))
                out += tm.dequeue_ready()
            elif op[0] == "adv":
                clock.advance_ns(op[1])
            elif op[0] == "deq":
                out += tm.dequeue_ready()
            else:
                tm.set_queue_depth(op[2], op[1])
        clock.advance_ns(10**12)
        out += tm.dequeue_ready()
        per_port = defaultdict(list)
        for d in out:
            per_port[d.port].append(tuple(d))
        stats = tm.stats()
        del stats["fidelity"], stats["now_us"]
        runs.append((dict(per_port), codes, stats))
    assert runs[0] == runs[1]
