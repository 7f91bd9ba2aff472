"""One event loop for many switches (see the package docstring).

    select(every real port, every switch's command and call fds;
           timeout = the earliest entry of one timer heap)
      heap entries due  -> a frame in flight on a link in memory: the
                           downstream switch receives it at its arrival time
                           (the upstream transmit time, however late the loop
                           woke: lateness never shifts the model), or a
                           switch's own next event (dequeue, held transmit,
                           digest deadline)
      port readable     -> that switch's receive_frames (clock-read arrival)
      commands, calls   -> run in this thread, between packets
      then, per switch touched in this pass: service(now), and its next
      event goes on the heap

Only switches that something happened to are serviced and re-armed: the
cost of a pass follows the packets, not the number of switches.  Each
entry of the heap is (time_ns, sequence, switch, port, frame); port None
marks a switch's own timer, and `_armed` keeps the earliest one per switch
so stale timers are skipped.  How late a frame in memory was delivered is
recorded in the upstream switch's transmit lag, as a held transmit's is.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import select
import threading
import time
from typing import Callable

from testbed.p4model.switch.loop import BATCH, MAX_WAIT_S, Switch

log = logging.getLogger("testbed.p4model.fabric")


class FabricLoop:
    """Runs `switches` (name -> Switch) until stop(); wire links with connect() first."""

    def __init__(self, switches: dict[str, Switch], clock) -> None:
        self.switches = switches
        self.clock = clock
        self._heap: list = []
        self._sequence = itertools.count()
        self._armed: dict[Switch, int] = {}
        self._stop = False
        self.touched: set[Switch] = set()  # switches to service at the end of this pass
        self.stats = {"passes": 0, "in_memory": 0, "loop_errors": 0}

    def connect(self, a: str, a_port: int, b: str, b_port: int) -> None:
        """A cable between two switches of this process, both directions."""
        sa, sb = self.switches[a], self.switches[b]
        sa.handoffs[a_port] = self._hand_off(sa, sa.schedule.transmit_lag, sb, b_port)
        sb.handoffs[b_port] = self._hand_off(sb, sb.schedule.transmit_lag, sa, a_port)

    def _hand_off(self, upstream: Switch, lag, downstream: Switch, port: int) -> Callable[[int, bytes], None]:
        heap, push, sequence = self._heap, heapq.heappush, self._sequence

        def hand_off(at_ns: int, data: bytes) -> None:
            push(heap, (at_ns, next(sequence), downstream, port, data, lag))
        return hand_off

    def stop(self) -> None:
        """Ask the loop to end (safe from signal handlers: it wakes every switch's pipe)."""
        self._stop = True
        for switch in self.switches.values():
            switch.stop()

    def _arm(self, switch: Switch) -> None:
        nxt = switch.next_event_ns()
        if nxt is None:
            return
        armed = self._armed.get(switch)
        if armed is None or nxt < armed:
            self._armed[switch] = nxt
            heapq.heappush(self._heap, (nxt, next(self._sequence), switch, None, None, None))

    def deliver_due(self, now: int) -> None:
        """Every heap entry due at `now`, in time order: frames arrive, timers mark their switch."""
        heap, armed, pop, touched = self._heap, self._armed, heapq.heappop, self.touched
        stats = self.stats
        while heap and heap[0][0] <= now:
            at, _, switch, port, data, lag = pop(heap)
            touched.add(switch)
            if port is None:  # the switch's own timer
                if armed.get(switch) == at:
                    del armed[switch]
                continue
            lag.record(now - at)
            switch.stats["rx"] += 1
            stats["in_memory"] += 1
            if switch.captures:
                switch.captures[port].rx.write(data, time.time())
            switch.receive_frames(port, (data,), at)

    def service_touched(self, now: int) -> None:
        """service() every switch something happened to, and put its next event on the heap."""
        for switch in self.touched:
            switch.service(now)
            self._arm(switch)
        self.touched.clear()

    def next_wait_s(self, now: int) -> float:
        heap = self._heap
        if not heap:
            return MAX_WAIT_S
        wait = (heap[0][0] - now) / 1e9
        return 0.0 if wait <= 0 else min(wait, MAX_WAIT_S)

    def run(self) -> None:
        me = threading.get_ident()
        for switch in self.switches.values():
            switch.own_loop(me)
        handlers: dict[int, tuple] = {}
        for switch in self.switches.values():
            for p in switch.ports.values():
                handlers[p.fd] = (switch, p.receive, p.number, switch.captures.get(p.number))
            handlers[switch.command_queue.fileno()] = (switch, None, "commands", None)
            handlers[switch.wake_fd] = (switch, None, "calls", None)
        fds = list(handlers)
        read_clock, clock_offset = self.clock.reading()
        sel, stats, touched = select.select, self.stats, self.touched
        deliver_due, service_touched, next_wait_s = self.deliver_due, self.service_touched, self.next_wait_s
        next_flush = time.monotonic() + 1.0
        captured = [s for s in self.switches.values() if s.captures]
        try:
            for switch in self.switches.values():
                self._arm(switch)
            while not self._stop:
                try:
                    ready = sel(fds, (), (), next_wait_s(read_clock() - clock_offset))[0]
                    stats["passes"] += 1
                    deliver_due(read_clock() - clock_offset)
                    for fd in ready:
                        switch, receive, what, capture = handlers[fd]
                        touched.add(switch)
                        if receive is not None:
                            frames = receive(BATCH)
                            if frames:
                                switch.stats["rx"] += len(frames)
                                if capture is not None:
                                    write, stamp = capture.rx.write, time.time()
                                    for data in frames:
                                        write(data, stamp)
                                switch.receive_frames(what, frames)
                        elif what == "commands":
                            switch.command_queue.drain()
                        else:
                            switch.run_calls()
                    if touched:
                        service_touched(read_clock() - clock_offset)
                    if captured and time.monotonic() >= next_flush:
                        next_flush = time.monotonic() + 1.0
                        for switch in captured:
                            for c in switch.captures.values():
                                c.flush()
                except InterruptedError:
                    continue
                except Exception as error:  # guard: the loop itself must survive anything
                    stats["loop_errors"] += 1
                    touched.clear()
                    log.exception("fabric loop error (continuing): %s", error)
                    for switch in self.switches.values():  # no switch may lose its next event
                        self._arm(switch)
        finally:
            for switch in self.switches.values():
                switch.own_loop(None)
                switch.fail_pending_calls()
