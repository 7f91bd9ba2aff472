"""The traffic manager: egress queues, link rate and link delay of one switch.

It queues packets exactly as bmv2's simple_switch does (QueueingLogicPriRL),
so P4 programs that read enq_qdepth or deq_timedelta behave the same on
both targets.  It also models each link's rate, buffer and propagation
delay, since this kernel has no netem.  docs/p4model-switch.md ("The
traffic manager") gives the whole model; in short:

* Queues: one FIFO per (egress port, priority), with a depth limit (tail
  drop) and a packets/s rate.  A packet's eligible time is fixed at enqueue:
  ``eligible = max(now, last + 1/rate)``, as in bmv2.
* Port: one non-preemptive server per port at R bits/s.  When free, it takes
  the head of the highest-priority queue that is eligible.  Queues given a
  weight (``set_queue_weight``, a quantum in bytes; 0, the default, is strict
  priority) are served only when no strict queue's head is eligible, and
  among themselves by deficit round robin (``_drr_pick``).  A packet leaves
  at ``transmit_at = dequeue + L*8/R + delay``, never earlier than the port's
  previous one, so a delay change never reorders packets.
* Loss (``set_port_loss``) and PFC (``set_pfc``): a seeded draw per packet;
  per-priority pauses obeyed, XOFF/XON decisions per ingress link queued in
  ``pfc_events`` for the switch to send (the frame is cells/pfc.py).

The rule: the model is evaluated lazily but exactly.  Every time and depth it
reports depends only on the arrival times, never on how late the event loop
calls in; that lateness is measured apart (``fidelity``).  Times are integer
nanoseconds from the switch's Clock.  Packets are opaque: only their length
at enqueue and an optional class (the cell type) are used.  One thread (the
switch's event loop) owns it; tm.control is the control path.
"""

from __future__ import annotations

from testbed.cells.classify import CLASSES, UNCLASSIFIED  # packet classes a queue counts separately

import random
from collections import deque
from typing import Any, NamedTuple

from testbed.errors import TestbedError
from testbed.p4model.clock import Clock
from testbed.p4model.tm.lag import LagStats

DEFAULT_DEPTH = 64
MAX_DEPTH = (1 << 19) - 1  # enq_qdepth/deq_qdepth are 19-bit fields
MAX_PRIORITY_QUEUES = 8  # standard_metadata.priority is 3 bits
MAX_PORT = 510  # egress_port is 9 bits and 511 is the drop port
DROP_FULL = "queue_full"
DROP_PRIORITY = "priority"
_NEVER = -(1 << 62)  # "no previous departure": max(now, _NEVER + interval) == now
PRIORITY_DROPPED = -(1 << 40)  # TrafficManager.offer(): dropped for its priority
LINK_LOST = PRIORITY_DROPPED - 1  # TrafficManager.offer(): lost on a lossy link
DROP_LINK_LOSS = "link_loss"


class TMConfigError(TestbedError):
    """A traffic-manager setting or port/priority outside what the model supports."""


class EnqueueResult(NamedTuple):
    accepted: bool
    enq_qdepth: int  # packets in the queue before this one (0 if dropped for priority)
    enq_timestamp_us: int
    drop_reason: str | None = None  # DROP_FULL, DROP_PRIORITY or None


class Departure(NamedTuple):
    port: int
    priority: int
    packet: Any
    length: int
    enq_ts_us: int
    enq_qdepth: int
    deq_ts_us: int  # use as egress_global_timestamp
    deq_qdepth: int
    deq_timedelta_us: int  # deq_ts_us - enq_ts_us, so the metadata adds up
    transmit_at_ns: int  # write to the wire at this time
    deq_ns: int  # scheduled dequeue time (model time)


_new_departure = tuple.__new__  # Departure(...) without NamedTuple's Python-level __new__


