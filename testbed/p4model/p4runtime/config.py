"""Forwarding-pipeline configs: compile the P4 source a controller sends.

`SetForwardingPipelineConfig.config.p4_device_config` carries, for the
builtin target, the **P4-16 program source text** (UTF-8), where bmv2
expects p4c's JSON.  p4runtime-shell's `FwdPipeConfig(p4info_path,
bin_path)` therefore takes the .p4 file as its "binary".  The source is
compiled with the target's own include directory (`#include <core.p4>` /
`<v1model.p4>`); includes relative to the controller's file system cannot
be resolved (the switch never sees that file system).

The P4Info must describe that program: the server generates its own P4Info
from the source and compares object kinds, names and ids, match fields
and action parameters (names, ids, widths, match kinds).  The first
difference is reported as INVALID_ARGUMENT, so a controller holding a stale
P4Info learns at once which object is wrong instead of having its writes
silently land on the wrong table.

Compiling is slow compared with a packet, so it happens in the RPC thread;
only the finished Pipeline is handed to the packet thread.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from p4.config.v1 import p4info_pb2

from testbed.errors import TestbedError
from testbed.p4model.p4runtime.packetio import PacketIO
from testbed.p4model.p4runtime.status import RpcError

_KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
          "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests")


@dataclass
class LoadedConfig:
    """Everything the server and switch need about the running program."""

    pipeline: object
    control_plane: object
    p4info: p4info_pb2.P4Info  # as the controller sent it (returned by Get)
    source: bytes
    cookie: int = 0
    packet_io: PacketIO = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.packet_io is None:
            self.packet_io = PacketIO(self.p4info)


class _ProgramCache:
    """Front-end results by source text: a fabric process runs many switches, and each is sent
    the same program; it is parsed and checked once (0.26 s for fabric.p4), and every switch
    gets a Pipeline of its own (its own tables and registers) from the shared, read-only IR."""

    SIZE = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: OrderedDict[tuple, tuple] = OrderedDict()

    def get(self, text: str, include_dirs: tuple, load) -> tuple:
        key = (text, include_dirs)
        with self._lock:  # one compile at a time; the others wait and reuse it
            hit = self._loaded.get(key)
            if hit is None:
                hit = self._loaded[key] = load()
                while len(self._loaded) > self.SIZE:
                    self._loaded.popitem(last=False)
            else:
                self._loaded.move_to_end(key)
            return hit


_programs = _ProgramCache()


def compile_source(source: bytes, clock=None, include_dirs=(), drop_port: int = 511, backend: str = "python"):
    """P4 source bytes -> (Pipeline, generated P4Info); RpcError INVALID_ARGUMENT on any error.
    backend "native": a NativePipeline, and a program the native back end refuses is refused."""
    from testbed.p4model.pipeline import Pipeline

    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RpcError("INVALID_ARGUMENT",
                       f"p4_device_config must be the P4-16 program source in UTF-8 (byte {error.start} is not)")
    if not text.strip():
        raise RpcError("INVALID_ARGUMENT", "p4_device_config is empty: send the P4-16 program source")
    program, p4info = _programs.get(text, tuple(include_dirs), lambda: _load_text(text, include_dirs))
    if backend == "native":
        return _native(program, clock, drop_port), p4info
    try:
        pipeline = Pipeline(program, clock=clock, drop_port=drop_port)
    except TestbedError as error:
        raise RpcError("INVALID_ARGUMENT", f"the P4 program does not load: {error}") from None
    except RecursionError:
        raise RpcError("INVALID_ARGUMENT", "the P4 program does not load: nesting too deep") from None
    return pipeline, p4info


def _native(program, clock, drop_port: int):
    """A NativePipeline of `program`, or RpcError naming what the native back end cannot do."""
    from testbed.p4model.backend.native import NativeBuildError, NativeUnsupported
    from testbed.p4model.backend.native.binding import NativePipeline

    try:
        return NativePipeline(program, clock=clock, drop_port=drop_port)
    except (NativeUnsupported, NativeBuildError) as error:
        raise RpcError("INVALID_ARGUMENT", f"this switch runs the native back end: {error}; start it with "
                                           "--backend python to run this program") from None


def _load_text(text: str, include_dirs) -> tuple:
    """The front end and P4Info of a program given as text (read-only once made)."""
    from testbed.p4model.frontend import load_program
    from testbed.p4model.p4info import generate

    with tempfile.TemporaryDirectory(prefix="p4rt-") as tmp:
        path = os.path.join(tmp, "program.p4")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            program = load_program(Path(path), include_dirs=list(include_dirs))
            return program, generate(program)
        except TestbedError as error:
            raise RpcError("INVALID_ARGUMENT", f"the P4 program does not load: {error}") from None
        except RecursionError:
            raise RpcError("INVALID_ARGUMENT", "the P4 program does not load: nesting too deep") from None


def _objects(p4info: p4info_pb2.P4Info, kind: str) -> dict[int, object]:
    return {o.preamble.id: o for o in getattr(p4info, kind)}


def first_difference(ours: p4info_pb2.P4Info, theirs: p4info_pb2.P4Info) -> str | None:
    """A sentence naming the first object where the controller's P4Info differs, or None."""
    for kind in _KINDS:
        mine, yours = _objects(ours, kind), _objects(theirs, kind)
        for oid in sorted(set(mine) | set(yours)):
            a, b = mine.get(oid), yours.get(oid)
            what = kind.rstrip("s").replace("_", " ")
            if a is None:
                return f"the P4Info has {what} {b.preamble.name!r} (id {oid:#x}) that the program does not have"
            if b is None:
                return f"the P4Info lacks {what} {a.preamble.name!r} (id {oid:#x}) of the program"
            if a.preamble.name != b.preamble.name:
                return f"{what} id {oid:#x} is {a.preamble.name!r} in the program but {b.preamble.name!r} in the P4Info"
            detail = _detail_difference(kind, a, b)
            if detail:
                return f"{what} {a.preamble.name!r}: {detail}"
    return None


def _fields(items, attrs):
    return [tuple(getattr(i, x) for x in attrs) for i in items]


def _detail_difference(kind: str, a, b) -> str | None:
    if kind == "tables":
        fa = _fields(a.match_fields, ("id", "name", "bitwidth", "match_type"))
        fb = _fields(b.match_fields, ("id", "name", "bitwidth", "match_type"))
        if fa != fb:
            return f"match fields differ (program {fa}, P4Info {fb})"
        ra = sorted(r.id for r in a.action_refs)
        rb = sorted(r.id for r in b.action_refs)
        if ra != rb:
            return "its actions differ"
    elif kind == "actions":
        pa = _fields(a.params, ("id", "name", "bitwidth"))
        pb = _fields(b.params, ("id", "name", "bitwidth"))
        if pa != pb:
            return f"parameters differ (program {pa}, P4Info {pb})"
    elif kind == "controller_packet_metadata":
        ma = _fields(a.metadata, ("id", "name", "bitwidth"))
        mb = _fields(b.metadata, ("id", "name", "bitwidth"))
        if ma != mb:
            return f"fields differ (program {ma}, P4Info {mb})"
    return None
