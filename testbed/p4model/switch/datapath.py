"""The switch's view of a Pipeline: ingress before the queues, egress after.

The pipeline contract (docs/p4model-contracts.md, section 3) splits a
packet's trip at the traffic manager: `pipeline.ingress(port, data)` returns
EgressJobs (one per copy that is to be queued: unicast, multicast replicas,
clones), and `pipeline.egress(job, queue_meta)` runs egress with the queue
metadata the TM computed and returns the frames to transmit (plus
new jobs to queue: egress-to-egress clones and recirculated packets, whose
ingress already ran).  This module is the only place that knows those shapes, so the
event loop stays independent of them.

A pipeline without the split (only `process`) still runs: every output of
the ideal-queue path is then queued as an opaque frame and the program
cannot see queue metadata.  The switch logs which mode it uses.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Job(NamedTuple):
    """One output of a process-only pipeline to queue: where, priority, length, frame."""

    port: int
    priority: int
    length: int
    job: Any


class Datapath:
    """Adapter around one loaded Pipeline (see the module docstring)."""

    __slots__ = ("pipeline", "split", "ingress", "egress", "_process")

    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline
        self.split = callable(getattr(pipeline, "ingress", None)) and callable(getattr(pipeline, "egress", None))
        self._process = getattr(pipeline, "process", None)
        if self.split:  # the pipeline's own methods: no adapter frame per packet
            self.ingress = pipeline.ingress
            self.egress = pipeline.egress
        else:
            self.ingress = self._ingress_via_process
            self.egress = self._egress_via_process

    @property
    def mode(self) -> str:
        return "ingress/TM/egress" if self.split else "ideal queue + TM as link"

    # ingress(port, data) -> the copies to queue; each has .port, .priority and
    # .length, and is what egress() takes back (the pipeline's own EgressJob
    # when split, a Job around the output frame otherwise).
    # egress(job, departure) -> (frames (port, bytes) to transmit, new jobs to
    # queue: E2E clones and the egress jobs of recirculated packets, shaped like
    # ingress()'s); v1model's EgressResult is that pair, and v1model reads the
    # queue fields off the Departure itself.

    def _ingress_via_process(self, port: int, data: bytes) -> list:
        return [Job(p, 0, len(d), d) for p, d in self._process(port, data)]

    @staticmethod
    def _egress_via_process(job: Job, departure) -> tuple[list[tuple[int, bytes]], list]:
        return [(departure.port, job.job)], []