class _Queue:
    __slots__ = (
        "items", "limit", "byte_limit", "interval_ns", "_rate_pps", "last_ns", "bytes",
        "max_depth", "enqueued", "dequeued", "dropped_full", "enq_bytes", "deq_bytes",
        "drop_bytes", "passed", "passed_bytes", "class_packets", "class_bytes", "class_drops",
        "weight", "deficit",
    )

    def __init__(self, limit: int, byte_limit: int, rate_pps: float) -> None:
        # item: (eligible_ns, enq_ns, enq_us, enq_qdepth, length, packet)
        self.items: deque = deque()
        self.limit = limit
        self.byte_limit = byte_limit
        self.rate_pps = rate_pps  # and interval_ns
        self.last_ns = _NEVER
        self.bytes = 0
        self.max_depth = 0
        self.enqueued = self.dequeued = self.dropped_full = 0
        self.enq_bytes = self.deq_bytes = self.drop_bytes = 0
        self.passed = self.passed_bytes = 0  # left at arrival (depart_now): both enqueued and dequeued
        self.class_packets = [0] * CLASSES  # accepted (queued or passed), per packet class
        self.class_bytes = [0] * CLASSES
        self.class_drops = [0] * CLASSES  # tail-dropped, per packet class
        self.weight = 0  # DRR quantum in bytes; 0: strict priority (set_queue_weight)
        self.deficit = 0  # DRR: bytes this queue may still send in its current turn

    @property
    def rate_pps(self) -> float:
        return self._rate_pps

    @rate_pps.setter
    def rate_pps(self, pps: float) -> None:  # the packet path reads interval_ns
        self._rate_pps = pps
        self.interval_ns = _interval_ns(pps)


class _Port:
    __slots__ = (
        "number", "queues", "rate_bps", "delay_ns", "free_ns", "last_tx_ns", "next_ns",
        "dropped_priority", "dropped_priority_bytes", "loss", "lost_by_class",
        "pause_until", "paused", "pauses_received", "resumes_received", "paused_since", "paused_ns",
        "peak", "weighted", "cursor", "fresh",
    )

    def __init__(self, number: int, queues: list[_Queue], rate_bps: int, delay_ns: int) -> None:
        self.number = number
        self.queues = queues
        self.rate_bps = rate_bps
        self.delay_ns = delay_ns
        self.free_ns = 0  # the port is busy until then
        self.last_tx_ns = 0  # transmit_at of the previous departure
        self.next_ns: int | None = None  # next scheduled dequeue, None when empty
        self.dropped_priority = 0
        self.dropped_priority_bytes = 0
        self.loss = 0.0  # probability that a packet offered to this port is lost on its link
        self.lost_by_class = [0] * CLASSES
        # PFC received: per priority, no dequeue before this time (0: not paused)
        self.pause_until = [0] * len(queues)
        self.paused = False  # any priority paused (the fast paths test only this)
        self.pauses_received = self.resumes_received = 0
        self.paused_since: int | None = None  # model time the current pause began
        self.paused_ns = 0  # closed pauses, summed
        self.peak = 0  # deepest queue (packets) since the last take_peaks()
        self.weighted = False  # some queue has a weight: deficit round robin among those (_drr_pick)
        self.cursor = 0  # DRR: the weighted queue whose turn it is
        self.fresh = True  # DRR: the cursor's queue has not had its quantum for this turn


def _interval_ns(rate_pps: float) -> int:
    return 0 if rate_pps == 0 else max(1, round(1e9 / rate_pps))


