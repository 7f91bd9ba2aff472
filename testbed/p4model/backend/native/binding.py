"""Load a built program with ctypes and drive it as a Pipeline.

NativePipeline offers the calls the STF runner, the switch and the control
plane make of testbed.p4model.pipeline.Pipeline: process, ingress, egress,
drop_port, and the state dictionaries (empty: programs with tables or
externs are refused by the lowering for now).  A job between ingress and
egress is a NativeJob holding its tb_state buffer in C memory."""

from __future__ import annotations

import ctypes
from pathlib import Path

from testbed.p4model.backend.native.build import build
from testbed.p4model.backend.native.errors import NativeBuildError
from testbed.p4model.backend.native.objects import NativeCounter, NativeMeterArray, NativeRegister, NativeTable
from testbed.p4model.backend.native.program import lower
from testbed.p4model.clock import MonotonicClock
from testbed.p4model.runtime.externs import DigestQueue
from testbed.p4model.runtime.pre import PacketReplicationEngine
from testbed.p4model.v1model import DROP_PORT, EgressResult, QueueMeta, _queue_meta

_U8P = ctypes.POINTER(ctypes.c_uint8)


class NativeJob:
    """A packet between ingress and egress: where to queue it and its state."""

    __slots__ = ("port", "priority", "state", "data", "length", "ingress_length")

    def __init__(self, port: int, state, data: bytes) -> None:
        self.port, self.priority, self.state, self.data = port, 0, state, data
        self.length = self.ingress_length = len(data)


class NativePipeline:
    """One program instance on the native back end."""

    backend = "native"

    def __init__(self, program, clock=None, seed=None, drop_port: int = DROP_PORT) -> None:
        self.program = program
        self.clock = clock if clock is not None else MonotonicClock()
        name = Path(program.source_files[0]).name if program.source_files else "<program>"
        self.c_source, infos, externs = _lowered(program)
        self.so_path = build(self.c_source, name, program.main.loc)
        try:
            lib = ctypes.CDLL(str(self.so_path))
            lib.tb_ingress, lib.tb_egress, lib.tb_new, lib.tb_priority  # noqa: B018 - every entry point is there
        except (OSError, AttributeError) as exc:
            raise NativeBuildError(program.main.loc, name, f"cannot load {self.so_path}: {exc}") from None
        lib.tb_new.restype = ctypes.c_void_p
        lib.tb_free.argtypes = [ctypes.c_void_p]
        lib.tb_register.restype = ctypes.POINTER(ctypes.c_uint64)
        lib.tb_register.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.tb_counter.restype = ctypes.POINTER(ctypes.c_uint64)
        lib.tb_counter.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int]
        lib.tb_table_set.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                                     ctypes.POINTER(ctypes.c_uint64)]
        lib.tb_table_default.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64)]
        lib.tb_state_size.restype = ctypes.c_uint32
        lib.tb_max_header_bytes.restype = ctypes.c_uint32
        lib.tb_priority.restype = ctypes.c_uint32
        lib.tb_priority.argtypes = [ctypes.c_void_p]
        lib.tb_ingress.restype = ctypes.c_int64
        lib.tb_ingress.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                                   ctypes.c_uint64, ctypes.c_uint32]
        lib.tb_egress.restype = ctypes.c_int64
        lib.tb_egress.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                                  ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32, ctypes.c_void_p]
        self.lib = lib
        self._state_size = lib.tb_state_size()
        self._max_hdr = lib.tb_max_header_bytes()
        self.drop_port = drop_port
        self._out = ctypes.create_string_buffer(self._max_hdr + 2048)
        self._inst = lib.tb_new()
        if not self._inst:
            raise MemoryError("native back end: no memory for the tables")
        compiled = _reference(program, self.clock, drop_port)
        self.tables = _tables(compiled, lib, self._inst, infos)
        self.registers = _externs(compiled.registers, NativeRegister, lib, self._inst, externs, "register")
        self.counters = _externs(compiled.counters, NativeCounter, lib, self._inst, externs, "counter")
        self.meters = _externs(compiled.meters, NativeMeterArray, lib, self._inst, externs, "meter")
        lib.tb_seed.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.tb_seed(self._inst, 0x5EED if seed is None else seed)
        self.action_profiles, self.direct_counters, self.direct_meters = {}, {}, {}
        self.value_sets, self.hashers = {}, []
        self.pre = PacketReplicationEngine()
        self.digests = DigestQueue()
        self.cpu_port: int | None = None
        self.stats = {"received": 0, "transmitted": 0, "dropped": 0, "errors": 0,
                      "loop_drops": 0, "clones": 0, "resubmits": 0, "recirculations": 0,
                      "replicas": 0}

    def __del__(self) -> None:
        inst, self._inst = getattr(self, "_inst", None), None
        if inst:
            self.lib.tb_free(inst)

    @property
    def source(self) -> str:
        return self.c_source

    def ingress(self, port: int, data: bytes, now_us: int | None = None) -> list:
        self.stats["received"] += 1
        data = bytes(data)
        state = ctypes.create_string_buffer(self._state_size)
        now = self.clock.now_us() if now_us is None else now_us
        out = self.lib.tb_ingress(self._inst, state, data, len(data), port, now, self.drop_port)
        if out < 0:
            self.stats["dropped"] += 1
            return []
        job = NativeJob(out, state, data)
        job.priority = self.lib.tb_priority(state)
        return [job]

    def egress(self, job: NativeJob, queue_meta=None) -> EgressResult:
        q = queue_meta if hasattr(queue_meta, "enq_ts_us") else _queue_meta(queue_meta)
        deq = q.deq_ts_us if q.deq_ts_us is not None else self.clock.now_us()
        qa = (ctypes.c_uint64 * 5)(q.enq_ts_us, q.enq_qdepth, q.deq_timedelta_us, q.deq_qdepth, deq)
        need = self._max_hdr + len(job.data)
        if need > len(self._out):   # one output buffer per pipeline, grown as needed
            self._out = ctypes.create_string_buffer(need)
        n = self.lib.tb_egress(job.state, job.data, len(job.data), job.port, qa, self.drop_port, self._out)
        if n < 0:
            self.stats["dropped"] += 1
            return EgressResult([], [])
        self.stats["transmitted"] += 1
        return EgressResult([(job.port, ctypes.string_at(self._out, n))], [])

    def egress_now(self, job: NativeJob, now_us: int | None = None) -> EgressResult:
        now = self.clock.now_us() if now_us is None else now_us
        return self.egress(job, QueueMeta(now, 0, 0, 0, now))

    def process(self, port: int, data: bytes) -> list:
        out: list = []
        for job in self.ingress(port, data):
            now = self.clock.now_us()
            out += self.egress(job, QueueMeta(now, 0, 0, 0, now)).packets
        return out

    def packet_out(self, data: bytes) -> list:
        if self.cpu_port is None:
            raise ValueError("no CPU port configured for PacketOut")
        return self.process(self.cpu_port, data)


