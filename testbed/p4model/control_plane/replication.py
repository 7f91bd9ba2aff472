"""The packet replication engine: multicast groups and clone sessions.

Group 0 and session 0 are INVALID_ARGUMENT.  Group ids from 2**15 up are
OUT_OF_RANGE: PI keeps them for clone sessions.  Clone session ids above
511, class_of_service and duplicate replicas are refused by the PRE itself
(runtime/pre.py, which follows the bmv2 server).  Entries are kept here as
written, so a read returns them as the controller wrote them.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.context import Context
from testbed.p4model.control_plane.p4info_index import DELETE, INSERT, MODIFY, error

FIRST_RESERVED_GROUP = 1 << 15      # PI keeps these multicast groups for clone sessions


def replicas_of(replicas, what: str) -> list:
    """(instance, port) of each replica; a port is an int or a byte string of at most 4 bytes."""
    out, seen = [], set()
    for r in replicas:
        if r.WhichOneof("port_kind") == "port":
            if not r.port:
                raise error("INVALID_ARGUMENT", f"{what}: Port must not be the empty string")
            if len(r.port) > 4:
                raise error("UNIMPLEMENTED", f"{what}: only 4-byte ports are supported")
            port = int.from_bytes(r.port, "big")
        else:
            port = r.egress_port
        if (r.instance, port) in seen:
            raise error("INVALID_ARGUMENT", f"{what}: duplicate replica (instance "
                                            f"{r.instance}, port {port})")
        seen.add((r.instance, port))
        out.append((r.instance, port))
    return out


class Replication:
    """PacketReplicationEngineEntry writes and reads."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.mc_groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = {}
        self.clone_sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = {}

    def write(self, kind: int, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        which = entry.WhichOneof("type")
        pre = getattr(self.ctx.pipeline, "pre")
        if which == "multicast_group_entry":
            self._write_group(kind, pre, entry.multicast_group_entry)
        elif which == "clone_session_entry":
            self._write_session(kind, pre, entry.clone_session_entry)
        else:
            raise error("INVALID_ARGUMENT", "Invalid PRE operation")

    def _write_group(self, kind: int, pre, group: p4runtime_pb2.MulticastGroupEntry) -> None:
        gid = group.multicast_group_id
        if gid == 0:
            raise error("INVALID_ARGUMENT", "0 is not a valid group id")
        if gid >= FIRST_RESERVED_GROUP:
            raise error("OUT_OF_RANGE", f"multicast group id {gid} is too high (at most "
                                        f"{FIRST_RESERVED_GROUP - 1})")
        exists = gid in self.mc_groups
        if kind == DELETE:
            if not exists:
                raise error("NOT_FOUND", f"multicast group {gid} does not exist")
            pre.delete_group(gid)
            del self.mc_groups[gid]
            return
        if kind == INSERT and exists:
            raise error("ALREADY_EXISTS", f"multicast group {gid} already exists")
        if kind == MODIFY and not exists:
            raise error("NOT_FOUND", f"multicast group {gid} does not exist")
        replicas = replicas_of(group.replicas, f"multicast group {gid}")
        (pre.insert_group if kind == INSERT else pre.modify_group)(gid, replicas)
        stored = p4runtime_pb2.MulticastGroupEntry()
        stored.CopyFrom(group)
        self.mc_groups[gid] = stored

    def _write_session(self, kind: int, pre, session: p4runtime_pb2.CloneSessionEntry) -> None:
        sid = session.session_id
        if sid == 0:
            raise error("INVALID_ARGUMENT", "0 is not a valid session id")
        exists = sid in self.clone_sessions
        if kind == DELETE:
            if not exists:
                raise error("NOT_FOUND", f"clone session {sid} does not exist")
            pre.delete_clone_session(sid)
            del self.clone_sessions[sid]
            return
        if kind == INSERT and exists:
            raise error("ALREADY_EXISTS", f"clone session {sid} already exists")
        if kind == MODIFY and not exists:
            raise error("NOT_FOUND", f"clone session {sid} does not exist")
        if session.packet_length_bytes < 0:
            raise error("INVALID_ARGUMENT", f"clone session {sid}: negative "
                                            f"packet_length_bytes")
        replicas = replicas_of(session.replicas, f"clone session {sid}")
        (pre.insert_clone_session if kind == INSERT else pre.modify_clone_session)(
            sid, replicas, session.class_of_service, session.packet_length_bytes)
        stored = p4runtime_pb2.CloneSessionEntry()
        stored.CopyFrom(session)
        self.clone_sessions[sid] = stored

    def read(self, request: p4runtime_pb2.PacketReplicationEngineEntry) -> list:
        which = request.WhichOneof("type")
        out = []
        if which == "multicast_group_entry":
            gid = request.multicast_group_entry.multicast_group_id
            if gid >= FIRST_RESERVED_GROUP:
                raise error("OUT_OF_RANGE", f"multicast group id {gid} is too high")
            if gid and gid not in self.mc_groups:
                raise error("NOT_FOUND", f"multicast group {gid} does not exist")
            for key in sorted(self.mc_groups) if not gid else [gid]:
                entity = p4runtime_pb2.Entity()
                entity.packet_replication_engine_entry.multicast_group_entry.CopyFrom(
                    self.mc_groups[key])
                out.append(entity)
        elif which == "clone_session_entry":
            sid = request.clone_session_entry.session_id
            if sid and sid not in self.clone_sessions:
                raise error("NOT_FOUND", f"clone session {sid} does not exist")
            for key in sorted(self.clone_sessions) if not sid else [sid]:
                entity = p4runtime_pb2.Entity()
                entity.packet_replication_engine_entry.clone_session_entry.CopyFrom(
                    self.clone_sessions[key])
                out.append(entity)
        else:
            raise error("INVALID_ARGUMENT", "Invalid PRE operation")
        return out
