"""Primary/backup election of P4Runtime controllers (StreamChannel arbitration).

P4Runtime 1.x, as PI implements it for simple_switch_grpc: every stream
that sends a MasterArbitrationUpdate joins the group of its (device id,
role); within a group the stream with the highest election id is primary.
Each arbitration request is answered on its own stream: status OK for the
primary, ALREADY_EXISTS for a backup, election_id = the primary's id.  When
the primary changes (a higher id arrives, or the primary's stream ends),
every stream of the group is told again, each with its own status; when
the last stream of a group leaves there is nobody to tell.  Two live
streams may not share an election id (INVALID_ARGUMENT), and a stream may
re-send arbitration to change its id.  Writes and pipeline changes are
allowed only with the primary's election id.

Thread-safe: stream threads call join/leave, RPC threads call is_primary.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from testbed.p4model.p4runtime.status import RpcError

Notify = Callable[[int, str, tuple[int, int], bool], None]  # device, role, primary id, is_primary


@dataclass
class Member:
    stream: object  # the server's per-stream object; must have notify_arbitration()
    device_id: int
    role: str
    election_id: tuple[int, int]


class Arbitrator:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._members: dict[object, Member] = {}

    def _group(self, role: str) -> list[Member]:
        return [m for m in self._members.values() if m.role == role]

    def primary(self, role: str = "") -> Member | None:
        with self._lock:
            return self._primary(role)

    def _primary(self, role: str) -> Member | None:
        group = self._group(role)
        return max(group, key=lambda m: m.election_id) if group else None

    def join(self, stream: object, device_id: int, role: str, election_id: tuple[int, int]) -> list:
        """Register/refresh a stream; returns [(stream, primary_id, is_primary)] to notify
        (always the caller, plus the whole group when the primary changed)."""
        if device_id != self.device_id:
            raise RpcError("NOT_FOUND", f"this switch is device {self.device_id}, not {device_id}")
        with self._lock:
            existing = self._members.get(stream)
            if existing is not None and existing.role != role:
                raise RpcError("INVALID_ARGUMENT", "a stream cannot change its role; open a new stream")
            for m in self._group(role):
                if m.stream is not stream and m.election_id == election_id:
                    raise RpcError("INVALID_ARGUMENT",
                                   f"election id {election_id} is already used by another controller")
            before = self._primary(role)
            self._members[stream] = Member(stream, device_id, role, election_id)
            after = self._primary(role)
            changed = before is None or before.stream is not after.stream or before.election_id != after.election_id
            targets = self._group(role) if changed else [self._members[stream]]
            return [(m.stream, after.election_id, m is after) for m in targets]

    def leave(self, stream: object) -> list:
        """Forget a stream; returns the notifications to send if the primary changed."""
        with self._lock:
            member = self._members.pop(stream, None)
            if member is None:
                return []
            before_was_primary = all(m.election_id < member.election_id for m in self._group(member.role))
            if not before_was_primary:
                return []
            after = self._primary(member.role)
            if after is None:
                return []
            return [(m.stream, after.election_id, m is after) for m in self._group(member.role)]

    def is_primary(self, role: str, election_id: tuple[int, int]) -> bool:
        with self._lock:
            p = self._primary(role)
            return p is not None and p.election_id == election_id

    def check_primary(self, role: str, election_id: tuple[int, int], what: str) -> None:
        if not self.is_primary(role, election_id):
            raise RpcError("PERMISSION_DENIED",
                           f"{what} needs the primary controller's election id; {election_id} is not primary"
                           + (f" for role {role!r}" if role else ""))

    def primaries(self) -> list[object]:
        """Streams that are primary in their role (PacketIn and digests go to the default role's)."""
        with self._lock:
            roles = {m.role for m in self._members.values()}
            return [self._primary(r).stream for r in roles]

    def stream_member(self, stream: object) -> Member | None:
        with self._lock:
            return self._members.get(stream)
