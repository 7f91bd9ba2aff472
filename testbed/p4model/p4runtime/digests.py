"""Digest lists: batching, timing and acknowledgement (P4Runtime DigestEntry).

A program's `digest(...)` calls land in the pipeline's DigestQueue as
(digest name, field values).  A digest is streamed to the controller only
after the controller configured it with a DigestEntry (PI does the same);
its Config means:

* max_list_size: a list is sent as soon as it holds this many messages
  (0 = no size limit);
* max_timeout_ns: a message waits at most this long before its list is sent
  (0 = send at once);
* ack_timeout_ns: after data has been sent, identical data is suppressed
  until the controller acknowledges the list (DigestListAck) or this
  timeout passes, so a learning switch does not flood its controller with
  the same MAC while the controller is still installing the entry.
  Identical data inside one pending list is sent once.

Called from the packet thread (collect, poll) and from stream threads
(ack), hence one small lock; it is held for dictionary work only.
"""

from __future__ import annotations

import threading
from typing import Callable

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

ConfigLookup = Callable[[int], "p4runtime_pb2.DigestEntry.Config | None"]


def _struct_widths(p4info: p4info_pb2.P4Info, digest: p4info_pb2.Digest) -> list[int]:
    spec = digest.type_spec
    if spec.HasField("struct"):
        struct = p4info.type_info.structs.get(spec.struct.name)
        if struct is not None:
            return [m.type_spec.bitstring.bit.bitwidth or m.type_spec.bitstring.int.bitwidth
                    or m.type_spec.bitstring.varbit.max_bitwidth or 1 for m in struct.members]
    if spec.HasField("bitstring"):
        return [spec.bitstring.bit.bitwidth or spec.bitstring.int.bitwidth or 1]
    return []


class _Digest:
    __slots__ = ("id", "name", "widths", "struct", "buffer", "first_ns", "cache", "lists")

    def __init__(self, digest_id: int, name: str, widths: list[int], struct: bool) -> None:
        self.id = digest_id
        self.name = name
        self.widths = widths
        self.struct = struct
        self.buffer: dict[tuple, None] = {}  # ordered set of pending data
        self.first_ns = 0
        self.cache: dict[tuple, tuple[int, int]] = {}  # data -> (list_id, expiry_ns)
        self.lists: dict[int, list[tuple]] = {}  # unacknowledged list id -> data


class DigestManager:
    def __init__(self, p4info: p4info_pb2.P4Info, config: ConfigLookup,
                 send: Callable[[p4runtime_pb2.DigestList], None]) -> None:
        self._config = config
        self._send = send
        self._lock = threading.Lock()
        self._by_name: dict[str, _Digest] = {}
        self._by_id: dict[int, _Digest] = {}
        self._next_list_id = 1
        self.dropped_unconfigured = 0
        self.suppressed = 0
        self.sent_lists = 0
        for d in p4info.digests:
            entry = _Digest(d.preamble.id, d.preamble.name, _struct_widths(p4info, d),
                            d.type_spec.HasField("struct"))
            self._by_id[entry.id] = entry
            for key in (d.preamble.name, d.preamble.alias, d.type_spec.struct.name):
                if key:
                    self._by_name.setdefault(key, entry)

    def collect(self, items, now_ns: int) -> None:
        """items: (name, values) from DigestQueue.drain()."""
        if not items:
            return
        with self._lock:
            for name, values in items:
                d = self._by_name.get(name)
                if d is None:
                    self.dropped_unconfigured += 1
                    continue
                config = self._config(d.id)
                if config is None:
                    self.dropped_unconfigured += 1
                    continue
                data = tuple(values)
                cached = d.cache.get(data)
                if cached is not None and (config.ack_timeout_ns == 0 or cached[1] > now_ns):
                    self.suppressed += 1
                    continue
                if data in d.buffer:
                    self.suppressed += 1
                    continue
                if not d.buffer:
                    d.first_ns = now_ns
                d.buffer[data] = None
            self._flush(now_ns)

    def poll(self, now_ns: int) -> None:
        with self._lock:
            self._flush(now_ns)

    def next_deadline_ns(self) -> int | None:
        best = None
        with self._lock:
            for d in self._by_id.values():
                if d.buffer:
                    config = self._config(d.id)
                    at = d.first_ns + (config.max_timeout_ns if config is not None else 0)
                    if best is None or at < best:
                        best = at
        return best

    def ack(self, digest_id: int, list_id: int) -> bool:
        with self._lock:
            d = self._by_id.get(digest_id)
            if d is None:
                return False
            data = d.lists.pop(list_id, None)
            if data is None:
                return False
            for item in data:
                if d.cache.get(item, (None,))[0] == list_id:
                    del d.cache[item]
            return True

    def _flush(self, now_ns: int) -> None:
        for d in self._by_id.values():
            if not d.buffer:
                continue
            config = self._config(d.id)
            if config is None:
                d.buffer.clear()
                continue
            size = config.max_list_size
            while d.buffer and ((size and len(d.buffer) >= size) or now_ns - d.first_ns >= config.max_timeout_ns):
                items = list(d.buffer)
                chunk = items[:size] if size else items
                for item in chunk:
                    del d.buffer[item]
                self._emit(d, config, chunk, now_ns)
                d.first_ns = now_ns

    def _emit(self, d: _Digest, config, chunk: list[tuple], now_ns: int) -> None:
        list_id = self._next_list_id
        self._next_list_id += 1
        message = p4runtime_pb2.DigestList(digest_id=d.id, list_id=list_id, timestamp=now_ns)
        for values in chunk:
            data = message.data.add()
            if d.struct:
                for value, width in zip(values, d.widths):
                    data.struct.members.add().bitstring = value.to_bytes((width + 7) // 8, "big")
            else:
                data.bitstring = values[0].to_bytes((d.widths[0] + 7) // 8, "big")
        expiry = now_ns + config.ack_timeout_ns
        for item in chunk:
            d.cache[item] = (list_id, expiry)
        if config.ack_timeout_ns:
            d.lists[list_id] = chunk
            if len(d.lists) > 4096:  # a controller that never acks: keep memory bounded
                d.lists.pop(next(iter(d.lists)))
        else:
            for item in chunk:
                d.cache.pop(item, None)
        self.sent_lists += 1
        self._send(message)
