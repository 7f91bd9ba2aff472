"""Load a built program with ctypes and drive it as a Pipeline.

NativePipeline offers the calls the STF runner, the switch and the control
plane make of testbed.p4model.pipeline.Pipeline: process, ingress, egress,
drop_port, and the tables, registers, counters and meters in C memory.  A
job between ingress and egress is a NativeJob holding its tb_state buffer.

A program that can ask for copies (tb_replicates(): mcast_grp, clone,
resubmit, recirculate) runs its after-ingress and after-egress decisions
here, in v1model.V1Switch's order and with its rules (bmv2's): I2E clone,
resubmit (ends the pass), multicast through `pre`'s group (one tb_state
copy per replica, egress_rid and instance_type 5), drop, unicast; after
egress: E2E clone, drop, deparse, recirculate or transmit (cut to the
smaller of the clone session's packet_length_bytes and the program's
truncate()).  Each ingress pass's digest goes to `digests`.  Resubmit and
recirculation passes are bounded by v1model.MAX_PASSES, as the Python
target's.  A program that cannot ask for copies takes the one-call path
(tb_ingress, tb_egress)."""

from __future__ import annotations

import copy
import ctypes
import logging
from pathlib import Path

from testbed.p4model.backend.native.build import build
from testbed.p4model.backend.native.errors import NativeBuildError
from testbed.p4model.backend.native.objects import NativeCounter, NativeMeterArray, NativeRegister, NativeTable
from testbed.p4model.backend.native.program import lower
from testbed.p4model.clock import MonotonicClock
from testbed.p4model.runtime.externs import DigestQueue
from testbed.p4model.runtime.pre import PacketReplicationEngine
from testbed.p4model.v1model import (DROP_PORT, MAX_PASSES, NORMAL, RECIRC, REPLICATION,
                                     RESUBMIT, EgressResult, QueueMeta, as_queue_meta)

log = logging.getLogger("testbed.p4model.backend.native")
_U8P = ctypes.POINTER(ctypes.c_uint8)
_P, _U32, _U64, _I64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64
_REPLICATION_ABI = {   # name: (restype, argtypes) of the C ABI's replication calls (program.py)
    "tb_ingress_again": (_I64, [_P, _P, _P, _U32, ctypes.c_char_p, _U32, _U32, _U64, _U32]),
    "tb_clone_i2e": (None, [_P, _P, _P, _U32, ctypes.c_char_p, _U32, _U32, _U64]),
    "tb_clone_e2e": (None, [_P, _P, _U32]),
    "tb_state_copy": (None, [_P, _P]),
    "tb_set_egress_rid": (None, [_P, _U32]),
    "tb_set_instance_type": (None, [_P, _U32]),
    "tb_requests": (None, [_P, ctypes.POINTER(_U64)]),
    "tb_egress_ctl_only": (_I64, [_P, ctypes.c_char_p, _U32, _U32, ctypes.POINTER(_U64), _U32]),
    "tb_deparse": (_I64, [_P, ctypes.c_char_p, _U32, _U32, _P]),
    "tb_replicates": (_U32, []),
    "tb_truncate": (_U32, [_P]),
    "tb_digest": (_U32, [_P, ctypes.POINTER(_U64)]),
    "tb_digest_words": (_U32, []),
}


class NativeJob:
    """A packet between ingress and egress: where to queue it and its state."""

    __slots__ = ("port", "priority", "state", "data", "length", "ingress_length", "passes", "truncate")

    def __init__(self, port: int, state, data: bytes, priority: int = 0, passes: int = 0,
                 truncate: int = 0) -> None:
        self.port, self.priority, self.state, self.data = port, priority, state, data
        self.length = self.ingress_length = len(data)
        self.passes = passes        # resubmit/recirculation passes so far (the loop guard)
        self.truncate = truncate    # bytes to keep at transmit (a clone session's limit), 0: all


