"""Packet replication engine: multicast groups and clone sessions.

bmv2's simple PRE keeps, per multicast group, a list of nodes in the order
they were associated with the group; each node has one replication id
(rid) and a set of ports.  Replication walks the nodes in that order and,
inside a node, the ports in ascending order, emitting one copy per
(rid, port).  Two ways in:

* the STF/CLI way (`mc_mgrp_create`, `mc_node_create`,
  `mc_node_associate`): `create_group`, `create_node`, `associate_node`,
  ... keep bmv2's node order exactly;
* the P4Runtime way (MulticastGroupEntry with (rid, port) replicas):
  `insert_group` / `modify_group` / `set_group` make one node per distinct
  rid, in order of first appearance of the rid (bmv2's P4Runtime server
  groups replicas by rid the same way; the order of its nodes is that of
  an unordered map, so no program can rely on a cross-rid order).

Clone sessions (P4Runtime CloneSessionEntry) hold their replicas
(instance, port), class_of_service and packet_length_bytes (0: no
truncation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from testbed.p4model.errors import ControlPlaneError

MAX_GROUP_ID = 0xFFFF        # standard_metadata.mcast_grp is 16 bits
MAX_RID = 0xFFFF             # standard_metadata.egress_rid is 16 bits
MAX_PORT = 511               # egress_port is 9 bits
MAX_MIRROR_ID = 32767        # bmv2 simple_switch mirroring session ids
P4RT_CLONE_IDS = range(1, 512)   # what bmv2's P4Runtime server accepts


def _err(code: str, message: str) -> ControlPlaneError:
    return ControlPlaneError(code, message)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class CloneSession:
    session_id: int
    replicas: tuple            # ((instance, port), ...) in replication order
    class_of_service: int = 0
    packet_length_bytes: int = 0


class _Node:
    __slots__ = ("rid", "ports", "group")

    def __init__(self, rid: int, ports) -> None:
        self.rid = rid
        self.ports = tuple(sorted(set(ports)))
        self.group: Optional[int] = None


def _check_port(port) -> None:
    if not _is_int(port) or not 0 <= port <= MAX_PORT:
        raise _err("INVALID_ARGUMENT", f"egress port {port!r} not in 0..{MAX_PORT}")


def _check_rid(rid) -> None:
    if not _is_int(rid) or not 0 <= rid <= MAX_RID:
        raise _err("INVALID_ARGUMENT", f"replication id {rid!r} not in 0..{MAX_RID}")


def _nodes_from_replicas(replicas) -> list:
    """(rid, port) pairs -> [(rid, [ports])] per rid in first-appearance
    order; a repeated (rid, port) is an error as in P4Runtime."""
    by_rid: dict = {}
    seen = set()
    for item in replicas:
        try:
            rid, port = item
        except (TypeError, ValueError):
            raise _err("INVALID_ARGUMENT", f"replica {item!r} is not (rid, port)") from None
        _check_rid(rid)
        _check_port(port)
        if (rid, port) in seen:
            raise _err("INVALID_ARGUMENT", f"duplicate replica (rid {rid}, port {port})")
        seen.add((rid, port))
        by_rid.setdefault(rid, []).append(port)
    return list(by_rid.items())


class PacketReplicationEngine:
    """Multicast groups and clone sessions of one switch."""

    def __init__(self) -> None:
        self._groups: dict = {}      # group id -> [node handle, ...]
        self._nodes: dict = {}       # handle -> _Node
        self._next_handle = 0
        self._free_handles: list = []
        self._cache: dict = {}       # group id -> tuple of (rid, port)
        self._sessions: dict = {}    # session id -> CloneSession
        self.on_change = getattr(self, "on_change", None)   # called after a group or session changes (kept by reset)

    def _changed(self, group_id) -> None:
        """Group `group_id` changed: its cached copies go, and on_change (the native engine's copy
        of the groups) hears of it."""
        self._cache.pop(group_id, None)
        if self.on_change is not None:
            self.on_change()

    # ------------------------------------------------------ replication

    def group(self, group_id: int) -> list:
        """The copies of a group as (rid, port), in replication order; an
        unknown group gives no copies (bmv2 logs and replicates nothing)."""
        copies = self._cache.get(group_id)
        if copies is None:
            if group_id not in self._groups:
                return []
            copies = tuple((node.rid, port)
                           for handle in self._groups[group_id]
                           for node in (self._nodes[handle],)
                           for port in node.ports)
            self._cache[group_id] = copies
        return list(copies)

    replicate = group

    def has_group(self, group_id: int) -> bool:
        return group_id in self._groups

    def group_ids(self) -> list:
        return sorted(self._groups)

    # ------------------------------------------------- P4Runtime groups

    def _check_group_id(self, group_id) -> None:
        if not _is_int(group_id) or group_id == 0:
            raise _err("INVALID_ARGUMENT", f"multicast group id {group_id!r} is not valid")
        if not 0 < group_id <= MAX_GROUP_ID:
            raise _err("OUT_OF_RANGE", f"multicast group id {group_id} not in 1..{MAX_GROUP_ID}")

    def insert_group(self, group_id: int, replicas) -> None:
        self._check_group_id(group_id)
        if group_id in self._groups:
            raise _err("ALREADY_EXISTS", f"multicast group {group_id} already exists")
        self._set_nodes(group_id, _nodes_from_replicas(replicas))

    def modify_group(self, group_id: int, replicas) -> None:
        self._check_group_id(group_id)
        if group_id not in self._groups:
            raise _err("NOT_FOUND", f"multicast group {group_id} does not exist")
        self._set_nodes(group_id, _nodes_from_replicas(replicas))

    def set_group(self, group_id: int, replicas) -> None:
        """Create or replace a group from (rid, port) replicas."""
        self._check_group_id(group_id)
        self._set_nodes(group_id, _nodes_from_replicas(replicas))

    def delete_group(self, group_id: int) -> None:
        self._check_group_id(group_id)
        if group_id not in self._groups:
            raise _err("NOT_FOUND", f"multicast group {group_id} does not exist")
        for handle in self._groups.pop(group_id):
            self._release(handle)
        self._changed(group_id)

    def group_replicas(self, group_id: int) -> list:
        """P4Runtime read-back: (rid, port) per replica (== group())."""
        if group_id not in self._groups:
            raise _err("NOT_FOUND", f"multicast group {group_id} does not exist")
        return self.group(group_id)

    def _set_nodes(self, group_id: int, nodes: list) -> None:
        for handle in self._groups.get(group_id, ()):
            self._release(handle)
        handles = []
        for rid, ports in nodes:
            handle = self._allocate(rid, ports)
            self._nodes[handle].group = group_id
            handles.append(handle)
        self._groups[group_id] = handles
        self._changed(group_id)

    # ------------------------------------------- bmv2 CLI / STF node API

    def create_group(self, group_id: int) -> None:
        """mc_mgrp_create: an empty group (replaced if it exists, as the
        bmv2 CLI does)."""
        if not _is_int(group_id) or not 0 <= group_id <= MAX_GROUP_ID:
            raise _err("INVALID_ARGUMENT", f"multicast group id {group_id!r} not valid")
        for handle in self._groups.get(group_id, ()):
            self._nodes[handle].group = None
        self._groups[group_id] = []
        self._changed(group_id)

    def create_node(self, rid: int, ports) -> int:
        """mc_node_create: a node (rid + port set); returns its handle."""
        _check_rid(rid)
        ports = list(ports)
        for port in ports:
            _check_port(port)
        return self._allocate(rid, ports)

    def update_node(self, handle: int, ports) -> None:
        node = self._node(handle)
        ports = list(ports)
        for port in ports:
            _check_port(port)
        node.ports = tuple(sorted(set(ports)))
        if node.group is not None:
            self._changed(node.group)

    def associate_node(self, group_id: int, handle: int) -> None:
        node = self._node(handle)
        if group_id not in self._groups:
            raise _err("NOT_FOUND", f"multicast group {group_id} does not exist")
        if node.group is not None:
            raise _err("FAILED_PRECONDITION", f"node {handle} is already associated")
        node.group = group_id
        self._groups[group_id].append(handle)
        self._changed(group_id)

    def dissociate_node(self, group_id: int, handle: int) -> None:
        node = self._node(handle)
        if node.group != group_id or group_id not in self._groups:
            raise _err("FAILED_PRECONDITION",
                       f"node {handle} is not associated with group {group_id}")
        self._groups[group_id].remove(handle)
        node.group = None
        self._changed(group_id)

    def destroy_node(self, handle: int) -> None:
        node = self._node(handle)
        if node.group is not None and node.group in self._groups:
            self._groups[node.group].remove(handle)
            self._changed(node.group)
        self._release(handle)

    def _node(self, handle) -> _Node:
        node = self._nodes.get(handle)
        if node is None:
            raise _err("NOT_FOUND", f"no multicast node with handle {handle!r}")
        return node

    def _allocate(self, rid: int, ports) -> int:
        if self._free_handles:
            handle = min(self._free_handles)
            self._free_handles.remove(handle)
        else:
            handle = self._next_handle
            self._next_handle += 1
        self._nodes[handle] = _Node(rid, ports)
        return handle

    def _release(self, handle: int) -> None:
        if self._nodes.pop(handle, None) is not None:
            self._free_handles.append(handle)

    # --------------------------------------------------- clone sessions

    def set_clone_session(self, session_id: int, replicas, class_of_service: int = 0,
                          packet_length_bytes: int = 0) -> None:
        """Create or replace a session (the bmv2 CLI `mirroring_add` way);
        replicas are (instance, port)."""
        if not _is_int(session_id) or not 0 <= session_id <= MAX_MIRROR_ID:
            raise _err("OUT_OF_RANGE", f"clone session id {session_id!r} not in 0..{MAX_MIRROR_ID}")
        self._sessions[session_id] = self._make_session(
            session_id, replicas, class_of_service, packet_length_bytes)
        self._sessions_changed()

    def insert_clone_session(self, session_id: int, replicas, class_of_service: int = 0,
                             packet_length_bytes: int = 0) -> None:
        """P4Runtime INSERT of a CloneSessionEntry, with bmv2's server's
        rules: ids 1..511, class_of_service unsupported."""
        self._check_p4rt_session(session_id, class_of_service)
        if session_id in self._sessions:
            raise _err("ALREADY_EXISTS", f"clone session {session_id} already exists")
        self._sessions[session_id] = self._make_session(
            session_id, replicas, class_of_service, packet_length_bytes)
        self._sessions_changed()

    def modify_clone_session(self, session_id: int, replicas, class_of_service: int = 0,
                             packet_length_bytes: int = 0) -> None:
        self._check_p4rt_session(session_id, class_of_service)
        if session_id not in self._sessions:
            raise _err("NOT_FOUND", f"clone session {session_id} does not exist")
        self._sessions[session_id] = self._make_session(
            session_id, replicas, class_of_service, packet_length_bytes)
        self._sessions_changed()

    def delete_clone_session(self, session_id: int) -> None:
        if session_id not in self._sessions:
            raise _err("NOT_FOUND", f"clone session {session_id!r} does not exist")
        del self._sessions[session_id]
        self._sessions_changed()

    def _sessions_changed(self) -> None:
        """A clone session changed: on_change (the native engine's copy of the sessions) hears of it."""
        if self.on_change is not None:
            self.on_change()

    def clone_session(self, session_id: int) -> Optional[CloneSession]:
        return self._sessions.get(session_id)

    def clone_session_ids(self) -> list:
        return sorted(self._sessions)

    @staticmethod
    def _check_p4rt_session(session_id, class_of_service) -> None:
        if not _is_int(session_id) or session_id not in P4RT_CLONE_IDS:
            raise _err("OUT_OF_RANGE", f"clone session id {session_id!r} not in 1..511")
        if class_of_service:
            raise _err("UNIMPLEMENTED", "class_of_service for clone sessions is not supported")

    @staticmethod
    def _make_session(session_id, replicas, class_of_service, packet_length_bytes) -> CloneSession:
        nodes = _nodes_from_replicas(replicas)
        if not _is_int(class_of_service) or class_of_service < 0:
            raise _err("INVALID_ARGUMENT", f"bad class_of_service {class_of_service!r}")
        if not _is_int(packet_length_bytes) or packet_length_bytes < 0:
            raise _err("INVALID_ARGUMENT", f"bad packet_length_bytes {packet_length_bytes!r}")
        ordered = tuple((rid, port) for rid, ports in nodes for port in sorted(ports))
        return CloneSession(session_id, ordered, class_of_service, packet_length_bytes)

    # --------------------------------------------------------------- all

    def reset(self) -> None:
        self.__init__()
        if self.on_change is not None:
            self.on_change()
