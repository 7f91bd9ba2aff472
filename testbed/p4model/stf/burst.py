"""The egress queues of an STF run: one burst at a time through the switch's TM.

Why: bmv2 replays an STF file's packets back to back, so they can wait in
the egress queues together, and there strict priority serves a later
high-priority packet (a credit) before an earlier low-priority one (a DATA
cell) on the same port.  Running each packet to completion through an
ideal queue hides that, and a file that fails on bmv2 for a queueing
reason would pass here.  So the packets of a burst are held after ingress
and queued together in the builtin switch's own TrafficManager (tm/model.py,
bmv2's QueueingLogicPriRL: one FIFO per port and priority, N queues, a
priority >= N dropped, 64 packets deep, highest priority served first),
then the queues are drained.  This is the queueing bmv2 may show when its
egress lags behind ingress, made deterministic: the worst case, not the
usual one, so an STF file passes here only if its expectations hold
whatever the queues do on bmv2.

Consequences a file sees: enq_qdepth is 0, 1, 2, ... for the packets of a
burst that share a queue; every packet of a burst is enqueued and dequeued
at the time its last packet left ingress (deq_timedelta 0); egress of a
burst runs after all its ingress.  Jobs egress makes (E2E clones,
recirculated packets) are queued and drained in turn.
"""

from __future__ import annotations

from testbed.p4model.tm.model import LINK_LOST, PRIORITY_DROPPED, TMConfigError, TrafficManager


class Burst:
    """Holds the ingress output of consecutive packets; `drain` queues and
    runs them through egress."""

    def __init__(self, pipeline, clock, priority_queues: int = 1) -> None:
        self.pipeline = pipeline
        self.clock = clock
        self.tm = TrafficManager(clock, priority_queues=priority_queues)
        self.held: list = []          # (job, STF line of the input packet)

    def add(self, jobs, line: int) -> None:
        self.held.extend((job, line) for job in jobs)

    def drain(self) -> tuple:
        """Queue every held job now, serve the queues until empty.  Returns
        (outputs, drops): outputs are (port, bytes, line) in departure
        order, drops are (line, reason) for packets the queues refused."""
        now = self.clock.now_ns()
        outputs, drops = [], []
        pending, self.held = self.held, []
        while pending:
            for job, line in pending:
                self._offer(job, line, now, drops)
            pending = []
            for d in self.tm.dequeue_ready(now):
                job, line = d.packet
                packets, more = self.pipeline.egress(job, d)
                outputs.extend((port, bytes(data), line) for port, data in packets)
                pending.extend((j, line) for j in more)
        return outputs, drops

    def _offer(self, job, line: int, now: int, drops: list) -> None:
        if job.port == self.pipeline.drop_port:
            return
        try:
            code = self.tm.offer(job.port, job.priority, (job, line), now, job.length)
        except TMConfigError as exc:
            drops.append((line, str(exc)))
            return
        if code == PRIORITY_DROPPED:
            queues = self.tm.priority_queues
            drops.append((line, f"priority {job.priority} has no queue (--priority-queues "
                                f"{queues}: priorities 0..{queues - 1}), as simple_switch drops it"))
        elif code < 0 and code != LINK_LOST:
            drops.append((line, f"egress queue of port {job.port} priority {job.priority} full "
                                f"({-1 - code} packets)"))