class TrafficManager:
    """Egress queues of one switch; see the module docstring for the semantics."""

    def __init__(
        self,
        clock: Clock,
        priority_queues: int = 1,
        depth: int = DEFAULT_DEPTH,
        rate_pps: float = 0,
        port_rate_bps: int = 0,
        port_delay_us: float = 0,
        ports: list[int] | tuple[int, ...] = (),
    ) -> None:
        if not isinstance(priority_queues, int) or not 1 <= priority_queues <= MAX_PRIORITY_QUEUES:
            raise TMConfigError(
                f"priority_queues must be an integer in 1..{MAX_PRIORITY_QUEUES}, got {priority_queues!r}"
            )
        self._clock = clock
        self.priority_queues = priority_queues
        self._default = {
            "limit": _check_depth(depth),
            "byte_limit": 0,
            "rate_pps": _check_rate_pps(rate_pps),
            "rate_bps": _check_rate_bps(port_rate_bps),
            "delay_ns": _delay_ns(port_delay_us),
        }
        self._ports: dict[int, _Port] = {}
        self._busy: dict[int, _Port] = {}  # ports with queued packets
        self._pending: list[Departure] = []  # departed while enqueue advanced a port
        self._now = 0
        self._rng = random.Random(1)  # link loss draws: the same run loses the same packets
        self.dequeue_lag = LagStats()
        # PFC sent: off until set_pfc; `pfc_events` waits for the switch to send them
        self.pfc_priority: int | None = None
        self.pfc_xoff = self.pfc_xon = self.pfc_pool = 0
        self._pfc_queued = 0  # packets of the PFC priority queued in all ports
        self._pfc_held: dict[int, int] = {}  # source port -> its packets queued here
        self._pfc_off: set[int] = set()  # sources told to pause
        self.pfc_sent: dict[int, list[int]] = {}  # source port -> [XOFF, XON] frames due
        self.pfc_events: list[tuple[int, int, bool, int]] = []
        for number in ports:
            self._port(number)

    # ---- packet path -------------------------------------------------

    def enqueue(self, port: int, priority: int, packet: Any, now_ns: int | None = None,
                length: int | None = None, cls: int = UNCLASSIFIED, source: int = -1) -> EnqueueResult:
        """Queue `packet` (length defaults to len(packet)) for `port` at `priority`
        (`source`: the port it came in on, for PFC; -1 none)."""
        code = self.offer(port, priority, packet, now_ns, length, cls, source)
        enq_us = self._now // 1000  # the (clamped) arrival time offer() used
        if code >= 0:
            return EnqueueResult(True, code, enq_us, None)
        if code == PRIORITY_DROPPED:
            return EnqueueResult(False, 0, enq_us, DROP_PRIORITY)
        return EnqueueResult(False, -1 - code, enq_us, DROP_FULL)

    def offer(self, port: int, priority: int, packet: Any, now_ns: int | None = None,
              length: int | None = None, cls: int = UNCLASSIFIED, source: int = -1) -> int:
        """enqueue() without the result object, for the switch's packet path.

        Returns enq_qdepth (>= 0) when the packet was queued, ``-1 - depth``
        when it was tail-dropped (DROP_FULL) and PRIORITY_DROPPED when its
        priority has no queue; the model is exactly enqueue()'s."""
        if now_ns is None:
            now_ns = self._clock.now_ns()
        if now_ns < self._now:
            now_ns = self._now
        else:
            self._now = now_ns
        p = self._ports.get(port)
        if p is None:
            p = self._port(port)
        elif p.next_ns is not None and p.next_ns < now_ns:
            # departures strictly before now; at equal times arrivals come first
            self._run_port(p, now_ns - 1, self._pending)
        if length is None:
            length = len(packet)
        queues = p.queues
        if not 0 <= priority < len(queues):
            p.dropped_priority += 1
            p.dropped_priority_bytes += length
            return PRIORITY_DROPPED
        if p.loss and self._rng.random() < p.loss:
            p.lost_by_class[cls] += 1
            return LINK_LOST
        q = queues[priority]
        items = q.items
        depth = len(items)
        lossless = priority == self.pfc_priority
        if (self._pfc_queued >= self.pfc_pool if lossless else depth >= q.limit) \
                or (q.byte_limit and q.bytes + length > q.byte_limit):
            q.dropped_full += 1
            q.drop_bytes += length
            q.class_drops[cls] += 1
            return -1 - depth
        eligible = q.last_ns + q.interval_ns
        if eligible < now_ns:
            eligible = now_ns
        q.last_ns = eligible
        if lossless:
            self._pfc_charge(source, now_ns)
        else:
            source = -1
        items.append((eligible, now_ns, now_ns // 1000, depth, length, packet, source))
        q.bytes += length
        q.enqueued += 1
        q.enq_bytes += length
        q.class_packets[cls] += 1
        q.class_bytes[cls] += length
        if depth >= q.max_depth:
            q.max_depth = depth + 1
        if depth >= p.peak:
            p.peak = depth + 1
        start = p.free_ns if p.free_ns > eligible else eligible
        if p.paused and p.pause_until[priority] > start:
            start = p.pause_until[priority]
        if p.next_ns is None:
            p.next_ns = start
            self._busy[port] = p
        elif start < p.next_ns:
            p.next_ns = start
        return depth

    def depart_now(self, port: int, priority: int, now_ns: int, length: int,
                   cls: int = UNCLASSIFIED) -> int | None:
        """A packet whose link is idle leaves at its arrival: its transmit time, or None.

        When `port` is idle (nothing queued, nothing departed-but-not-handed-
        out, the link free by now) and the queue's rate lets a packet go at
        once, the packet is counted as enqueued and dequeued at `now_ns` and
        its transmit_at_ns is returned: its queue metadata is then known
        without a Departure (enq_ts_us = deq_ts_us = now_ns // 1000, depths
        and wait 0).  Otherwise nothing changes but the model's clock and
        None is returned: the caller offer()s the packet.  Exactly what
        offer() followed by dequeue_ready(now) gives (property-tested),
        minus the queue round trip: on an idle link the usual case, and the
        switch's fast path.  A caller that services the TM only after a
        burst of same-instant arrivals would see those queue behind each
        other instead; the switch reads the clock per packet."""
        if now_ns < self._now:
            now_ns = self._now
        else:
            self._now = now_ns
        p = self._ports.get(port)
        if p is None or p.next_ns is not None or p.free_ns > now_ns or self._pending or p.loss \
                or p.paused or p.weighted or not 0 <= priority < len(p.queues):
            return None
        q = p.queues[priority]
        if q.last_ns + q.interval_ns > now_ns or not q.limit or (q.byte_limit and length > q.byte_limit):
            return None
        q.last_ns = now_ns
        q.passed += 1
        q.passed_bytes += length
        q.class_packets[cls] += 1
        q.class_bytes[cls] += length
        if not q.max_depth:
            q.max_depth = 1
        if not p.peak:
            p.peak = 1
        self.dequeue_lag.on_time += 1  # dequeued at its scheduled time
        rate = p.rate_bps
        if rate:
            now_ns += (length * 8_000_000_000 + rate - 1) // rate
        p.free_ns = now_ns
        at = now_ns + p.delay_ns
        if at < p.last_tx_ns:
            return p.last_tx_ns
        p.last_tx_ns = at
        return at

    # ---- priority flow control ---------------------------------------

    def set_pfc(self, xoff: int, xon: int, priority: int = 0, pool: int | None = None) -> dict:
        """Lossless `priority`: pause a source at `xoff` of its packets queued here, resume at
        `xon`; that priority's queues share `pool` packets (default: every port's queue limit
        summed). xoff 0 turns PFC off."""
        if not isinstance(xoff, int) or not isinstance(xon, int) or xoff < 0 or not 0 <= xon < max(xoff, 1):
            raise TMConfigError(f"PFC needs integer thresholds with 0 <= XON < XOFF, got XOFF {xoff!r} XON {xon!r}")
        if not isinstance(priority, int) or not 0 <= priority < self.priority_queues:
            raise TMConfigError(f"PFC priority {priority!r} does not exist: this switch has "
                                f"{self.priority_queues} priority queue(s)")
        self._advance()
        if self._pfc_queued:
            raise TMConfigError("PFC cannot be changed while packets of its priority are queued")
        if xoff == 0:
            self.pfc_priority = None
            self.pfc_xoff = self.pfc_xon = self.pfc_pool = 0
            return {"pfc": "off"}
        if pool is None:
            pool = sum(p.queues[priority].limit for p in self._ports.values()) or self._default["limit"]
        if not isinstance(pool, int) or pool < xoff:
            raise TMConfigError(f"a PFC buffer pool must hold at least XOFF ({xoff}) packets, got {pool!r}")
        self.pfc_priority, self.pfc_xoff, self.pfc_xon, self.pfc_pool = priority, xoff, xon, pool
        return {"priority": priority, "xoff": xoff, "xon": xon, "pool_packets": pool}

    def _pfc_charge(self, source: int, now_ns: int) -> None:
        self._pfc_queued += 1
        if source < 0:
            return
        held = self._pfc_held[source] = self._pfc_held.get(source, 0) + 1
        if held >= self.pfc_xoff and source not in self._pfc_off:
            self._pfc_off.add(source)
            self.pfc_sent.setdefault(source, [0, 0])[0] += 1
            self.pfc_events.append((source, self.pfc_priority, True, now_ns))

    def _pfc_release(self, source: int, at_ns: int) -> None:
        self._pfc_queued -= 1
        if source < 0:
            return
        held = self._pfc_held[source] = self._pfc_held[source] - 1
        if held <= self.pfc_xon and source in self._pfc_off:
            self._pfc_off.discard(source)
            self.pfc_sent[source][1] += 1
            self.pfc_events.append((source, self.pfc_priority, False, at_ns))

    def pause(self, port: int, priority: int, until_ns: int, at_ns: int) -> None:
        """A PFC frame arrived on `port` at `at_ns`: serve its `priority` queue no earlier than
        `until_ns` (0: resume now). Departures before `at_ns` are not affected."""
        if not 0 <= priority < self.priority_queues:
            return  # a priority this switch does not queue: nothing to hold
        p = self._ports.get(port)
        if p is None:
            p = self._port(port)
        if at_ns < self._now:
            at_ns = self._now
        else:
            self._now = at_ns
        if p.next_ns is not None and p.next_ns < at_ns:
            self._run_port(p, at_ns - 1, self._pending)
        if p.free_ns < at_ns:  # served up to the frame's arrival: nothing may start earlier now
            p.free_ns = at_ns
        was = p.pause_until[priority] > at_ns
        now_paused = until_ns > at_ns
        p.pause_until[priority] = until_ns if now_paused else 0
        if now_paused and not was:
            p.pauses_received += 1
            if p.paused_since is None:
                p.paused_since = at_ns
        elif not now_paused:
            p.resumes_received += 1
        p.paused = any(u > at_ns for u in p.pause_until)
        if not p.paused and p.paused_since is not None:
            p.paused_ns += at_ns - p.paused_since
            p.paused_since = None
        # the port's next dequeue moves with the pause: recompute it from the heads
        nxt = None
        for i, q in enumerate(p.queues):
            if q.items:
                e = q.items[0][0]
                if p.pause_until[i] > e:
                    e = p.pause_until[i]
                if nxt is None or e < nxt:
                    nxt = e
        if nxt is None:
            return
        if p.free_ns > nxt:
            nxt = p.free_ns
        p.next_ns = nxt
        self._busy[port] = p

    def port_rate_bps(self, port: int) -> int:
        """The link rate of `port` (0: unlimited)."""
        p = self._ports.get(port)
        return p.rate_bps if p is not None else self._default["rate_bps"]

    def control_frame_arrival_ns(self, port: int, at_ns: int, length: int) -> int:
        """When a MAC control frame sent on `port` at `at_ns` reaches the far end: it takes no
        queue, only its own serialisation and the link's delay."""
        p = self._ports.get(port) or self._port(port)
        rate = p.rate_bps
        return at_ns + ((length * 8_000_000_000 + rate - 1) // rate if rate else 0) + p.delay_ns

    def has_work(self) -> bool:
        """True when any packet is queued or departed-but-not-handed-out (cheap)."""
        return bool(self._busy or self._pending)

    def next_event_ns(self) -> int | None:
        """Earliest time at which dequeue_ready has work (may be in the past), or None."""
        best = None
        if self._pending:
            best = min(d.deq_ns for d in self._pending)
        for p in self._busy.values():
            if best is None or p.next_ns < best:
                best = p.next_ns
        return best

    def dequeue_ready(self, now_ns: int | None = None) -> list[Departure]:
        """All packets whose scheduled dequeue time is <= now, in order per port."""
        if now_ns is None:
            now_ns = self._clock.now_ns()
        if now_ns < self._now:
            now_ns = self._now
        else:
            self._now = now_ns
        out = self._pending
        self._pending = []
        for p in list(self._busy.values()):
            if p.next_ns <= now_ns:
                self._run_port(p, now_ns, out)
        record = self.dequeue_lag.record
        for d in out:
            record(now_ns - d.deq_ns)
        return out

    def _run_port(self, p: _Port, until_ns: int, out: list[Departure]) -> None:
        """Serve port `p` in model time up to `until_ns`, appending departures to `out`."""
        queues = p.queues
        rate = p.rate_bps
        delay = p.delay_ns
        free = p.free_ns
        last_tx = p.last_tx_ns
        number = p.number
        single = queues[0] if len(queues) == 1 and not p.paused and not p.weighted else None
        pauses = p.pause_until
        pfc_priority = self.pfc_priority
        next_ns = None
        while True:
            if single is not None:
                q = single
                if not q.items:
                    break
                head = q.items[0][0]
                t = free if free > head else head
                if t > until_ns:
                    next_ns = t
                    break
                prio = 0
            else:
                head = None
                for i, q in enumerate(queues):
                    if q.items:
                        e = q.items[0][0]
                        if pauses[i] > e:  # a paused queue's head waits for the resume
                            e = pauses[i]
                        if head is None or e < head:
                            head = e
                if head is None:
                    break
                t = free if free > head else head
                if t > until_ns:
                    next_ns = t
                    break
                prio = len(queues) - 1
                while True:
                    q = queues[prio]
                    if q.items and q.items[0][0] <= t and pauses[prio] <= t and not q.weight:
                        break
                    prio -= 1
                    if prio < 0:  # no strict queue is eligible: a weighted one is
                        prio = _drr_pick(p, t)
                        q = queues[prio]
                        break
            items = q.items
            if q.weight:
                q.deficit -= items[0][4]
                if len(items) == 1:
                    q.deficit = 0
            _, _, enq_us, enq_depth, length, packet, source = items.popleft()
            if prio == pfc_priority:
                self._pfc_release(source, t)
            q.bytes -= length
            q.dequeued += 1
            q.deq_bytes += length
            free = t + (length * 8_000_000_000 + rate - 1) // rate if rate else t
            at = free + delay
            if at < last_tx:
                at = last_tx
            last_tx = at
            deq_us = t // 1000
            out.append(_new_departure(Departure, (number, prio, packet, length, enq_us, enq_depth, deq_us,
                                                  len(items), deq_us - enq_us, at, t)))
        p.free_ns = free
        p.last_tx_ns = last_tx
        p.next_ns = next_ns
        if next_ns is None:
            self._busy.pop(number, None)

    def _advance(self) -> None:
        """Bring every port to the clock's now before a setting changes or is read."""
        now_ns = max(self._clock.now_ns(), self._now)
        self._now = now_ns
        for p in list(self._busy.values()):
            if p.next_ns < now_ns:
                self._run_port(p, now_ns - 1, self._pending)

    # ---- configuration ----------------------------------------------

    def _port(self, number: int) -> _Port:
        check_port(number)
        d = self._default
        queues = [_Queue(d["limit"], d["byte_limit"], d["rate_pps"]) for _ in range(self.priority_queues)]
        for q in queues:
            q.weight = d.get("weight", 0)
        p = _Port(number, queues, d["rate_bps"], d["delay_ns"])
        p.weighted = any(q.weight for q in queues)
        self._ports[number] = p
        return p

    def _select_queues(self, port: int | None, priority: int | None) -> list[_Queue]:
        if port is None:
            if priority is not None:
                raise TMConfigError("a priority was given without a port; give both or neither")
            return [q for p in self._ports.values() for q in p.queues]
        p = self._ports.get(port) or self._port(port)
        if priority is None:
            return list(p.queues)
        if not isinstance(priority, int) or not 0 <= priority < self.priority_queues:
            raise TMConfigError(
                f"priority {priority!r} does not exist: this switch has {self.priority_queues} "
                f"priority queue(s), 0..{self.priority_queues - 1}"
            )
        return [p.queues[priority]]

    def _select_ports(self, port: int | None) -> list[_Port]:
        if port is None:
            return list(self._ports.values())
        return [self._ports.get(port) or self._port(port)]

    def set_queue_rate(self, pps: float, port: int | None = None, priority: int | None = None) -> int:
        """bmv2 set_queue_rate: packets/s (0 = unlimited) for all / one port's / one queue(s)."""
        return self._on_queues("rate_pps", _check_rate_pps(pps), port, priority)

    def set_queue_depth(self, packets: int, port: int | None = None, priority: int | None = None) -> int:
        """bmv2 set_queue_depth: limit in packets; queued packets above a new limit stay."""
        return self._on_queues("limit", _check_depth(packets), port, priority)

    def set_queue_depth_bytes(self, nbytes: int, port: int | None = None, priority: int | None = None) -> int:
        """Extra limit in bytes (0 = none); a packet is dropped if either limit is exceeded."""
        if not isinstance(nbytes, int) or nbytes < 0:
            raise TMConfigError(f"a byte limit must be an integer >= 0 (0 = none), got {nbytes!r}")
        return self._on_queues("byte_limit", nbytes, port, priority)

    def set_queue_weight(self, quantum: int, port: int | None = None, priority: int | None = None) -> int:
        """Deficit round robin among weighted queues: `quantum` bytes per turn (0 = strict priority,
        the default); weighted queues are served when no strict queue is eligible."""
        if not isinstance(quantum, int) or isinstance(quantum, bool) or not 0 <= quantum <= 1 << 30:
            raise TMConfigError(f"queue weight must be a quantum of 0..{1 << 30} bytes, got {quantum!r}")
        changed = self._on_queues("weight", quantum, port, priority)
        for p in self._select_ports(port):
            p.weighted = any(q.weight for q in p.queues)
        return changed

    def set_port_rate_bps(self, bps: int, port: int | None = None) -> int:
        """Link rate in bits/s (0 = unlimited); the packet on the wire keeps its old timing."""
        return self._on_ports("rate_bps", _check_rate_bps(bps), port)

    def set_port_delay_us(self, delay_us: float, port: int | None = None) -> int:
        """Propagation delay in µs for packets dequeued from now on (never reorders)."""
        return self._on_ports("delay_ns", _delay_ns(delay_us), port)

    def set_port_loss(self, probability: float, port: int | None = None) -> int:
        """Probability in [0, 1) that a packet offered to the port is lost on its link."""
        if not isinstance(probability, (int, float)) or not 0 <= probability < 1:
            raise TMConfigError(f"a loss probability must be in [0, 1), got {probability!r}")
        return self._on_ports("loss", float(probability), port)

    def _on_queues(self, setting: str, value, port: int | None, priority: int | None) -> int:
        """Set a queue setting on all queues, one port's or one queue (checked
        before anything changes); for all queues also the default of ports
        made later."""
        queues = self._select_queues(port, priority)
        self._advance()
        if port is None:
            self._default[setting] = value
        for q in queues:
            setattr(q, setting, value)
        return len(queues)

    def _on_ports(self, setting: str, value, port: int | None) -> int:
        """Set a link setting on all ports or one; for all also the default of ports made later."""
        ports = self._select_ports(port)
        self._advance()
        if port is None:
            self._default[setting] = value
        for p in ports:
            setattr(p, setting, value)
        return len(ports)

    # ---- statistics --------------------------------------------------

    def queue_stats(self, port: int | None = None) -> list[dict]:
        """Per-queue occupancy, limits and counters (lengths in bytes, rates as set)."""
        if port is not None:
            check_port(port)
        self._advance()
        rows = []
        for number in sorted(self._ports):
            if port is not None and number != port:
                continue
            p = self._ports[number]
            for prio, q in enumerate(p.queues):
                rows.append({
                    "port": number,
                    "priority": prio,
                    "depth": len(q.items),
                    "bytes": q.bytes,
                    "max_depth": q.max_depth,
                    "limit_packets": q.limit,
                    "limit_bytes": q.byte_limit,
                    "rate_pps": q.rate_pps,
                    **({"weight": q.weight} if q.weight else {}),
                    "enqueued": q.enqueued + q.passed,
                    "dequeued": q.dequeued + q.passed,
                    "dropped_full": q.dropped_full,
                    "enqueued_bytes": q.enq_bytes + q.passed_bytes,
                    "dequeued_bytes": q.deq_bytes + q.passed_bytes,
                    "dropped_bytes": q.drop_bytes,
                    "by_class": {str(c): {"packets": q.class_packets[c], "bytes": q.class_bytes[c],
                                          "dropped": q.class_drops[c]}
                                 for c in range(CLASSES) if q.class_packets[c] or q.class_drops[c]},
                })
        return rows

    def sample(self) -> list[dict]:
        """Every port's telemetry, as the native engine's NativeFabric.sample gives it (without
        "switch"): "peak" is the deepest queue since the previous call, which restarts it from what
        is queued now; a call from another thread may miss a packet's share of a peak, never a count."""
        out = []
        for number, p in sorted(self._ports.items()):
            depth = max((len(q.items) for q in p.queues), default=0)
            peak, p.peak = p.peak, depth
            out.append({"port": number, "peak": peak,
                        "queue_full": sum(q.dropped_full for q in p.queues),
                        "lost": p.dropped_priority + sum(p.lost_by_class),
                        "class_packets": [sum(q.class_packets[c] for q in p.queues) for c in range(CLASSES)],
                        "class_bytes": [sum(q.class_bytes[c] for q in p.queues) for c in range(CLASSES)]})
        return out

    def port_stats(self, port: int | None = None) -> list[dict]:
        """Per-port link settings and drops that belong to no queue."""
        if port is not None:
            check_port(port)
        self._advance()
        return [
            {
                "port": n,
                "rate_bps": p.rate_bps,
                "delay_us": p.delay_ns / 1000,
                "depth": sum(len(q.items) for q in p.queues),
                "dropped_priority": p.dropped_priority,
                "dropped_priority_bytes": p.dropped_priority_bytes,
                "loss": p.loss,
                "lost_link_by_class": {str(c): n for c, n in enumerate(p.lost_by_class) if n},
                "pfc_pauses_received": p.pauses_received,
                "pfc_resumes_received": p.resumes_received,
                "pfc_paused_us": (p.paused_ns + (self._now - p.paused_since if p.paused_since is not None
                                                 else 0)) / 1000,
            }
            for n, p in sorted(self._ports.items())
            if port is None or n == port
        ]

    def stats(self) -> dict:
        """Everything: queues, ports, totals and the fidelity measure."""
        queues = self.queue_stats()
        ports = self.port_stats()
        totals = {
            key: sum(row[key] for row in queues)
            for key in ("depth", "bytes", "enqueued", "dequeued", "dropped_full",
                        "enqueued_bytes", "dequeued_bytes", "dropped_bytes")
        }
        totals["dropped_priority"] = sum(row["dropped_priority"] for row in ports)
        return {
            "priority_queues": self.priority_queues,
            "pfc": self.pfc_stats(),
            "now_us": self._now // 1000,
            "totals": totals,
            "fidelity": {"dequeue": self.dequeue_lag.summary()},
            "ports": ports,
            "queues": queues,
        }


    def pfc_stats(self) -> dict | None:
        """PFC's settings and the pause frames this switch was due to send (None: PFC off)."""
        if self.pfc_priority is None:
            return None
        return {"priority": self.pfc_priority, "xoff_packets": self.pfc_xoff, "xon_packets": self.pfc_xon,
                "pool_packets": self.pfc_pool, "queued_packets": self._pfc_queued,
                "xoff_sent": sum(x for x, _ in self.pfc_sent.values()),
                "xon_sent": sum(y for _, y in self.pfc_sent.values()),
                "by_source_port": {str(port): {"xoff": x, "xon": y} for port, (x, y) in sorted(self.pfc_sent.items())}}


def _drr_pick(p: _Port, t: int) -> int:
    """The weighted queue port `p` serves at `t`, by deficit round robin (a weighted queue's head
    is eligible at `t`).  The rule, which engine.c's drr_pick follows step for step: visit the
    weighted queues in index order from the cursor, round and round; a queue whose head is
    eligible and not paused gets its quantum once per turn (when the cursor arrives) and is served
    while its deficit covers its head's length; a queue with nothing queued loses its deficit; the
    cursor moves on from a queue that cannot send.  The caller takes the head's length off the
    deficit, and zeroes it when the queue is left empty."""
    queues, pauses = p.queues, p.pause_until
    n = len(queues)
    while True:
        i = p.cursor
        q = queues[i]
        if q.weight:
            if q.items and q.items[0][0] <= t and pauses[i] <= t:
                if p.fresh:
                    q.deficit += q.weight
                    p.fresh = False
                if q.deficit >= q.items[0][4]:
                    return i
            elif not q.items:
                q.deficit = 0
        p.cursor = i + 1 if i + 1 < n else 0
        p.fresh = True


def check_port(port: Any) -> int:
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= MAX_PORT:
        raise TMConfigError(f"egress port must be an integer in 0..{MAX_PORT} (511 is the drop port), got {port!r}")
    return port


def _check_depth(packets: Any) -> int:
    if not isinstance(packets, int) or isinstance(packets, bool) or not 0 <= packets <= MAX_DEPTH:
        raise TMConfigError(f"queue depth must be an integer number of packets in 0..{MAX_DEPTH}, got {packets!r}")
    return packets


def _check_rate_pps(pps: Any) -> float:
    if isinstance(pps, bool) or not isinstance(pps, (int, float)) or not 0 <= pps < float("inf"):
        raise TMConfigError(f"queue rate must be a number of packets/s >= 0 (0 = unlimited), got {pps!r}")
    return pps


def _check_rate_bps(bps: Any) -> int:
    if not isinstance(bps, int) or isinstance(bps, bool) or bps < 0:
        raise TMConfigError(f"port rate must be an integer number of bits/s >= 0 (0 = unlimited), got {bps!r}")
    return bps


def _delay_ns(delay_us: Any) -> int:
    if isinstance(delay_us, bool) or not isinstance(delay_us, (int, float)) or not 0 <= delay_us < 1e12:
        raise TMConfigError(f"port delay must be a number of microseconds >= 0, got {delay_us!r}")
    return round(delay_us * 1000)
