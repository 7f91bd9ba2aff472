"""The switch's view of a Pipeline: ingress before the queues, egress after.

The pipeline contract (docs/p4model-contracts.md, section 3) splits a
packet's trip at the traffic manager: `ingress(port, data, now_us)` returns
EgressJobs (one per copy that is to be queued: unicast, multicast replicas,
clones), and `egress(job, queue_meta)` runs egress with the queue metadata
the TM computed and returns the frames to transmit (plus new jobs to queue:
egress-to-egress clones and recirculated packets, whose ingress already
ran); `egress_now(job, now_us)` is egress for a job that left its queue as
it arrived (tm.depart_now), whose queue metadata is implied, and it may
return just the frame (bytes, for job.port) when that is all the pass made.  This module is
the only place that knows those shapes, so the event loop stays independent
of them.

The stages the switch calls raise what a packet raised: the event loop has
its own guard (one try per packet, not one per stage and layer) and reports
through `failed`, which counts the packet in the pipeline's stats and names
the P4 source line.

A pipeline without the split (only `process`) still runs: every output of
the ideal-queue path is then queued as an opaque frame and the program
cannot see queue metadata.  The switch logs which mode it uses.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from testbed.p4model.v1model import QueueMeta


class Job(NamedTuple):
    """One output of a process-only pipeline to queue: where, priority, length, frame."""

    port: int
    priority: int
    length: int
    job: Any


class Datapath:
    """Adapter around one loaded Pipeline (see the module docstring)."""

    __slots__ = ("pipeline", "split", "ingress", "egress", "egress_now", "_process")

    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline
        self.split = callable(getattr(pipeline, "ingress", None)) and callable(getattr(pipeline, "egress", None))
        self._process = getattr(pipeline, "process", None)
        stages = getattr(pipeline, "unguarded", None)
        if stages is not None:  # the pipeline's own stages: no adapter frame per packet
            self.ingress = stages.ingress
            self.egress = stages.egress
            self.egress_now = stages.egress_now
        elif self.split:
            self.ingress = pipeline.ingress
            self.egress = pipeline.egress
            self.egress_now = self._egress_now_via_egress
        else:
            self.ingress = self._ingress_via_process
            self.egress = self._egress_via_process
            self.egress_now = self._egress_now_via_process

    @property
    def mode(self) -> str:
        return "ingress/TM/egress" if self.split else "ideal queue + TM as link"

    def failed(self, error: Exception, stage: str, port: int) -> str:
        """Account for a packet whose `stage` raised; what to log about it."""
        report = getattr(self.pipeline, "packet_failed", None)
        if report is not None:
            return report(error, stage, port)
        return f"packet from port {port} dropped: {stage} failed: {type(error).__name__}: {error}"

    # ingress(port, data, now_us) -> the copies to queue; each has .port,
    # .priority and .length, and is what egress() takes back (the pipeline's
    # own EgressJob when split, a Job around the output frame otherwise).
    # egress(job, departure) -> (frames (port, bytes) to transmit, new jobs to
    # queue: E2E clones and the egress jobs of recirculated packets, shaped like
    # ingress()'s); v1model's EgressResult is that pair, and v1model reads the
    # queue fields off the Departure itself.

    def _egress_now_via_egress(self, job, now_us: int):
        return self.egress(job, QueueMeta(now_us, 0, 0, 0, now_us))

    def _ingress_via_process(self, port: int, data: bytes, now_us: int | None = None) -> list:
        return [Job(p, 0, len(d), d) for p, d in self._process(port, data)]

    @staticmethod
    def _egress_via_process(job: Job, departure) -> tuple[list[tuple[int, bytes]], list]:
        return [(departure.port, job.job)], []

    @staticmethod
    def _egress_now_via_process(job: Job, now_us: int) -> tuple[list[tuple[int, bytes]], list]:
        return [(job.port, job.job)], []
