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

    __slots__ = ("pipeline", "split", "_ingress", "_egress", "_process")

    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline
        self.split = callable(getattr(pipeline, "ingress", None)) and callable(getattr(pipeline, "egress", None))
        self._ingress = getattr(pipeline, "ingress", None)
        self._egress = getattr(pipeline, "egress", None)
        self._process = getattr(pipeline, "process", None)

    @property
    def mode(self) -> str:
        return "ingress/TM/egress" if self.split else "ideal queue + TM as link"

    def ingress(self, port: int, data: bytes) -> list:
        """-> the copies to queue; each has .port, .priority and .length, and is
        what egress() takes back (the pipeline's own EgressJob when split, a
        Job around the output frame otherwise: no per-packet wrapper)."""
        if not self.split:
            return [Job(p, 0, len(d), d) for p, d in self._process(port, data)]
        return self._ingress(port, data)

    def egress(self, job: Any, departure) -> tuple[list[tuple[int, bytes]], list]:
        """-> (frames (port, bytes) to transmit, new jobs to queue: E2E clones and the
        egress jobs of recirculated packets, shaped like ingress()'s)."""
        if not self.split:
            return [(departure.port, job.job)], []
        result = self._egress(job, departure)  # v1model reads the queue fields off the Departure
        return result.packets, result.jobs
