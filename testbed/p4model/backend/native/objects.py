"""Control-plane objects of the native back end.

A NativeTable is the Python target's runtime Table (same checks, same
interface for control_plane.py and the STF runner) whose lookup data lives
in C: after every write its entries are written, in the Python target's
precedence order, to the C table through tb_table_set, and its default
action through tb_table_default.  Precedence (first match wins in C):
larger priority first, then for LPM longer prefix first, then older first."""

from __future__ import annotations

import contextlib
import ctypes

from testbed.p4model.backend.native.emit_tables import key_slots
from testbed.p4model.runtime.externs import CounterArray, MeterArray, RegisterArray
from testbed.p4model.runtime.tables import Table

_MUTATORS = ("insert", "modify", "delete", "clear", "set_default", "reset_default")


_WORD = (1 << 64) - 1


class NativeTable(Table):
    """A Table whose every write is mirrored into C memory.  The rows are built first; only
    handing them to C runs under `_c_lock` (the native engine's lock when an engine moves this
    table's packets: a write holds the packets up for one copy of the rows, not for the Python
    work around it)."""

    _c_lock = staticmethod(contextlib.nullcontext)

    def _native_bind(self, lib, inst, info) -> None:
        self._lib, self._inst, self._info = lib, inst, info
        self._aidx = {name: i for i, name in enumerate(info.actions)}
        self._sync()

    def _row_keys(self, entry) -> list:
        """The row's (value, mask) or (lo, hi) slots; a key over 64 bits as one (value, mask) pair per
        64-bit word, the high word first (emit_tables.key_slots)."""
        out = []
        for kind, w, item in zip(self._info.kinds, self._info.widths, entry.match):
            pair = self._row_keys_one(kind, w, item)
            for j in reversed(range(key_slots(w))):
                out += [(pair[0] >> (64 * j)) & _WORD, (pair[1] >> (64 * j)) & _WORD]
        return out

    @staticmethod
    def _row_keys_one(kind, w, item) -> list:
        """(value, mask) of one key (lo, hi for range), as Python ints of w bits."""
        full = (1 << w) - 1
        if kind == "exact":
            return [item & full, full]
        if kind == "lpm":
            v, plen = item
            m = (full >> (w - plen)) << (w - plen) if plen else 0
            return [v & m, m]
        if kind == "ternary":
            v, m = item
            return [v & m, m]
        if kind == "range":
            return list(item)
        return [0, 0] if item is None else [item & full, full]   # optional

    def _action_row(self, call) -> list:
        args = list(call.args) + [0] * (self._info.max_args - len(call.args))
        return [self._aidx[call.action]] + args

    def _rank(self, entry):
        plen = sum(item[1] for kind, item in zip(self._info.kinds, entry.match) if kind == "lpm")
        return (-entry.priority, -plen, entry.seq)

    def _sync(self) -> None:
        rows = []
        for entry in sorted(self.entries(), key=self._rank):
            rows += self._row_keys(entry) + self._action_row(entry.action)
        n = len(rows) // self._info.stride if self._info.stride else 0
        buf = (ctypes.c_uint64 * max(len(rows), 1))(*rows)
        act = self._action_row(self.default)
        default = (ctypes.c_uint64 * len(act))(*act)
        with self._c_lock():
            failed = self._lib.tb_table_set(self._inst, self._info.tid, n, buf) != 0
            self._lib.tb_table_default(self._inst, self._info.tid, default)
        if failed:
            raise MemoryError(f"table {self.name}: no memory for {n} rows")


@contextlib.contextmanager
def writes_batched(tables):
    """Within the block the NativeTables among `tables` take their writes in Python only, and each
    one written is copied into C once at the end (a table's copy is all its rows, so a copy per
    write makes a fabric's thousands of plan entries quadratic). For a control plane writing
    while no packet moves: packets in the block would see the tables as they were before it."""
    native = [t for t in tables if isinstance(t, NativeTable)]
    for t in native:
        t._batched = False
    try:
        yield
    finally:
        for t in native:
            written = t.__dict__.pop("_batched", False)
            if written:
                t._sync()


def _mirrored(name):
    base = getattr(Table, name)

    def method(self, *args, **kwargs):
        result = base(self, *args, **kwargs)
        if "_batched" in self.__dict__:
            self._batched = True
        else:
            self._sync()
        return result
    method.__name__ = name
    method.__doc__ = base.__doc__
    return method


for _name in _MUTATORS:
    setattr(NativeTable, _name, _mirrored(_name))


class NativeRegister(RegisterArray):
    """A RegisterArray whose `values` are the C array the packets use
    (a ctypes view: values[i] reads and writes C memory)."""

    def _native_bind(self, lib, inst, info) -> None:
        self._lib, self._inst, self._cid = lib, inst, info.cid
        addr = ctypes.cast(lib.tb_register(inst, info.cid), ctypes.c_void_p).value
        self.values = (ctypes.c_uint64 * max(self.size, 1)).from_address(addr)

    def reset(self) -> None:
        ctypes.memset(self.values, 0, ctypes.sizeof(self.values))


class NativeCounter(CounterArray):
    """A CounterArray whose `packets` and `bytes` are the C arrays."""

    def _native_bind(self, lib, inst, info) -> None:
        self._lib, self._inst, self._cid = lib, inst, info.cid
        arr = ctypes.c_uint64 * max(self.size, 1)
        self.packets = arr.from_address(ctypes.cast(lib.tb_counter(inst, info.cid, 0), ctypes.c_void_p).value)
        self.bytes = arr.from_address(ctypes.cast(lib.tb_counter(inst, info.cid, 1), ctypes.c_void_p).value)

    def reset(self) -> None:
        ctypes.memset(self.packets, 0, ctypes.sizeof(self.packets))
        ctypes.memset(self.bytes, 0, ctypes.sizeof(self.bytes))


class NativeMeterArray(MeterArray):
    """A MeterArray whose cells run in C: configuration is checked and kept here (reads answer
    from it) and every change is copied to the C cell (tb_meter_set), which the packets use."""

    def _native_bind(self, lib, inst, info) -> None:
        self._lib, self._inst, self._cid = lib, inst, info.cid
        lib.tb_meter_set.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                     ctypes.c_int] + [ctypes.c_uint64] * 4
        for index in range(self.size):
            self._push(index)

    def _push(self, index: int) -> None:
        config = self.cells[index].get_config()
        self._lib.tb_meter_set(self._inst, self._cid, index, self.size, int(config is not None), *(config or (0,) * 4))

    def set_config(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        super().set_config(index, cir, cburst, pir, pburst)
        self._push(index)

    def reset_config(self, index: int) -> None:
        super().reset_config(index)
        self._push(index)
