"""NativeFabric: the C fabric engine (engine.c) from Python.

Model: each switch is a NativePipeline (its tables stay in the pipeline's C
memory and the control plane writes them as before) plus the settings of a
testbed.p4model.tm TrafficManager, which stays the one place the TM's text
commands and the controller's plan configure.  `add_switch` copies a TM's
settings into the engine and `sync_tm` copies them again after a change;
from then on the engine holds that switch's queued packets.  Cables join
two switch ports, host ports deliver to numbered hosts.  Time is model time
in integer nanoseconds: `inject` puts a frame on a port at a time, `run`
handles every event up to a time.  Everything the Python switch counts
per switch, port and queue is read back with `switch_stats`, `port_stats`
and `queue_stats`.  A program that makes copies gets the pipeline's PRE
groups and clone sessions copied into the engine, again after every change
(pre.on_change); the engine makes multicast replicas, clones, resubmits and
recirculations itself, through the program's copy calls (engine.c); the
digests it collects reach the pipelines' DigestQueues through take_cpu.

The engine's link loss draws from its own seeded generator (splitmix64 per
switch), not Python's: a lossy link loses the same share of packets, not
the same packets as the Python traffic manager."""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Mapping
from pathlib import Path

from testbed.cells.wire import CELL_UDP_PORT
from testbed.p4model.backend.native.build import build
from testbed.p4model.backend.native.errors import NativeBuildError
from testbed.p4model.tm.model import CLASSES, MAX_PORT

ENGINE_SOURCE = Path(__file__).with_name("engine.c")
SWITCH_STATS = ("rx", "tx", "ingress_drops", "tm_drops", "drop_port", "egress_drops", "pfc_frames_rx",
                "pfc_frames_tx", "pfc_malformed", "no_interface", "pipeline_errors", "no_pipeline", "clones",
                "resubmits", "recirculations", "replicas", "loop_drops")
WIRE_STATS = ("rx_frames", "rx_truncated", "tx_frames", "tx_errors")
FINE_US = 16384  # tm/lag.py's histogram, as engine.c keeps it
QUEUE_STATS = ("depth", "bytes", "limit", "byte_limit", "max_depth", "enqueued", "dequeued", "dropped_full",
               "enq_bytes", "deq_bytes", "drop_bytes", "passed", "passed_bytes")
PORT_STATS = ("rx", "tx", "dropped_priority", "dropped_priority_bytes", "pauses_received", "resumes_received",
              "paused_ns", "paused", "pfc_xoff_sent", "pfc_xon_sent", "cut_lost", "down")
_RECORD = struct.Struct("<qII")

