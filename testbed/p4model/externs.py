"""Stateful externs of v1model, with bmv2 simple_switch semantics.

RegisterArray, CounterArray, MeterArray (an array of meters.MeterState),
ActionProfile (members, and groups when it is an action selector),
DigestQueue and RandomSource.
They hold no reference to the IR: the compiled program calls them per
packet, the control plane configures them and reads them back.
"""

from __future__ import annotations

import random
from typing import Optional

from testbed.p4model.clock import Clock, MonotonicClock
from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.meters import GREEN, MeterState
from testbed.p4model.runtime.tables import ActionCall, TableEntry, check_action_args


def _err(code: str, message: str) -> ControlPlaneError:
    return ControlPlaneError(code, message)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_size(name: str, size) -> None:
    if not _is_int(size) or size < 0:
        raise ValueError(f"{name}: bad size {size!r}")


# --------------------------------------------------------------------------
# Registers


class RegisterArray:
    """register<T>(size).  Values are kept in the unsigned representation
    of `width` bits; `signed` only tells readers how to interpret them."""

    def __init__(self, name: str, size: int, width: int, signed: bool = False) -> None:
        _check_size(name, size)
        self.name = name
        self.size = size
        self.width = width
        self.signed = signed
        self._mask = (1 << width) - 1
        self.values = [0] * size

    def read(self, index: int) -> Optional[int]:
        """The stored value, or None when `index` is out of range (bmv2
        then leaves the destination unchanged)."""
        if 0 <= index < self.size:
            return self.values[index]
        return None

    def write(self, index: int, value: int) -> None:
        """Store `value` wrapped to the width; out of range is ignored."""
        if 0 <= index < self.size:
            self.values[index] = value & self._mask

    # control plane
    def cp_read(self, index: int) -> int:
        self._cp_index(index)
        return self.values[index]

    def cp_write(self, index: int, value: int) -> None:
        self._cp_index(index)
        if not _is_int(value) or value < 0 or value >> self.width:
            raise _err("INVALID_ARGUMENT",
                       f"register {self.name}: value {value!r} does not fit {self.width} bits")
        self.values[index] = value

    def reset(self) -> None:
        self.values = [0] * self.size

    def _cp_index(self, index) -> None:
        if not _is_int(index) or not 0 <= index < self.size:
            raise _err("OUT_OF_RANGE",
                       f"register {self.name}: index {index!r} not in 0..{self.size - 1}")


# --------------------------------------------------------------------------
# Counters


class CounterArray:
    """counter(size, kind): packet and/or byte counts per index."""

    def __init__(self, name: str, size: int, kind: str) -> None:
        _check_size(name, size)
        if kind not in ("packets", "bytes", "packets_and_bytes"):
            raise ValueError(f"counter {name}: bad kind {kind!r}")
        self.name = name
        self.size = size
        self.kind = kind
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, packet_length_bytes: int) -> None:
        """Count one packet of the given (ingress) length; out of range is
        ignored.  Both values are kept whatever the kind; the control plane
        reports the ones the kind names."""
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += packet_length_bytes

    def read(self, index: int) -> tuple:
        self._cp_index(index)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int = 0, nbytes: int = 0) -> None:
        self._cp_index(index)
        for v in (packets, nbytes):
            if not _is_int(v) or v < 0:
                raise _err("INVALID_ARGUMENT", f"counter {self.name}: bad value {v!r}")
        self.packets[index] = packets
        self.bytes[index] = nbytes

    def reset(self) -> None:
        self.packets = [0] * self.size
        self.bytes = [0] * self.size

    def _cp_index(self, index) -> None:
        if not _is_int(index) or not 0 <= index < self.size:
            raise _err("OUT_OF_RANGE",
                       f"counter {self.name}: index {index!r} not in 0..{self.size - 1}")


# --------------------------------------------------------------------------
# Meters


