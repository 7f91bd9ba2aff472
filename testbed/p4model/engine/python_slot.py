"""A Python-target pipeline in a switch slot of the native engine.

The program network (simulation/program_net.py) runs every switch inside the
engine, which calls a switch's program through three C function pointers
(engine.c's ingress_fn, egress_fn and priority_fn). A program the native back
end refuses still runs there on the Python target
(testbed.p4model.pipeline.Pipeline), much slower: here the three pointers are
ctypes callbacks into it.

* ingress runs the parser, ingress and the after-ingress decisions at the
  engine's time, keeps the one EgressJob they made under a handle written
  into the engine's per-packet state (8 bytes) and returns its egress port;
  a packet the program dropped returns -1.
* priority reads the job's priority (the queue it waits in).
* egress runs egress and the deparser on the job at its departure (the
  queue's figures as QueueMeta) and copies the frame into the engine's output
  buffer.

Rule: one packet in, at most one packet out. The engine's copy paths (clones,
resubmits, recirculations, multicast) call into the native ABI, which a Python
program does not have; a pass that makes more than one job, or an egress that
makes a packet and a job, is dropped and recorded in `problem`, which the
program network turns into one line that stops the run. A job whose packet the
traffic manager dropped never reaches egress: it is forgotten once JOBS_KEPT
younger jobs exist (far more than every queue of a switch holds).
"""

from __future__ import annotations

import ctypes

from testbed.p4model.v1model import QueueMeta

_U8P, _U64P = ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_uint64)
INGRESS = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, _U8P, ctypes.c_uint32,
                           ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32)
EGRESS = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, _U8P, ctypes.c_uint32, ctypes.c_uint32, _U64P,
                          ctypes.c_uint32, ctypes.c_void_p)
PRIORITY = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
STATE_BYTES = 8  # the handle of the packet's job
HEADER_ROOM = 256  # bytes a deparser may add to a frame (the engine's output buffer is the frame plus this)
JOBS_KEPT = 1 << 20


class PythonSlot:
    """The callbacks of one Python pipeline in one switch slot (keep this object alive while the
    engine may call them)."""

    def __init__(self, pipeline, name: str) -> None:
        self.pipeline, self.name = pipeline, name
        self.jobs: dict[int, object] = {}
        self._next = 1
        self.problem: str | None = None
        self.ingress = INGRESS(self._ingress)
        self.egress = EGRESS(self._egress)
        self.priority = PRIORITY(self._priority)

    def addresses(self) -> tuple[int, int, int]:
        """(ingress, egress, priority) as the engine takes them."""
        return tuple(ctypes.cast(fn, ctypes.c_void_p).value for fn in (self.ingress, self.egress, self.priority))

    def _advance(self, now_ns: int) -> None:
        clock = self.pipeline.clock
        if now_ns > clock.now_ns():
            clock.set_ns(now_ns)

    def _refuse(self, what: str) -> int:
        if self.problem is None:
            self.problem = (f"switch {self.name}: {what}; the program network runs a program the native back end "
                            "refused on the Python target, one packet out per packet in")
        return -1

    def _ingress(self, inst, state, frame, length, port, now_us, drop_port) -> int:
        try:
            self._advance(now_us * 1000)
            jobs = self.pipeline.ingress(port, ctypes.string_at(frame, length), now_us)
            if not jobs:
                return -1
            if len(jobs) > 1:
                return self._refuse(f"its program made {len(jobs)} copies of a packet")
            handle = self._next
            self._next += 1
            self.jobs[handle] = jobs[0]
            if len(self.jobs) > JOBS_KEPT:
                del self.jobs[next(iter(self.jobs))]
            ctypes.c_uint64.from_address(state).value = handle
            return jobs[0].port
        except Exception as exc:  # noqa: BLE001 - nothing may unwind into C
            return self._refuse(f"ingress raised {type(exc).__name__}: {exc}")

    def _priority(self, state) -> int:
        job = self.jobs.get(ctypes.c_uint64.from_address(state).value)
        return job.priority if job is not None else 0

    def _egress(self, state, frame, length, port, q5, drop_port, out) -> int:
        try:
            job = self.jobs.pop(ctypes.c_uint64.from_address(state).value, None)
            if job is None:
                return self._refuse("a packet reached egress without its ingress job")
            self._advance(q5[4] * 1000)
            packets, jobs = self.pipeline.egress(job, QueueMeta(q5[0], q5[1], q5[2], q5[3], q5[4]))
            if jobs or len(packets) > 1:
                return self._refuse("its egress made a copy of a packet")
            if not packets:
                return -1
            data = packets[0][1]
            ctypes.memmove(out, data, len(data))
            return len(data)
        except Exception as exc:  # noqa: BLE001 - nothing may unwind into C
            return self._refuse(f"egress raised {type(exc).__name__}: {exc}")
