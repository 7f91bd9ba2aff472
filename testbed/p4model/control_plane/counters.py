"""Counters and direct counters.

Only MODIFY and DELETE exist: INSERT is INVALID_ARGUMENT, DELETE resets the
cells (as PI does), a negative count is INVALID_ARGUMENT.  A write or read
without an index covers every cell.  Data carries packets, bytes or both, as
the counter's unit in the P4Info says.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.context import Context, cells
from testbed.p4model.control_plane.direct import direct_read_entries, direct_target, entry_key
from testbed.p4model.control_plane.p4info_index import INSERT, MODIFY, Index, error


def counter_data(info: Index, data: p4runtime_pb2.CounterData, counter_id: int, packets: int,
                 nbytes: int, direct: bool) -> None:
    """Fill `data` with the counts the counter's unit keeps."""
    spec = (info.direct_counters if direct else info.counters)[counter_id].spec
    if spec.unit in (p4info_pb2.CounterSpec.PACKETS, p4info_pb2.CounterSpec.BOTH):
        data.packet_count = packets
    if spec.unit in (p4info_pb2.CounterSpec.BYTES, p4info_pb2.CounterSpec.BOTH):
        data.byte_count = nbytes


class Counters:
    """CounterEntry writes and reads."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def write(self, kind: int, entry: p4runtime_pb2.CounterEntry) -> None:
        counter = Index.get(self.ctx.info.counters, entry.counter_id, "counter")
        name = counter.preamble.name
        if kind == INSERT:
            raise error("INVALID_ARGUMENT", f"counter {name}: INSERT update type not "
                                            f"supported for counters")
        selected = cells(entry, counter.size, f"counter {name}")
        runtime = self.ctx.runtime("counters", name)
        packets = entry.data.packet_count if kind == MODIFY else 0
        nbytes = entry.data.byte_count if kind == MODIFY else 0
        if packets < 0 or nbytes < 0:
            raise error("INVALID_ARGUMENT", f"counter {name}: negative count")
        for i in selected:
            runtime.packets[i] = packets
            runtime.bytes[i] = nbytes

    def read(self, request: p4runtime_pb2.CounterEntry) -> list:
        return self.encode(self.values(request))

    def values(self, request: p4runtime_pb2.CounterEntry) -> list[tuple[int, int, int, int]]:
        """(counter id, index, packets, bytes) of every cell the request selects."""
        out = []
        for counter in self.ctx.info.selected(self.ctx.info.counters, request.counter_id,
                                              "counter"):
            runtime = self.ctx.runtime("counters", counter.preamble.name)
            cid = counter.preamble.id
            for i in cells(request, counter.size, f"counter {counter.preamble.name}"):
                out.append((cid, i, runtime.packets[i], runtime.bytes[i]))
        return out

    def encode(self, values) -> list:
        """The entities of values() (apart from it, so a caller can build them later)."""
        out = []
        for cid, i, packets, nbytes in values:
            entity = p4runtime_pb2.Entity()
            ce = entity.counter_entry
            ce.counter_id = cid
            ce.index.index = i
            counter_data(self.ctx.info, ce.data, cid, packets, nbytes, direct=False)
            out.append(entity)
        return out


class DirectCounters:
    """DirectCounterEntry writes and reads: the counts of one table entry."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def write(self, kind: int, entry: p4runtime_pb2.DirectCounterEntry) -> None:
        if kind == INSERT:
            raise error("INVALID_ARGUMENT", "INSERT update type not supported for counters")
        table, _runtime, found = direct_target(self.ctx, entry, "Counter")
        packets = entry.data.packet_count if kind == MODIFY else 0
        nbytes = entry.data.byte_count if kind == MODIFY else 0
        if packets < 0 or nbytes < 0:
            raise error("INVALID_ARGUMENT", f"table {table.name}: negative count")
        found.counter_packets, found.counter_bytes = packets, nbytes

    def read(self, request: p4runtime_pb2.DirectCounterEntry) -> list:
        table, entries = direct_read_entries(self.ctx, request, "Counter")
        out = []
        for e in entries:
            entity = p4runtime_pb2.Entity()
            dce = entity.direct_counter_entry
            entry_key(table, e, dce.table_entry)
            counter_data(self.ctx.info, dce.data, table.direct_counter_id, e.counter_packets,
                         e.counter_bytes, direct=True)
            out.append(entity)
        return out