class MeterArray:
    """meter(size, kind): an array of MeterState sharing one clock."""

    def __init__(self, name: str, size: int, kind: str, clock: Optional[Clock] = None) -> None:
        _check_size(name, size)
        self.name = name
        self.size = size
        self.kind = kind
        self.clock = clock if clock is not None else MonotonicClock()
        self.cells = [MeterState(kind, self.clock) for _ in range(size)]

    def execute(self, index: int, packet_length_bytes: int) -> int:
        """Colour for one packet: 0 GREEN, 1 YELLOW, 2 RED.  An index out of
        range gives GREEN (bmv2 would not check; a model must not crash)."""
        if 0 <= index < self.size:
            return self.cells[index].execute(packet_length_bytes)
        return GREEN

    def set_config(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        self._cp_index(index)
        self.cells[index].set_config(cir, cburst, pir, pburst)

    def get_config(self, index: int) -> Optional[tuple]:
        self._cp_index(index)
        return self.cells[index].get_config()

    def reset_config(self, index: int) -> None:
        self._cp_index(index)
        self.cells[index].reset_config()

    def _cp_index(self, index) -> None:
        if not _is_int(index) or not 0 <= index < self.size:
            raise _err("OUT_OF_RANGE",
                       f"meter {self.name}: index {index!r} not in 0..{self.size - 1}")


# --------------------------------------------------------------------------
# Action profiles and selectors


class ActionProfile:
    """action_profile / action_selector: members (an action call each) and,
    with a selector, groups of members.

    Selection as bmv2 does it: the members of a group in member-handle
    order (here: ascending member id), index = selector hash mod the
    number of members.  Members and groups referenced by table entries
    cannot be deleted (FAILED_PRECONDITION), nor members that are in a
    group."""

    def __init__(self, name: str, size: int, with_selector: bool,
                 max_group_size: int = 0, action_names=None,
                 action_params: Optional[dict] = None) -> None:
        _check_size(name, size)
        self.name = name
        self.size = size
        self.with_selector = with_selector
        self.max_group_size = max_group_size
        self.action_names = frozenset(action_names) if action_names is not None else None
        self.action_params = action_params
        self.members: dict = {}        # member id -> ActionCall
        self.groups: dict = {}         # group id -> sorted tuple of member ids
        self.group_max_size: dict = {}  # group id -> max_size given at insert
        self._member_refs: dict = {}   # member id -> entries + groups using it
        self._group_refs: dict = {}    # group id -> entries using it

    # members
    def has_member(self, member_id) -> bool:
        return member_id in self.members

    def _check_call(self, call) -> None:
        if not isinstance(call, ActionCall):
            raise _err("INVALID_ARGUMENT", f"action profile {self.name}: not an action call")
        if self.action_names is not None and call.action not in self.action_names:
            raise _err("INVALID_ARGUMENT",
                       f"action profile {self.name}: action {call.action} not allowed")
        check_action_args(f"action profile {self.name}", call, self.action_params)

    def _check_id(self, what: str, ident) -> None:
        if not _is_int(ident) or ident < 0 or ident >= 1 << 32:
            raise _err("INVALID_ARGUMENT", f"action profile {self.name}: bad {what} id {ident!r}")

    def insert_member(self, member_id: int, call: ActionCall) -> None:
        self._check_id("member", member_id)
        if member_id in self.members:
            raise _err("ALREADY_EXISTS", f"action profile {self.name}: member {member_id} exists")
        self._check_call(call)
        if len(self.members) >= self.size:
            raise _err("RESOURCE_EXHAUSTED",
                       f"action profile {self.name} is full ({self.size} members)")
        self.members[member_id] = call
        self._member_refs[member_id] = 0

    def modify_member(self, member_id: int, call: ActionCall) -> None:
        if member_id not in self.members:
            raise _err("NOT_FOUND", f"action profile {self.name}: no member {member_id}")
        self._check_call(call)
        self.members[member_id] = call

    def delete_member(self, member_id: int) -> None:
        if member_id not in self.members:
            raise _err("NOT_FOUND", f"action profile {self.name}: no member {member_id}")
        if self._member_refs.get(member_id):
            raise _err("FAILED_PRECONDITION",
                       f"action profile {self.name}: member {member_id} is still in use")
        del self.members[member_id]
        del self._member_refs[member_id]

    # groups
    def has_group(self, group_id) -> bool:
        return group_id in self.groups

    def _check_group(self, group_id, member_ids, max_size) -> tuple:
        if not self.with_selector:
            raise _err("INVALID_ARGUMENT",
                       f"action profile {self.name} has no selector: no groups")
        self._check_id("group", group_id)
        if not _is_int(max_size) or max_size < 0:
            raise _err("INVALID_ARGUMENT", f"action profile {self.name}: bad max_size {max_size!r}")
        if self.max_group_size and max_size > self.max_group_size:
            raise _err("INVALID_ARGUMENT",
                       f"action profile {self.name}: group max_size {max_size} exceeds "
                       f"the profile's max group size {self.max_group_size}")
        ids = list(member_ids)
        if len(set(ids)) != len(ids):
            raise _err("INVALID_ARGUMENT",
                       f"action profile {self.name}: duplicate member in group {group_id}")
        for m in ids:
            if m not in self.members:
                raise _err("NOT_FOUND", f"action profile {self.name}: no member {m}")
        limit = max_size or self.max_group_size
        if limit and len(ids) > limit:
            raise _err("RESOURCE_EXHAUSTED",
                       f"action profile {self.name}: group {group_id} has {len(ids)} "
                       f"members, more than its maximum {limit}")
        return tuple(sorted(ids))

    def insert_group(self, group_id: int, member_ids, max_size: int = 0) -> None:
        if _is_int(group_id) and group_id in self.groups:
            raise _err("ALREADY_EXISTS", f"action profile {self.name}: group {group_id} exists")
        ids = self._check_group(group_id, member_ids, max_size)
        if len(self.groups) >= self.size:
            raise _err("RESOURCE_EXHAUSTED",
                       f"action profile {self.name} is full ({self.size} groups)")
        self.groups[group_id] = ids
        self.group_max_size[group_id] = max_size
        self._group_refs[group_id] = 0
        for m in ids:
            self._member_refs[m] += 1

    def modify_group(self, group_id: int, member_ids, max_size: Optional[int] = None) -> None:
        if group_id not in self.groups:
            raise _err("NOT_FOUND", f"action profile {self.name}: no group {group_id}")
        if max_size is None:
            max_size = self.group_max_size[group_id]
        ids = self._check_group(group_id, member_ids, max_size)
        for m in self.groups[group_id]:
            self._member_refs[m] -= 1
        for m in ids:
            self._member_refs[m] += 1
        self.groups[group_id] = ids
        self.group_max_size[group_id] = max_size

    def delete_group(self, group_id: int) -> None:
        if group_id not in self.groups:
            raise _err("NOT_FOUND", f"action profile {self.name}: no group {group_id}")
        if self._group_refs.get(group_id):
            raise _err("FAILED_PRECONDITION",
                       f"action profile {self.name}: group {group_id} is still in use")
        for m in self.groups.pop(group_id):
            self._member_refs[m] -= 1
        del self.group_max_size[group_id]
        del self._group_refs[group_id]

    # references from table entries (kept by Table)
    def ref_member(self, member_id: int, delta: int) -> None:
        if member_id in self._member_refs:
            self._member_refs[member_id] += delta

    def ref_group(self, group_id: int, delta: int) -> None:
        if group_id in self._group_refs:
            self._group_refs[group_id] += delta

    # data plane
    def resolve(self, entry: TableEntry, selector_hash: Optional[int]) -> Optional[ActionCall]:
        """The action an indirect entry runs.  For a group: its members in
        ascending id order, [selector_hash mod n].  An empty group gives
        None (the pipeline then treats the lookup as a miss)."""
        member_id = entry.member_id
        if member_id is None:
            ids = self.groups.get(entry.group_id)
            if not ids:
                return None
            member_id = ids[(selector_hash or 0) % len(ids)]
        return self.members.get(member_id)

    def clear(self) -> None:
        self.members.clear()
        self.groups.clear()
        self.group_max_size.clear()
        self._member_refs.clear()
        self._group_refs.clear()


# --------------------------------------------------------------------------
# Digests and random numbers


class DigestQueue:
    """Digests the data plane sent, waiting for the control plane.  Each
    item is (digest name, values tuple); drain() hands them over in order.
    Bounded so a program digesting every packet cannot eat memory: the
    oldest items are dropped and counted."""

    def __init__(self, capacity: int = 65536) -> None:
        self.capacity = capacity
        self._items: list = []
        self.dropped = 0

    def push(self, name: str, values: tuple) -> None:
        self._items.append((name, tuple(values)))
        if len(self._items) > self.capacity:
            excess = len(self._items) - self.capacity
            del self._items[:excess]
            self.dropped += excess

    def drain(self) -> list:
        items, self._items = self._items, []
        return items

    def __len__(self) -> int:
        return len(self._items)


class RandomSource:
    """v1model random(result, lo, hi): uniform in [lo, hi] inclusive, as
    bmv2.  Seeded for reproducible runs; lo > hi gives lo."""

    def __init__(self, seed: Optional[int] = None) -> None:
        self._rng = random.Random(seed)

    def uniform(self, lo: int, hi: int) -> int:
        if hi <= lo:
            return lo
        return self._rng.randint(lo, hi)
