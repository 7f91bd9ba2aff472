"""A Python pipeline in a switch slot of the native engine (testbed/p4model/engine/python_slot.py):
one job per packet goes through ingress, priority and egress by its handle; a copy stops the run
with one line naming the switch, never a silent drop."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

from testbed.p4model.clock import ManualClock
from testbed.p4model.engine.python_slot import PythonSlot


class FakePipeline:
    """Ingress makes `copies` jobs to port 3, priority 1; egress returns the frame with a byte added."""

    def __init__(self, copies: int = 1) -> None:
        self.clock, self.copies, self.seen = ManualClock(), copies, []

    def ingress(self, port, data, now_us):
        self.seen.append(("ingress", port, data, now_us))
        return [SimpleNamespace(port=3, priority=1, data=data) for _ in range(self.copies)]

    def egress(self, job, queue_meta):
        self.seen.append(("egress", queue_meta.deq_ts_us))
        return [(3, job.data + b"!")], []


def _call(slot, frame: bytes, now_us: int):
    state = ctypes.create_string_buffer(8)
    data = (ctypes.c_uint8 * len(frame)).from_buffer_copy(frame)
    port = slot.ingress(None, ctypes.addressof(state), data, len(frame), 2, now_us, 511)
    return port, state, data


def test_one_job_goes_through_ingress_priority_and_egress_by_its_handle():
    pipeline = FakePipeline()
    slot = PythonSlot(pipeline, "leaf1")
    port, state, data = _call(slot, b"cell", 40)
    assert port == 3 and slot.priority(ctypes.addressof(state)) == 1
    assert pipeline.clock.now_ns() == 40_000
    out = ctypes.create_string_buffer(64)
    q5 = (ctypes.c_uint64 * 5)(40, 0, 10, 0, 50)
    n = slot.egress(ctypes.addressof(state), data, 4, 3, q5, 511, ctypes.addressof(out))
    assert out.raw[:n] == b"cell!" and pipeline.clock.now_ns() == 50_000
    assert slot.jobs == {} and slot.problem is None


def test_a_copy_is_refused_with_one_line_naming_the_switch():
    slot = PythonSlot(FakePipeline(copies=2), "spine2")
    port, _, _ = _call(slot, b"cell", 1)
    assert port == -1
    assert slot.problem.startswith("switch spine2: its program made 2 copies of a packet")
    assert "\n" not in slot.problem


def test_an_exception_never_unwinds_into_the_engine():
    pipeline = FakePipeline()
    pipeline.ingress = lambda *args: 1 / 0
    slot = PythonSlot(pipeline, "leaf2")
    port, _, _ = _call(slot, b"cell", 1)
    assert port == -1 and "ingress raised ZeroDivisionError" in slot.problem