_c = ctypes
_SIGNATURES = {
    "eng_new": (_c.c_void_p, [_c.c_uint64, _c.c_uint32, _c.c_uint32]),
    "eng_free": (None, [_c.c_void_p]),
    "eng_add_switch": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32]),
    "eng_set_pipeline": (_c.c_int, [_c.c_void_p, _c.c_uint32] + [_c.c_void_p] * 4 + [_c.c_uint32] * 3),
    "eng_set_copies": (_c.c_int, [_c.c_void_p, _c.c_uint32] + [_c.c_void_p] * 3),
    "eng_set_groups": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.POINTER(_c.c_uint32)]),
    "eng_set_replication": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.POINTER(_c.c_void_p), _c.c_uint32]),
    "eng_set_sessions": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.POINTER(_c.c_uint32)]),
    "eng_set_digests": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_void_p, _c.c_uint32]),
    "eng_wire_port": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_char_p]),
    "eng_cpu_port": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32]),
    "eng_pcap": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_char_p, _c.c_char_p]),
    "eng_pcap_flush": (None, [_c.c_void_p]),
    "eng_notify_fd": (_c.c_int, [_c.c_void_p]),
    "eng_take_cpu": (_c.c_uint64, [_c.c_void_p, _c.c_void_p, _c.c_uint64]),
    "eng_inject_now": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_char_p, _c.c_uint32]),
    "eng_lag": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_int, _c.POINTER(_c.c_uint64)]),
    "eng_wire_stats": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.POINTER(_c.c_uint64)]),
    "eng_run_realtime": (_c.c_int, [_c.c_void_p, _c.c_int64]),
    "eng_prepare_realtime": (_c.c_int, [_c.c_void_p]),
    "eng_stop": (None, [_c.c_void_p]),
    "eng_set_slack": (None, [_c.c_void_p, _c.c_int64]),
    "eng_lock": (None, [_c.c_void_p]),
    "eng_unlock": (None, [_c.c_void_p]),
    "eng_defaults": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_uint64, _c.c_int64, _c.c_int64,
                                _c.c_int64, _c.c_double]),
    "eng_port": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_int64, _c.c_int64, _c.c_double]),
    "eng_queue": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_uint32, _c.c_uint32, _c.c_uint64,
                             _c.c_int64]),
    "eng_pfc": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_int, _c.c_uint32, _c.c_uint32, _c.c_uint32]),
    "eng_queue_weight": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_int, _c.c_uint32, _c.c_uint32]),
    "eng_cable": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_uint32, _c.c_uint32]),
    "eng_host_port": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_uint32]),
    "eng_port_down": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_int]),
    "eng_switch_clear": (_c.c_int64, [_c.c_void_p, _c.c_uint32]),
    "eng_inject": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_char_p, _c.c_uint32, _c.c_int64]),
    "eng_inject_many": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_uint64, _c.c_uint64]),
    "eng_run": (_c.c_int64, [_c.c_void_p, _c.c_int64]),
    "eng_run_window": (_c.c_int64, [_c.c_void_p, _c.c_int64, _c.c_int64]),
    "eng_in_flight": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.POINTER(_c.c_uint64)]),
    "eng_next": (_c.c_int64, [_c.c_void_p]),
    "eng_keep": (None, [_c.c_void_p, _c.c_int]),
    "eng_kept": (_c.c_uint64, [_c.c_void_p, _c.POINTER(_c.c_void_p)]),
    "eng_clear_kept": (None, [_c.c_void_p]),
    "eng_delivered": (_c.c_uint64, [_c.c_void_p, _c.c_uint32]),
    "eng_host_pause": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.POINTER(_c.c_uint64)]),
    "eng_totals": (None, [_c.c_void_p, _c.POINTER(_c.c_uint64)]),
    "eng_switch_stats": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.POINTER(_c.c_uint64)]),
    "eng_queue_stats": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.c_uint32, _c.POINTER(_c.c_uint64)]),
    "eng_port_stats": (_c.c_int, [_c.c_void_p, _c.c_uint32, _c.c_uint32, _c.POINTER(_c.c_uint64)]),
    "eng_sample": (_c.c_int, [_c.c_void_p, _c.POINTER(_c.c_uint64), _c.c_uint32]),
}
SAMPLE_HEAD = ("switch", "port", "peak", "queue_full", "lost", "rx", "tx")


@functools.lru_cache(maxsize=2)
def engine_library(source: str | None = None) -> ctypes.CDLL:
    """engine.c (or another engine source, e.g. a test's altered copy) built (or found in the
    native back end's cache) and loaded, its signatures set."""
    so = build(ENGINE_SOURCE.read_text() if source is None else source, "engine.c")
    try:
        lib = ctypes.CDLL(str(so))
    except OSError as exc:
        raise NativeBuildError(None, "engine.c", f"cannot load {so}: {exc}") from None
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


# the program's calls the engine makes clones, resubmits and recirculations with (eng_set_replication)
COPY_CALLS = ("tb_requests", "tb_state_copy", "tb_clone_i2e", "tb_clone_e2e", "tb_ingress_again", "tb_egress_ctl_only",
              "tb_deparse", "tb_set_egress_rid", "tb_set_instance_type", "tb_truncate")
DIGEST_RECORD = 0x80000000   # engine.c: a CPU-channel record that is a digest


