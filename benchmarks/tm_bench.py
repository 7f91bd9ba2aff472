"""Traffic-manager speed: packets through enqueue + dequeue per second of CPU.

The switch must forward tens of thousands of packets/s in Python, so the TM
may only take a small share of each packet's budget.  Model time is driven
by a ManualClock, so the figures are the TM's own cost, not sleeping.
"""

from __future__ import annotations

import time

from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import TMCommands, TrafficManager, TransmitSchedule
from testbed.p4model.tm.control import ControlServer, LockedExecutor, SwitchControlClient

PACKETS = 200_000


def _one_by_one() -> float:
    """Unlimited queue: every packet enqueued then dequeued on its own."""
    clock = ManualClock()
    tm = TrafficManager(clock)
    payload = bytes(1024)
    enqueue, dequeue = tm.enqueue, tm.dequeue_ready
    start = time.perf_counter()
    now = 0
    for _ in range(PACKETS):
        now += 1000
        enqueue(1, 0, payload, now)
        dequeue(now)
    return PACKETS / (time.perf_counter() - start)


def _loaded_links() -> tuple[float, float, int]:
    """4 ports at 20 Mbit/s with delay, 2 priorities, bursts of 32 cells, plus the delay line."""
    clock = ManualClock()
    tm = TrafficManager(clock, priority_queues=2, depth=256, port_rate_bps=20_000_000,
                        port_delay_us=10, ports=range(4))
    schedule = TransmitSchedule()
    payload = bytes(1024)
    enqueue, dequeue = tm.enqueue, tm.dequeue_ready
    push, pop = schedule.push, schedule.pop_due
    cell_ns = 1024 * 8 * 1_000_000_000 // 20_000_000
    sent = 0
    start = time.perf_counter()
    now = 0
    for burst in range(PACKETS // 32):
        for i in range(32):
            enqueue(i & 3, i & 1, payload, now, 1024)
        now += cell_ns * 8  # the four links drain 32 cells in 8 cell times
        for d in dequeue(now):
            push(d.port, d.transmit_at_ns, d.packet)
        sent += len(pop(now))
    elapsed = time.perf_counter() - start
    return PACKETS / elapsed, sent / elapsed, tm.stats()["totals"]["dropped_full"]


def _control_round_trips() -> float:
    tm = TrafficManager(ManualClock(), ports=range(4))
    with ControlServer(LockedExecutor(TMCommands(tm)), port=0) as server:
        with SwitchControlClient(*server.address) as client:
            n = 2000
            start = time.perf_counter()
            for i in range(n):
                client.set_queue_depth(64 + (i & 7), i & 3)
            return n / (time.perf_counter() - start)


def run() -> list[str]:
    single = _one_by_one()
    loaded, transmitted, drops = _loaded_links()
    control = _control_round_trips()
    return [
        f"unlimited queue, enqueue+dequeue_ready per packet: {single:,.0f} packets/s "
        f"({1e6 / single:.2f} us/packet)",
        f"4 ports x 2 priorities at 20 Mbit/s + 10 us delay, bursts of 32: {loaded:,.0f} packets/s "
        f"enqueued+dequeued ({1e6 / loaded:.2f} us/packet), {transmitted:,.0f} packets/s through the delay line, "
        f"{drops} packets dropped",
        f"control protocol over loopback TCP: {control:,.0f} set_queue_depth commands/s",
    ]


if __name__ == "__main__":
    for line in run():
        print(line)
