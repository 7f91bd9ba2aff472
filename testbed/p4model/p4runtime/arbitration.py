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

Election id 0 (P4Runtime spec, "Unset Election ID"): a stream whose
arbitration leaves election_id unset joins as a backup that never becomes
primary (election id None here), and is told so with NOT_FOUND while its
group has no primary.  An election id set to {high: 0, low: 0} is refused
with INVALID_ARGUMENT: the spec would take it as the lowest id, but a zero
is what a client that forgot to pick an id sends, and a switch only its
owner programs takes orders from a client that chose its id.  A Write or
pipeline change carrying an unset or zero id is never the primary's, so it
gets PERMISSION_DENIED.

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
    election_id: tuple[int, int] | None  # None: unset, a backup that never becomes primary


ZERO = (0, 0)


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
        group = [m for m in self._group(role) if m.election_id is not None]
        return max(group, key=lambda m: m.election_id) if group else None

    def join(self, stream: object, device_id: int, role: str, election_id: tuple[int, int] | None) -> list:
        """Register/refresh a stream; returns [(stream, primary_id, is_primary)] to notify
        (always the caller, plus the whole group when the primary changed). primary_id is None
        while the group has no primary (only streams with an unset election id)."""
        if device_id != self.device_id:
            raise RpcError("NOT_FOUND", f"this switch is device {self.device_id}, not {device_id}")
        if election_id == ZERO:
            raise RpcError("INVALID_ARGUMENT", "election id 0 is refused: choose an election id above 0 "
                                               "(or leave it unset to stay a backup)")
        with self._lock:
            existing = self._members.get(stream)
            if existing is not None and existing.role != role:
                raise RpcError("INVALID_ARGUMENT", "a stream cannot change its role; open a new stream")
            for m in self._group(role):
                if m.stream is not stream and election_id is not None and m.election_id == election_id:
                    raise RpcError("INVALID_ARGUMENT",
                                   f"election id {election_id} is already used by another controller")
            before = self._primary(role)
            self._members[stream] = Member(stream, device_id, role, election_id)
            after = self._primary(role)
            if after is None:  # only unset ids in the group: nobody is primary
                return [(stream, None, False)]
            changed = before is None or before.stream is not after.stream or before.election_id != after.election_id
            targets = self._group(role) if changed else [self._members[stream]]
            return [(m.stream, after.election_id, m is after) for m in targets]

    def leave(self, stream: object) -> list:
        """Forget a stream; returns the notifications to send if the primary changed."""
        with self._lock:
            member = self._members.pop(stream, None)
            if member is None:
                return []
            if member.election_id is None:
                return []
            before_was_primary = all(m.election_id is None or m.election_id < member.election_id
                                     for m in self._group(member.role))
            if not before_was_primary:
                return []
            after = self._primary(member.role)
            if after is None:
                return []
            return [(m.stream, after.election_id, m is after) for m in self._group(member.role)]

    def is_primary(self, role: str, election_id: tuple[int, int] | None) -> bool:
        if election_id is None or election_id == ZERO:
            return False
        with self._lock:
            p = self._primary(role)
            return p is not None and p.election_id == election_id

    def check_primary(self, role: str, election_id: tuple[int, int] | None, what: str) -> None:
        if election_id is None or election_id == ZERO:
            raise RpcError("PERMISSION_DENIED", f"{what} carries no election id (or 0), which is never primary")
        if not self.is_primary(role, election_id):
            raise RpcError("PERMISSION_DENIED",
                           f"{what} needs the primary controller's election id; {election_id} is not primary"
                           + (f" for role {role!r}" if role else ""))

    def primaries(self) -> list[object]:
        """Streams that are primary in their role (PacketIn and digests go to the default role's)."""
        with self._lock:
            roles = {m.role for m in self._members.values()}
            return [p.stream for p in map(self._primary, roles) if p is not None]

    def stream_member(self, stream: object) -> Member | None:
        with self._lock:
            return self._members.get(stream)