def _address(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


class NativeFabric:
    """Switches of native pipelines in one C engine (see the module docstring)."""

    def __init__(self, seed: int = 1, hosts: int = 0, source: str | None = None) -> None:
        self.lib = engine_library(source)
        self.hosts = hosts
        self._e = self.lib.eng_new(seed, hosts, CELL_UDP_PORT)
        if not self._e:
            raise MemoryError("native fabric engine: no memory")
        self.pipelines: list = []  # kept alive: the engine calls into their C instances
        self.python_slots: list = []  # the callbacks of Python pipelines (python_slot.py), kept alive too
        self._current: dict = {}   # switch index -> the pipeline it runs now

    def __del__(self) -> None:
        e, self._e = getattr(self, "_e", None), None
        if e:
            self.lib.eng_free(e)

    def add_switch(self, pipeline, tm, drop_port: int | None = None, name: str = "") -> int:
        """A switch running `pipeline` (a NativePipeline, a Python Pipeline through callbacks, or
        None: no program yet, it drops what arrives) with `tm`'s settings; its index."""
        if drop_port is None:
            drop_port = pipeline.drop_port if pipeline is not None else 511
        index = self.lib.eng_add_switch(self._e, drop_port, tm.priority_queues)
        if index < 0:
            raise MemoryError("native fabric engine: cannot add a switch")
        self.set_pipeline(index, pipeline, drop_port, name)
        self.sync_tm(index, tm)
        return index

    def set_pipeline(self, index: int, pipeline, drop_port: int | None = None, name: str = "") -> None:
        """Switch `index` runs `pipeline` from now on (None: none); packets queued under the
        previous program finish with it (it is kept alive here).  A program that can ask for
        clones, resubmit or recirculation gets the engine's copy path (eng_set_replication, the
        pipeline's max_passes), a multicast-only one the replica path (eng_set_copies); either
        gets the PRE's groups and clone sessions, kept current through pre.on_change.  A Python
        pipeline (backend "python": a program the native back end refused) runs through
        callbacks (python_slot.py; `name` names the switch in its problem line)."""
        self._current[index] = None
        if pipeline is None:
            self.lib.eng_set_pipeline(self._e, index, None, None, None, None, 0, 0, drop_port or 511)
            return
        if getattr(pipeline, "backend", None) == "python":
            self._set_python(index, pipeline, drop_port, name)
            return
        lib = pipeline.lib
        rc = self.lib.eng_set_pipeline(self._e, index, pipeline._inst, _address(lib.tb_ingress),
                                       _address(lib.tb_egress), _address(lib.tb_priority), lib.tb_state_size(),
                                       lib.tb_max_header_bytes(),
                                       pipeline.drop_port if drop_port is None else drop_port)
        if rc != 0:
            raise MemoryError("native fabric engine: cannot set a pipeline")
        self.pipelines.append(pipeline)
        self._current[index] = pipeline
        if getattr(pipeline, "digest_layouts", None):
            if self.lib.eng_set_digests(self._e, index, _address(lib.tb_digest), lib.tb_digest_words()) != 0:
                raise MemoryError("native fabric engine: cannot set a pipeline")
        kinds = getattr(pipeline, "replication", None) or {}
        if kinds.keys() & {"clone", "resubmit", "recirculate"}:
            fns = (ctypes.c_void_p * len(COPY_CALLS))(*(_address(getattr(lib, name)) for name in COPY_CALLS))
            rc = self.lib.eng_set_replication(self._e, index, fns, pipeline.max_passes)
        elif "multicast" in kinds:
            rc = self.lib.eng_set_copies(self._e, index, _address(lib.tb_mcast_grp), _address(lib.tb_set_egress_rid),
                                         _address(lib.tb_set_instance_type))
        else:
            return
        if rc != 0:
            raise MemoryError("native fabric engine: cannot set a pipeline")
        self._push_pre(index, pipeline)
        pipeline.pre.on_change = lambda: self._pre_changed(index, pipeline)

    def _set_python(self, index: int, pipeline, drop_port: int | None, name: str) -> None:
        from testbed.p4model.engine.python_slot import HEADER_ROOM, STATE_BYTES, PythonSlot

        slot = PythonSlot(pipeline, name or f"#{index}")
        ingress, egress, priority = slot.addresses()
        rc = self.lib.eng_set_pipeline(self._e, index, None, ingress, egress, priority, STATE_BYTES, HEADER_ROOM,
                                       pipeline.drop_port if drop_port is None else drop_port)
        if rc != 0:
            raise MemoryError("native fabric engine: cannot set a pipeline")
        self.pipelines.append(pipeline)
        self.python_slots.append(slot)  # the callbacks live as long as the engine may call them
        self._current[index] = pipeline

    def python_problem(self) -> str | None:
        """The first problem a Python pipeline's slot met (python_slot.py), or None."""
        return next((slot.problem for slot in self.python_slots if slot.problem), None)

    def _push_pre(self, index: int, pipeline) -> None:
        """The PRE's multicast groups and clone sessions of `pipeline` into switch `index` (the
        caller holds the lock when another thread runs the engine)."""
        pre = pipeline.pre
        rows = [(gid, rid, port) for gid in pre.group_ids() for rid, port in pre.group(gid)]
        flat = (ctypes.c_uint32 * (3 * len(rows) or 1))(*(x for row in rows for x in row))
        if self.lib.eng_set_groups(self._e, index, len(rows), flat) != 0:
            raise MemoryError("native fabric engine: no memory for the multicast groups")
        sessions = [(sid, instance, port, session.packet_length_bytes)
                    for sid in pre.clone_session_ids() for session in (pre.clone_session(sid),)
                    for instance, port in session.replicas]
        flat = (ctypes.c_uint32 * (4 * len(sessions) or 1))(*(x for row in sessions for x in row))
        if self.lib.eng_set_sessions(self._e, index, len(sessions), flat) != 0:
            raise MemoryError("native fabric engine: no memory for the clone sessions")

    def _pre_changed(self, index: int, pipeline) -> None:
        """A control-plane write changed the PRE's groups or clone sessions: copy them all again,
        under the lock."""
        if self._current.get(index) is pipeline:   # not a program the switch no longer runs
            with self.locked():
                self._push_pre(index, pipeline)

    def sync_tm(self, index: int, tm) -> None:
        """Copy a TrafficManager's settings (defaults, every port and queue, PFC) into switch `index`."""
        d = tm._default
        lib, e = self.lib, self._e
        lib.eng_defaults(e, index, d["limit"], d["byte_limit"], _interval(d["rate_pps"]), d["rate_bps"],
                         d["delay_ns"], float(d.get("loss", 0.0)))
        lib.eng_queue_weight(e, index, -1, 0, d.get("weight", 0))
        for number, port in tm._ports.items():
            lib.eng_port(e, index, number, port.rate_bps, port.delay_ns, port.loss)
            for prio, q in enumerate(port.queues):
                lib.eng_queue(e, index, number, prio, q.limit, q.byte_limit, q.interval_ns)
                lib.eng_queue_weight(e, index, number, prio, q.weight)
        if tm.pfc_priority is not None:
            if lib.eng_pfc(e, index, tm.pfc_priority, tm.pfc_xoff, tm.pfc_xon, tm.pfc_pool) != 0:
                raise ValueError("PFC cannot be changed while packets of its priority are queued")
        else:
            lib.eng_pfc(e, index, -1, 0, 0, 0)

    # ---- real time (testbed/p4model/engine/realtime.py drives these) ----

    def wire_port(self, switch: int, port: int, iface: str) -> None:
        """Port `port` of `switch` is the network interface `iface` (an AF_PACKET socket)."""
        import os

        rc = self.lib.eng_wire_port(self._e, switch, port, iface.encode())
        if rc < 0:
            raise OSError(-rc, f"port {port}@{iface}: {os.strerror(-rc)}")

    def pcap(self, switch: int, port: int, in_path: str, out_path: str) -> None:
        """Port `port` of `switch` writes what it receives and sends to these pcap files."""
        import os

        rc = self.lib.eng_pcap(self._e, switch, port, os.fsencode(in_path), os.fsencode(out_path))
        if rc < 0:
            raise OSError(-rc, f"pcap {in_path}: {os.strerror(-rc)}")

    def pcap_flush(self) -> None:
        """Every pcap buffer to disk (holding the lock)."""
        with self.locked():
            self.lib.eng_pcap_flush(self._e)

    def cpu_port(self, switch: int, port: int) -> None:
        """Frames the program sends to `port` are kept for take_cpu (PacketIn)."""
        self.lib.eng_cpu_port(self._e, switch, port)

    def notify_fd(self) -> int:
        """Readable when frames for a CPU port wait (take_cpu)."""
        return self.lib.eng_notify_fd(self._e)

    def take_cpu(self) -> list[tuple[int, bytes]]:
        """(switch, frame) of each frame a program sent to its CPU port since the last call; the
        digests programs sent meanwhile go into their pipelines' DigestQueue (push_digest)."""
        out = []
        buf = ctypes.create_string_buffer(1 << 20)
        with self.locked():
            n = self.lib.eng_take_cpu(self._e, buf, len(buf))
        raw, off = buf.raw[:n], 0
        while off < n:
            switch, length = struct.unpack_from("<II", raw, off)
            if switch & DIGEST_RECORD:
                words = struct.unpack_from(f"<{length // 8}Q", raw, off + 8)
                pipeline = self._current.get(switch & ~DIGEST_RECORD)
                if pipeline is not None and 0 < words[0] <= len(pipeline.digest_layouts):
                    pipeline.push_digest(words[0], words[1:])
            else:
                out.append((switch, raw[off + 8:off + 8 + length]))
            off += 8 + ((length + 7) & ~7)
        return out

    def inject_now(self, switch: int, port: int, frame: bytes) -> None:
        """A frame enters `switch` on `port` at the clock's now (PacketOut); the caller holds the lock."""
        if self.lib.eng_inject_now(self._e, switch, port, frame, len(frame)) != 0:
            raise ValueError(f"cannot put a frame on switch {switch} port {port}")

    def run_realtime(self, epoch_ns: int) -> None:
        """Forward in real time until stop() (blocks; ctypes lets other Python threads run)."""
        rc = self.lib.eng_run_realtime(self._e, epoch_ns)
        if rc < 0:
            import os

            raise OSError(-rc, f"the native engine cannot start: {os.strerror(-rc)}")

    def set_slack(self, ns: int) -> None:
        """Timed events may run up to `ns` late so that close ones share a wake-up (engine.c)."""
        self.lib.eng_set_slack(self._e, ns)

    def prepare_realtime(self) -> None:
        self.lib.eng_prepare_realtime(self._e)

    def stop(self) -> None:
        self.lib.eng_stop(self._e)

    def locked(self):
        """A context manager holding the engine's lock (no packet moves meanwhile)."""
        return _Locked(self.lib, self._e)

    def lag(self, switch: int, which: str):
        """The switch's dequeue or transmit lag as a tm.lag.LagStats (empty before real time)."""
        from testbed.p4model.tm.lag import LagStats

        size = 4 + FINE_US + 64
        out = (ctypes.c_uint64 * size)()
        stats = LagStats()
        if self.lib.eng_lag(self._e, switch, 0 if which == "dequeue" else 1, out) > 0:
            stats.recorded, stats.on_time, stats.total_ns, stats.max_ns = out[0], out[1], out[2], out[3]
            stats._fine = list(out[4:4 + FINE_US])
            stats._coarse = list(out[4 + FINE_US:size])
        return stats

    def wire_stats(self, switch: int, port: int) -> dict:
        out = (ctypes.c_uint64 * len(WIRE_STATS))()
        if self.lib.eng_wire_stats(self._e, switch, port, out) < 0:
            raise ValueError(f"no port {switch}/{port}")
        return dict(zip(WIRE_STATS, out))

    def cable(self, a: int, a_port: int, b: int, b_port: int) -> None:
        if self.lib.eng_cable(self._e, a, a_port, b, b_port) != 0:
            raise ValueError(f"no cable between switch {a} port {a_port} and switch {b} port {b_port}")

    def host_port(self, switch: int, port: int, host: int) -> None:
        if self.lib.eng_host_port(self._e, switch, port, host) != 0:
            raise ValueError(f"switch {switch} port {port} cannot be host {host}'s port")

    def port_down(self, switch: int, port: int, down: bool = True) -> None:
        """The link of `port` of `switch` is cut (what the port sends is lost, and what is on its
        way into it now) or mended (engine.c eng_port_down); a cable is cut at both its ports."""
        if not 0 <= port <= MAX_PORT or self.lib.eng_port_down(self._e, switch, port, int(down)) != 0:
            raise ValueError(f"no port {switch}/{port}")

    def switch_clear(self, switch: int) -> int:
        """Switch `switch` loses what its process held (engine.c eng_switch_clear): queued packets,
        PFC state, every counter; returns how many packets were queued."""
        n = self.lib.eng_switch_clear(self._e, switch)
        if n < 0:
            raise ValueError(f"no switch {switch}")
        return n

    def inject(self, switch: int, port: int, frame: bytes, at_ns: int) -> None:
        """`frame` reaches `port` of `switch` at `at_ns`."""
        if not 0 <= port <= MAX_PORT or self.lib.eng_inject(self._e, switch, port, frame, len(frame), at_ns) != 0:
            raise ValueError(f"cannot put a frame on switch {switch} port {port}")

    def inject_many(self, records: bytes, count: int) -> None:
        """`count` frames in one call, as `inject` each in turn (engine.c eng_inject_many has the
        record layout: at_ns, switch, port, length, then the frame padded to 8 bytes)."""
        refused = self.lib.eng_inject_many(self._e, records, len(records), count)
        if refused:
            raise ValueError(f"cannot put frame {refused} of {count} on its switch port")

    def take_raw(self) -> bytes:
        """The kept deliveries as engine.c lays them out (at_ns, host, length, then the frame padded
        to 8 bytes: `take` reads them); then forgets them."""
        ptr = ctypes.c_void_p()
        n = self.lib.eng_kept(self._e, ctypes.byref(ptr))
        raw = ctypes.string_at(ptr, n) if n else b""
        self.lib.eng_clear_kept(self._e)
        return raw

    def run(self, until_ns: int) -> int | None:
        """Every event up to `until_ns`; the next event's time, None when none is left."""
        nxt = self.lib.eng_run(self._e, until_ns)
        return None if nxt < 0 else nxt

    def run_window(self, until_ns: int, window_ns: int) -> int:
        """Every event up to `until_ns`, but once a host delivery at t is kept (or one not yet
        taken waits), only those before t + `window_ns`: the hosts' answers to a delivery at t
        reach the fabric no sooner than that. Returns the last time processed; `take` gives
        the deliveries, some maybe beyond it (engine.c eng_run_window)."""
        return self.lib.eng_run_window(self._e, until_ns, window_ns)

    def in_flight(self, cell_class: int) -> tuple[int, int, int]:
        """(on cables, queued in traffic managers, lost on cut cables: already or on arrival) of the
        frames of `cell_class` in the engine (engine.c eng_in_flight)."""
        out = (ctypes.c_uint64 * 4)()
        self.lib.eng_in_flight(self._e, cell_class, out)
        return out[0], out[1], out[2] + out[3]

    def next_ns(self) -> int | None:
        nxt = self.lib.eng_next(self._e)
        return None if nxt < 0 else nxt

    def keep(self, on: bool = True) -> None:
        """Keep every frame a host port delivers (for `take`), not only count it."""
        self.lib.eng_keep(self._e, int(on))

    def take(self) -> list[tuple[int, int, bytes]]:
        """(time_ns, host, frame) of each kept delivery, in delivery order; then forgets them."""
        raw = self.take_raw()
        out, off = [], 0
        while off < len(raw):
            at, host, length = _RECORD.unpack_from(raw, off)
            out.append((at, host, raw[off + 16:off + 16 + length]))
            off += 16 + ((length + 7) & ~7)
        return out

    def delivered(self, host: int) -> int:
        return self.lib.eng_delivered(self._e, host)

    def host_pause(self, host: int) -> tuple[bool, int]:
        """(paused on priority 0, pause frames received) of a host port's far end."""
        frames = ctypes.c_uint64()
        paused = self.lib.eng_host_pause(self._e, host, ctypes.byref(frames))
        return paused > 0, frames.value

    def totals(self) -> dict:
        out = (ctypes.c_uint64 * 4)()
        self.lib.eng_totals(self._e, out)
        return {"events": out[0], "cell_hops": out[1], "wakeups": out[2], "thread_cpu_s": out[3] / 1e9}

    def switch_stats(self, switch: int) -> dict:
        out = (ctypes.c_uint64 * len(SWITCH_STATS))()
        if self.lib.eng_switch_stats(self._e, switch, out) < 0:
            raise ValueError(f"no switch {switch}")
        return dict(zip(SWITCH_STATS, out))

    def queue_stats(self, switch: int, port: int, priority: int) -> dict | None:
        out = (ctypes.c_uint64 * (len(QUEUE_STATS) + 3 * CLASSES))()
        n = self.lib.eng_queue_stats(self._e, switch, port, priority, out)
        if n < 0:
            raise ValueError(f"no queue {switch}/{port}/{priority}")
        if n == 0:
            return None
        k = len(QUEUE_STATS)
        stats = dict(zip(QUEUE_STATS, out[:k]))
        stats["class_packets"] = list(out[k:k + CLASSES])
        stats["class_bytes"] = list(out[k + CLASSES:k + 2 * CLASSES])
        stats["class_drops"] = list(out[k + 2 * CLASSES:k + 3 * CLASSES])
        return stats

    def port_stats(self, switch: int, port: int) -> dict | None:
        out = (ctypes.c_uint64 * (len(PORT_STATS) + CLASSES))()
        n = self.lib.eng_port_stats(self._e, switch, port, out)
        if n < 0:
            raise ValueError(f"no port {switch}/{port}")
        if n == 0:
            return None
        stats = dict(zip(PORT_STATS, out[:len(PORT_STATS)]))
        stats["lost_by_class"] = list(out[len(PORT_STATS):])
        return stats

    def sample(self) -> list[dict]:
        """Every port of every switch in one call (engine.c eng_sample): its SAMPLE_HEAD values, then
        "class_packets" and "class_bytes" (accepted for transmission, per cell class, cumulative);
        "peak" is the deepest queue since the previous call, which restarts it from what is queued.
        In real time the caller holds the lock (`locked()`); `sample_copy` and `sample_records`
        split the call so that only the copy is made under it."""
        return self.sample_records(self.sample_copy())

    def sample_copy(self) -> tuple[object, int]:
        """The C copy of every port's counters (the only part that needs the lock)."""
        words = len(SAMPLE_HEAD) + 2 * CLASSES
        cap = getattr(self, "_sample_cap", 64)
        while True:
            out = (ctypes.c_uint64 * (cap * words))()
            n = self.lib.eng_sample(self._e, out, cap)
            if n >= 0:
                break
            cap = -n
        self._sample_cap = cap
        return out, n

    @staticmethod
    def sample_records(copy: tuple[object, int]) -> list[dict]:
        """The records of a `sample_copy`."""
        out, n = copy
        words, k = len(SAMPLE_HEAD) + 2 * CLASSES, len(SAMPLE_HEAD)
        flat = out[:n * words]
        records = []
        for i in range(0, n * words, words):
            record = dict(zip(SAMPLE_HEAD, flat[i:i + k]))
            record["class_packets"] = flat[i + k:i + k + CLASSES]
            record["class_bytes"] = flat[i + k + CLASSES:i + k + 2 * CLASSES]
            records.append(record)
        return records


class SwitchStats(Mapping):
    """A switch's counters as testbed.p4model.switch.loop.Switch.stats names them, read live from
    the engine (engine-only counters such as egress_drops included); packet_in and loop_errors
    are the control side's own."""

    def __init__(self, engine: NativeFabric, index: int) -> None:
        self.engine, self.index = engine, index
        self.own = {"packet_in": 0, "loop_errors": 0}

    def _all(self) -> dict:
        return {**self.engine.switch_stats(self.index), **self.own}

    def __getitem__(self, key: str) -> int:
        return self._all()[key]

    def __setitem__(self, key: str, value: int) -> None:
        self.own[key] = value

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


class _Locked:
    __slots__ = ("lib", "e")

    def __init__(self, lib, e) -> None:
        self.lib, self.e = lib, e

    def __enter__(self):
        self.lib.eng_lock(self.e)
        return self

    def __exit__(self, *exc) -> None:
        self.lib.eng_unlock(self.e)


def _interval(rate_pps: float) -> int:
    return 0 if rate_pps == 0 else max(1, round(1e9 / rate_pps))
