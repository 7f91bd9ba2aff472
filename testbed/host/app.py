"""The application on a host: starts its workload's messages, verifies what arrives.

Shared by the simulator and the UDP agent. A message starts at its start
time once every message it depends on has been delivered here (ring
all-reduce steps). Payloads are generated deterministically from the seed,
so the receiver checks delivered bytes against an independent copy, not
only against the transport's own checksum.
"""

from __future__ import annotations

from typing import Callable

from testbed.host import records, workloads
from testbed.host.endpoint import Endpoint
from testbed.host.receiver import Delivered
from testbed.host.sender import OutMessage
from testbed.host.workloads import MessageSpec


class WorkloadRunner:
    def __init__(self, name: str, endpoint: Endpoint, specs: list[MessageSpec], seed: int,
                 addr_of: Callable[[str], str] = str, name_of: Callable[[str], str] = str) -> None:
        self.name = name
        self.ep = endpoint
        self.seed = seed
        self.addr_of = addr_of
        self.name_of = name_of
        self.pending = sorted((s for s in specs if s.src == name), key=lambda s: s.start_us)
        self.by_key: dict[tuple[str, int], MessageSpec] = {}
        self.received: set[tuple[str, int]] = set()
        self.records: list[dict] = []
        self.verify_failures = 0
        endpoint.on_delivered = self._delivered
        endpoint.on_acked = self._acked

    def _delivered(self, d: Delivered) -> None:
        src = self.name_of(d.src)
        expected = workloads.payload(self.seed, src, self.name, d.msg_id, len(d.payload))
        ok = expected == d.payload
        self.verify_failures += not ok
        self.received.add((src, d.msg_id))
        self.records.append(records.delivered_record(self.name, src, d, ok))

    def _acked(self, dst_addr: str, msg: OutMessage) -> None:
        spec = self.by_key[(self.name_of(dst_addr), msg.msg_id)]
        rec = records.sent_record(self.name, spec.dst, spec, msg, msg.done_s)
        self.records.append(rec)

    def poll(self, now: float) -> None:
        still = []
        for spec in self.pending:
            if now * 1e6 >= spec.start_us and all(tuple(d) in self.received for d in spec.deps):
                data = workloads.payload(self.seed, self.name, spec.dst, spec.msg_id, spec.size_bytes)
                self.by_key[(spec.dst, spec.msg_id)] = spec
                self.ep.send_message(now, self.addr_of(spec.dst), spec.msg_id, data)
            else:
                still.append(spec)
        self.pending = still

    def next_deadline(self, now: float) -> float | None:
        times = [s.start_us / 1e6 for s in self.pending
                 if s.start_us / 1e6 > now and all(tuple(d) in self.received for d in s.deps)]
        return min(times) if times else None

    def finished(self) -> bool:
        return not self.pending and self.ep.idle()