class NativePipeline:
    """One program instance on the native back end."""

    backend = "native"

    def __init__(self, program, clock=None, seed=None, drop_port: int = DROP_PORT) -> None:
        self.program = program
        self.clock = clock if clock is not None else MonotonicClock()
        name = Path(program.source_files[0]).name if program.source_files else "<program>"
        self.c_source, infos, externs, self.replication, self.digest_layouts = _lowered(program)
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
        for fn, (restype, argtypes) in _REPLICATION_ABI.items():
            getattr(lib, fn).restype, getattr(lib, fn).argtypes = restype, argtypes
        self.lib = lib
        self.replicates = bool(lib.tb_replicates())
        self.max_passes = MAX_PASSES
        self._req = (ctypes.c_uint64 * 7)()
        self._state_size = lib.tb_state_size()
        self._max_hdr = lib.tb_max_header_bytes()
        self.drop_port = drop_port
        self._out = ctypes.create_string_buffer(self._max_hdr + 2048)
        self._inst = lib.tb_new()
        if not self._inst:
            raise MemoryError("native back end: no memory for the tables")
        compiled = _reference(program, self.clock, drop_port)
        self.tables = _tables(compiled["tables"], lib, self._inst, infos)
        self.registers = _externs(compiled["registers"], NativeRegister, lib, self._inst, externs, "register")
        self.counters = _externs(compiled["counters"], NativeCounter, lib, self._inst, externs, "counter")
        self.meters = _externs(compiled["meters"], NativeMeterArray, lib, self._inst, externs, "meter")
        lib.tb_seed.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.tb_seed(self._inst, 0x5EED if seed is None else seed)
        self.action_profiles, self.direct_counters, self.direct_meters = {}, {}, {}
        self.value_sets, self.hashers = {}, []
        self.pre = PacketReplicationEngine()
        self.digests = DigestQueue()
        self._digest_words = (_U64 * max(lib.tb_digest_words(), 1))()
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
        if self.digest_layouts and not self.replicates:
            self._push_digest(state)
        if self.replicates:
            jobs: list = []
            self._resubmit(port, data, self._after_ingress(state, port, data, 0, jobs), 0, jobs)
            return jobs
        if out < 0:
            self.stats["dropped"] += 1
            return []
        job = NativeJob(out, state, data)
        job.priority = self.lib.tb_priority(state)
        return [job]

    def _requests(self, state) -> tuple:
        """(egress_spec, mcast_grp, priority, clone session + 1, clone field list, resubmit field
        list + 1, recirculate field list + 1) of a pass (0: not asked)."""
        self.lib.tb_requests(state, self._req)
        return tuple(self._req)

    def _after_ingress(self, state, port: int, data: bytes, passes: int, jobs: list):
        """The after-ingress decisions in bmv2's order (v1model.V1Switch._after_ingress): I2E
        clone, resubmit (returned: (field list, state), ends the pass), multicast, drop, unicast."""
        spec, mgid, priority, clone, clone_fl, resubmit, _ = self._requests(state)
        if clone:
            self._ingress_clone(state, (clone - 1) & 0x7FFF, clone_fl, port, data, passes, jobs)
        if self.digest_layouts:
            self._push_digest(state)
        if resubmit:
            return (resubmit - 1, state)
        if mgid:
            lib = self.lib
            for rid, out_port in self.pre.group(mgid):
                copy = ctypes.create_string_buffer(self._state_size)
                lib.tb_state_copy(copy, state)
                lib.tb_set_egress_rid(copy, rid)
                lib.tb_set_instance_type(copy, REPLICATION)
                self.stats["replicas"] += 1
                jobs.append(NativeJob(out_port, copy, data, priority, passes))
            return None
        if spec == self.drop_port:
            self.stats["dropped"] += 1
            return None
        self.lib.tb_set_instance_type(state, NORMAL)
        jobs.append(NativeJob(spec, state, data, priority, passes))
        return None

    def _push_digest(self, state) -> None:
        """The digest an ingress pass asked for (if any) into `digests`, as the Python target's."""
        did = self.lib.tb_digest(state, self._digest_words)
        if did:
            self.push_digest(did, self._digest_words)

    def push_digest(self, did: int, words) -> None:
        """Digest layout `did` (C id: index + 1) with its words (emit_replication's layout) as
        (name, values) into `digests`; the fabric engine hands its digests over here too."""
        name, widths = self.digest_layouts[did - 1]
        values, k = [], 0
        for w in widths:
            if w > 64:
                values.append((words[k] << 64) | words[k + 1])
                k += 2
            else:
                values.append(words[k])
                k += 1
        self.digests.push(name, tuple(values))

    def _ingress_clone(self, state, session_id: int, fl: int, port: int, data: bytes, passes: int,
                       jobs: list) -> None:
        session = self.pre.clone_session(session_id)
        if session is None:
            return
        now = self.clock.now_us()
        for instance, out_port in session.replicas:
            copy = ctypes.create_string_buffer(self._state_size)
            self.lib.tb_clone_i2e(self._inst, copy, state, fl, data, len(data), port, now)
            self.lib.tb_set_egress_rid(copy, instance)
            self.stats["clones"] += 1
            jobs.append(NativeJob(out_port, copy, data, 0, passes, session.packet_length_bytes))

    def _resubmit(self, port: int, data: bytes, preserve, passes: int, jobs: list) -> None:
        """Ingress again with the original bytes while a pass asks for it (preserve: (field
        list, the pass's state), None: no request)."""
        while preserve is not None:
            passes += 1
            self.stats["resubmits"] += 1
            if passes >= self.max_passes:
                self.stats["loop_drops"] += 1
                log.warning("packet resubmitted %d times: dropped (bmv2 would loop forever)", passes)
                return
            preserve = self._ingress_pass(port, data, RESUBMIT, preserve, passes, jobs)

    def _ingress_pass(self, port: int, data: bytes, instance_type: int, preserve, passes: int, jobs: list):
        """One ingress pass of a resubmitted or recirculated packet; the next resubmit request."""
        fl, old = preserve
        state = ctypes.create_string_buffer(self._state_size)
        self.lib.tb_ingress_again(self._inst, state, old, fl, data, len(data), instance_type,
                                  self.clock.now_us(), self.drop_port)
        return self._after_ingress(state, port, data, passes, jobs)

    def egress(self, job: NativeJob, queue_meta=None) -> EgressResult:
        q = queue_meta if hasattr(queue_meta, "enq_ts_us") else as_queue_meta(queue_meta)
        deq = q.deq_ts_us if q.deq_ts_us is not None else self.clock.now_us()
        qa = (ctypes.c_uint64 * 5)(q.enq_ts_us, q.enq_qdepth, q.deq_timedelta_us, q.deq_qdepth, deq)
        need = self._max_hdr + len(job.data)
        if need > len(self._out):   # one output buffer per pipeline, grown as needed
            self._out = ctypes.create_string_buffer(need)
        if self.replicates:
            return self._egress_replicating(job, qa)
        n = self.lib.tb_egress(job.state, job.data, len(job.data), job.port, qa, self.drop_port, self._out)
        if n < 0:
            self.stats["dropped"] += 1
            return EgressResult([], [])
        self.stats["transmitted"] += 1
        return EgressResult([(job.port, ctypes.string_at(self._out, n))], [])

    def _egress_replicating(self, job: NativeJob, qa) -> EgressResult:
        """Egress and the after-egress decisions (v1model.V1Switch._after_egress): E2E clone,
        drop, deparse, recirculate or transmit (cut to the job's limit)."""
        lib, packets, jobs = self.lib, [], []
        dropped = lib.tb_egress_ctl_only(job.state, job.data, len(job.data), job.port, qa, self.drop_port) < 0
        _, _, _, clone, clone_fl, _, recirc = self._requests(job.state)
        if clone:
            session = self.pre.clone_session((clone - 1) & 0x7FFF)
            for instance, port in session.replicas if session is not None else ():
                copy = ctypes.create_string_buffer(self._state_size)
                lib.tb_clone_e2e(copy, job.state, clone_fl)
                lib.tb_set_egress_rid(copy, instance)
                self.stats["clones"] += 1
                clone_job = NativeJob(port, copy, job.data, 0, job.passes, session.packet_length_bytes)
                clone_job.length, clone_job.ingress_length = job.length, job.ingress_length
                jobs.append(clone_job)
        if dropped:
            self.stats["dropped"] += 1
            return EgressResult(packets, jobs)
        n = lib.tb_deparse(job.state, job.data, len(job.data), self.drop_port, self._out)
        data = ctypes.string_at(self._out, n)
        if recirc:
            passes = job.passes + 1
            self.stats["recirculations"] += 1
            if passes >= self.max_passes:
                self.stats["loop_drops"] += 1
                log.warning("packet recirculated %d times: dropped (bmv2 would loop forever)", passes)
                return EgressResult(packets, jobs)
            preserve = self._ingress_pass(0, data, RECIRC, (recirc - 1, job.state), passes, jobs)
            self._resubmit(0, data, preserve, passes, jobs)
            return EgressResult(packets, jobs)
        limit, cut = job.truncate, lib.tb_truncate(job.state)   # the clone session's; the program's
        if cut and (not limit or cut < limit):
            limit = cut
        if limit and len(data) > limit:
            data = data[:limit]
        self.stats["transmitted"] += 1
        packets.append((job.port, data))
        return EgressResult(packets, jobs)

    def egress_now(self, job: NativeJob, now_us: int | None = None) -> EgressResult:
        now = self.clock.now_us() if now_us is None else now_us
        return self.egress(job, QueueMeta(now, 0, 0, 0, now))

    def process(self, port: int, data: bytes) -> list:
        """The whole switch with an ideal queue: the transmitted (port, bytes) in departure order
        (E2E clones and recirculated packets queued after the jobs before them)."""
        out: list = []
        queue = self.ingress(port, data)
        i = 0
        while i < len(queue):
            job = queue[i]
            i += 1
            now = self.clock.now_us()
            packets, jobs = self.egress(job, QueueMeta(now, 0, 0, 0, now))
            out += packets
            queue += jobs
        return out

    def packet_out(self, data: bytes) -> list:
        if self.cpu_port is None:
            raise ValueError("no CPU port configured for PacketOut")
        return self.process(self.cpu_port, data)