_LOWERED: dict = {}  # id(program) -> (program, its lowering): a fabric's switches share one front end


def _lowered(program):
    """lower(program), once per program object (read-only once made)."""
    hit = _LOWERED.get(id(program))
    if hit is None or hit[0] is not program:
        hit = _LOWERED[id(program)] = (program, lower(program))
        while len(_LOWERED) > 8:
            _LOWERED.pop(next(iter(_LOWERED)))
    return hit[1]


def _reference(program, clock, drop_port):
    """The Python target's compile of the program: its Table, register and
    counter objects (checks, const entries, defaults) are the reference's
    own, re-bound to C memory below."""
    from testbed.p4model.backend.python import compile_program
    from testbed.p4model.runtime.externs import RandomSource

    return compile_program(program, clock, RandomSource(0), drop_port)


def _externs(objects: dict, cls, lib, inst, externs, kind) -> dict:
    out = dict(objects)
    for info in externs:
        if info.kind == kind and info.name in out:
            obj = out[info.name]
            obj.__class__ = cls
            obj._native_bind(lib, inst, info)
    return out


def _tables(compiled, lib, inst, infos) -> dict:
    """NativeTables bound to their C tables."""
    by_decl = {id(info.decl): info for info in infos}
    tables = {}
    for info in infos:
        cp = info.decl.cp_name or info.decl.name
        table = compiled.tables[cp]
        table.__class__ = NativeTable
        table._native_bind(lib, inst, by_decl[id(info.decl)])
        tables[cp] = table
    return tables
