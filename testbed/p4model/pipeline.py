"""A loaded P4 program ready to forward packets: the front end's IR
compiled to Python (testbed/p4model/backend/python) and run with simple_switch
semantics (testbed/p4model/v1model.py), plus the state objects a control
plane writes (tables, externs, PRE, digests, value sets).

No packet may make the pipeline raise: any exception a packet causes
(a failed assert, a bug) is logged with the P4 source location when it
is known, counted in `stats`, and the packet dropped.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from testbed.p4model.clock import Clock, MonotonicClock
from testbed.p4model.backend.python import compile_program
from testbed.p4model.runtime.externs import DigestQueue, RandomSource
from testbed.p4model.frontend import ir
from testbed.p4model.runtime.packet import PacketAbort
from testbed.p4model.runtime.pre import PacketReplicationEngine
from testbed.p4model.v1model import (DROP_PORT, MAX_PASSES, EgressJob, EgressResult, QueueMeta,
                                     V1Switch)

log = logging.getLogger("testbed.p4model.pipeline")

__all__ = ["load", "Pipeline", "EgressJob", "EgressResult", "QueueMeta"]


BACKENDS = ("auto", "native", "python")


def load(path, clock: Clock | None = None, include_dirs=(), defines=None, seed=None,
         drop_port: int = DROP_PORT, backend: str = "python"):
    """Parse, check and compile a P4 program; raises P4Error (one line,
    file:line:col) when it cannot be loaded.

    backend: "python" (the reference pipeline), "native" (C, built and
    cached: backend/native; raises NativeUnsupported / NativeBuildError in
    one line), or "auto": native when a C compiler is present and the
    program lowers, else python, logging the one line that says why."""
    from testbed.p4model.frontend import load_program

    if backend not in BACKENDS:
        raise ValueError(f"unknown back end {backend!r} (one of {', '.join(BACKENDS)})")
    program = load_program(Path(path), include_dirs=list(include_dirs), defines=defines)
    if backend != "python":
        from testbed.p4model.backend.native import NativeBuildError, NativeUnsupported, compiler
        from testbed.p4model.backend.native.binding import NativePipeline

        if backend == "auto" and compiler() is None:
            log.warning("%s: no C compiler: running on the Python pipeline", path)
        else:
            try:
                return NativePipeline(program, clock=clock, seed=seed, drop_port=drop_port)
            except (NativeUnsupported, NativeBuildError) as exc:
                if backend == "native":
                    raise
                log.warning("%s; running on the Python pipeline", exc)
    return Pipeline(program, clock=clock, seed=seed, drop_port=drop_port)


class Pipeline:
    """One program instance: `process` for an ideal queue, `ingress` /
    `egress` for the traffic-manager hand-off."""

    backend = "python"  # NativePipeline's is "native"

    def __init__(self, program: ir.Program, clock: Clock | None = None, seed=None,
                 drop_port: int = DROP_PORT, max_passes: int = MAX_PASSES) -> None:
        self.program = program
        self.clock = clock if clock is not None else MonotonicClock()
        self.rng = RandomSource(seed)
        self.compiled = compile_program(program, self.clock, self.rng, drop_port)
        c = self.compiled
        self.tables = c.tables
        self.registers = c.registers
        self.counters = c.counters
        self.meters = c.meters
        self.action_profiles = c.action_profiles
        self.direct_counters = c.direct_counters
        self.direct_meters = c.direct_meters
        self.value_sets = c.value_sets
        self.hashers = c.hashers
        self.pre = PacketReplicationEngine()
        self.digests = DigestQueue()
        self.cpu_port: int | None = None
        self.switch = V1Switch(c, self.pre, self.digests, self.clock, drop_port, max_passes)
        self.stats = self.switch.stats

    @property
    def drop_port(self) -> int:
        """The port that means "drop" in egress_spec (511 unless the switch
        was started with another, as simple_switch --drop-port)."""
        return self.switch.drop_port

    @drop_port.setter
    def drop_port(self, port: int) -> None:
        self.switch.drop_port = port
        self.compiled.namespace["DROP_PORT"] = port

    @property
    def source(self) -> str:
        """The generated Python source (for debugging)."""
        return self.compiled.source

    # ------------------------------------------------------------ packets

    def process(self, port: int, data: bytes) -> list:
        """The whole switch with an ideal queue (zero delay, unlimited
        rate): returns the transmitted (port, bytes) in departure order."""
        out: list = []
        queue = self.ingress(port, data)
        egress = self.switch.egress
        now_us = self.clock.now_us
        i = 0
        while i < len(queue):
            job = queue[i]
            i += 1
            now = now_us()
            try:
                packets, jobs = egress(job, QueueMeta(now, 0, 0, 0, now))
            except Exception as exc:  # noqa: BLE001 - never let a packet stop the switch
                log.error("%s", self.packet_failed(exc, "egress", job.port))
                continue
            out += packets
            if jobs:
                queue += jobs
        return out

    def packet_out(self, data: bytes) -> list:
        """Inject a P4Runtime PacketOut: received on the CPU port."""
        if self.cpu_port is None:
            raise ValueError("no CPU port configured for PacketOut")
        return self.process(self.cpu_port, data)

    def ingress(self, port: int, data: bytes, now_us: int | None = None) -> list:
        """Receive a packet (at `now_us`, default the clock's now): parser,
        verify, ingress, after-ingress.  Returns the EgressJobs for the
        traffic manager (job.port, job.priority say where to queue them)."""
        try:
            return self.switch.ingress(port, data if data.__class__ is bytes else bytes(data), now_us)
        except Exception as exc:  # noqa: BLE001 - never let a packet stop the switch
            log.error("%s", self.packet_failed(exc, "ingress", port))
            return []

    def egress(self, job: EgressJob, queue_meta=None) -> EgressResult:
        """Egress + deparse of one dequeued job. queue_meta: QueueMeta, a
        tm.Departure, a dict or a tuple (enq_ts_us, enq_qdepth,
        deq_timedelta_us, deq_qdepth[, deq_ts_us]): see QueueMeta."""
        try:
            return self.switch.egress(job, queue_meta)
        except Exception as exc:  # noqa: BLE001
            log.error("%s", self.packet_failed(exc, "egress", job.port))
            return EgressResult([], [])

    @property
    def unguarded(self) -> V1Switch:
        """ingress(port, bytes, now_us) / egress(job, queue_meta) /
        egress_now(job, now_us) without the guard: they raise what a packet
        raised.  For a caller with its own guard (the switch's event loop),
        which reports through packet_failed."""
        return self.switch

    def packet_failed(self, exc: Exception, where: str, port: int) -> str:
        """Count a packet that raised in `where` (it is dropped) and say what
        happened, with the P4 source location when it is known."""
        self.stats["errors"] += 1
        self.stats["dropped"] += 1
        if isinstance(exc, PacketAbort):
            return f"packet dropped in {where} (port {port}): {exc}"
        loc = self._locate(exc)
        return f"packet dropped in {where} (port {port}): {f'{loc}: ' if loc else ''}{type(exc).__name__}: {exc}"

    def _locate(self, exc: Exception):
        """The P4 source location of the generated line that raised."""
        loc = None
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            if frame.f_code.co_filename == self.compiled.filename:
                loc = self.compiled.loc_for_line(lineno) or loc
        return loc