_LOWERED: dict = {}  # id(program) -> (program, its lowering): a fabric's switches share one front end
_REFERENCES: dict = {}  # (id(program), drop port) -> (program, its compile's clock, its control objects)


def _lowered(program):
    """lower(program), once per program object (read-only once made)."""
    hit = _LOWERED.get(id(program))
    if hit is None or hit[0] is not program:
        hit = _LOWERED[id(program)] = (program, lower(program))
        while len(_LOWERED) > 8:
            _LOWERED.pop(next(iter(_LOWERED)))
    return hit[1]


def _reference(program, clock, drop_port):
    """The Python target's objects of the program: its Table, register, counter and meter
    objects (checks, const entries, defaults), fresh for this instance and re-bound to C memory
    below. The Python compile (code generation, a few tens of ms) runs once per program object;
    each instance gets its own copy of the objects, on its own clock: tables and meters deep
    (entries, defaults), registers and counters zeroed (their values live in C), meters made
    anew (the compile configures no cell)."""
    hit = _REFERENCES.get((id(program), drop_port))
    if hit is None or hit[0] is not program:
        from testbed.p4model.backend.python import compile_program
        from testbed.p4model.runtime.externs import RandomSource

        own_clock = MonotonicClock()
        compiled = compile_program(program, own_clock, RandomSource(0), drop_port)
        objects = {"tables": compiled.tables, "registers": compiled.registers,
                   "counters": compiled.counters, "meters": compiled.meters}
        hit = _REFERENCES[(id(program), drop_port)] = (program, own_clock, objects)
        while len(_REFERENCES) > 8:
            _REFERENCES.pop(next(iter(_REFERENCES)))
    _, own_clock, objects = hit
    fresh = {kind: {} for kind in objects}
    for kind in ("registers", "counters"):  # zeroed state, no clock: a shallow copy, reset
        for name, obj in objects[kind].items():
            fresh[kind][name] = copy.copy(obj)
            fresh[kind][name].reset()
    for name, meter in objects["meters"].items():  # unconfigured cells on this clock
        fresh["meters"][name] = type(meter)(meter.name, meter.size, meter.kind, clock)
    fresh["tables"] = copy.deepcopy(objects["tables"], {id(own_clock): clock})
    return fresh


def _externs(objects: dict, cls, lib, inst, externs, kind) -> dict:
    out = dict(objects)
    for info in externs:
        if info.kind == kind and info.name in out:
            obj = out[info.name]
            obj.__class__ = cls
            obj._native_bind(lib, inst, info)
    return out


def _tables(reference: dict, lib, inst, infos) -> dict:
    """NativeTables bound to their C tables."""
    by_decl = {id(info.decl): info for info in infos}
    tables = {}
    for info in infos:
        cp = info.decl.cp_name or info.decl.name
        table = reference[cp]
        table.__class__ = NativeTable
        table._native_bind(lib, inst, by_decl[id(info.decl)])
        tables[cp] = table
    return tables
