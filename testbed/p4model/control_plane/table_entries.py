"""Table entries, the default entry included, with their direct counters and meters.

INSERT of an existing entry is ALREADY_EXISTS; MODIFY or DELETE of a missing
one NOT_FOUND; a full table RESOURCE_EXHAUSTED.  The default entry takes
only MODIFY, and not on an indirect table or one with a const default action
(PERMISSION_DENIED, as PI).  A table with `const entries` refuses every
write with PERMISSION_DENIED (the P4Runtime specification's rule for
immutable tables).  An indirect table's entry names a member, a group or a
one-shot action set (action_profiles.py).
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.action_profiles import ActionProfiles
from testbed.p4model.control_plane.actions import Actions
from testbed.p4model.control_plane.context import Context
from testbed.p4model.control_plane.counters import counter_data
from testbed.p4model.control_plane.matches import match_key, match_protos
from testbed.p4model.control_plane.meters import (
    apply_meter_config, meter_config, new_meter_state, set_meter_proto)
from testbed.p4model.control_plane.p4info_index import (
    DELETE, INSERT, MODIFY, Index, Table, error, kind_name)


class TableEntries:
    """TableEntry writes and reads."""

    def __init__(self, ctx: Context, actions: Actions, profiles: ActionProfiles) -> None:
        self.ctx = ctx
        self.actions = actions
        self.profiles = profiles

    def write(self, kind: int, entry: p4runtime_pb2.TableEntry) -> None:
        table = Index.get(self.ctx.info.tables, entry.table_id, "table")
        runtime = self.ctx.runtime("tables", table.name)
        if entry.HasField("time_since_last_hit"):
            raise error("INVALID_ARGUMENT", "has_time_since_last_hit must not be set in "
                                            "WriteRequest")
        if entry.idle_timeout_ns:
            raise error("INVALID_ARGUMENT", f"table {table.name}: idle_timeout_ns must be set "
                                            f"to 0 for tables which do not support idle timeout")
        if entry.is_default_action:
            self._write_default(kind, table, runtime, entry)
            return
        if table.is_const:
            raise error("PERMISSION_DENIED", f"table {table.name} has const entries and cannot "
                                             f"be written")
        match = match_key(table, entry)
        existing = runtime.find(match, entry.priority)
        if kind == DELETE:
            if existing is None:
                raise error("NOT_FOUND", f"table {table.name}: Cannot find match entry")
            runtime.delete(match, entry.priority)
            self.profiles.forget_oneshot(table, existing.group_id)
            return
        if not entry.HasField("action"):
            raise error("INVALID_ARGUMENT", f"table {table.name}: 'action' field must be set")
        if kind == INSERT and existing is not None:
            raise error("ALREADY_EXISTS", f"table {table.name}: Match entry exists, use MODIFY "
                                          f"if you wish to change action")
        if kind == MODIFY and existing is None:
            raise error("NOT_FOUND", f"table {table.name}: Cannot find match entry")
        if kind == INSERT and len(runtime.entries()) >= table.size:
            raise error("RESOURCE_EXHAUSTED", f"table {table.name} is full ({table.size} "
                                              f"entries)")
        new = self._entry_from_proto(table, entry, match)
        self._direct_resources(table, runtime, entry, new)
        if entry.action.WhichOneof("type") == "action_profile_action_set":
            self.profiles.install_oneshot(table, entry.action.action_profile_action_set, new)
        if kind == INSERT:
            runtime.insert(new)
            return
        old_group = existing.group_id
        runtime.modify(new)
        if entry.HasField("counter_data"):
            existing.counter_packets = new.counter_packets
            existing.counter_bytes = new.counter_bytes
        self.profiles.forget_oneshot(table, old_group)

    def _write_default(self, kind, table: Table, runtime, entry) -> None:
        if kind != MODIFY:
            raise error("INVALID_ARGUMENT", f"table {table.name}: Cannot use "
                                            f"{kind_name(kind)} for "
                                            f"default entry")
        if len(entry.match):
            raise error("INVALID_ARGUMENT", f"table {table.name}: Non-empty key for default entry")
        if entry.priority:
            raise error("INVALID_ARGUMENT", f"table {table.name}: Non-zero priority for "
                                            f"default entry")
        if table.implementation_id:
            raise error("INVALID_ARGUMENT", f"table {table.name}: Cannot set / reset default "
                                            f"action for indirect table")
        if table.const_default_action_id:
            raise error("PERMISSION_DENIED", f"table {table.name}: Cannot set / reset default "
                                             f"action for a table which has a const default "
                                             f"action")
        if entry.HasField("counter_data") or entry.HasField("meter_config"):
            raise error("UNIMPLEMENTED", f"table {table.name}: direct resources of the default "
                                         f"entry are not supported")
        if not entry.HasField("action"):
            runtime.reset_default()
            return
        if entry.action.WhichOneof("type") != "action":
            raise error("INVALID_ARGUMENT", f"table {table.name}: Cannot provide indirect "
                                            f"action for direct table")
        self.actions.check_scope(table, entry.action.action.action_id, default=True)
        runtime.set_default(self.actions.call(entry.action.action, f"table {table.name}"))

    def _entry_from_proto(self, table: Table, entry, match: tuple):
        from testbed.p4model.runtime.tables import TableEntry

        action = entry.action
        which = action.WhichOneof("type")
        new = TableEntry(match=match, priority=entry.priority)
        if table.implementation_id:
            self._indirect_action(table, action, which, new)
            return new
        if which != "action":
            raise error("INVALID_ARGUMENT", f"table {table.name}: Cannot provide indirect "
                                            f"action for direct table")
        self.actions.check_scope(table, action.action.action_id, default=False)
        new.action = self.actions.call(action.action, f"table {table.name}")
        return new

    def _indirect_action(self, table: Table, action, which: str, new) -> None:
        """An indirect table's entry: a member, a group, or a one-shot set (checked here,
        installed by write())."""
        if which == "action":
            raise error("INVALID_ARGUMENT", f"table {table.name}: Cannot provide direct "
                                            f"action for indirect table")
        profile = self.ctx.info.action_profiles[table.implementation_id]
        if which == "action_profile_member_id":
            if action.action_profile_member_id not in self.profiles.members[profile.preamble.id]:
                raise error("INVALID_ARGUMENT", f"table {table.name}: Invalid member / "
                                                f"group id (no member "
                                                f"{action.action_profile_member_id})")
            new.member_id = action.action_profile_member_id
        elif which == "action_profile_group_id":
            if not profile.with_selector:
                raise error("INVALID_ARGUMENT", f"table {table.name}: action profile "
                                                f"{profile.preamble.name} has no selector, "
                                                f"so no groups")
            if action.action_profile_group_id not in self.profiles.groups[profile.preamble.id]:
                raise error("INVALID_ARGUMENT", f"table {table.name}: Invalid member / "
                                                f"group id (no group "
                                                f"{action.action_profile_group_id})")
            new.group_id = action.action_profile_group_id
        elif which == "action_profile_action_set":
            if not profile.with_selector:
                raise error("INVALID_ARGUMENT", f"table {table.name}: one-shot programming "
                                                f"needs an action selector")
            self.profiles.check_action_set(table, profile, action.action_profile_action_set)
        else:
            raise error("INVALID_ARGUMENT", f"table {table.name}: Invalid table action type")

    def _direct_resources(self, table: Table, runtime, entry, new) -> None:
        """Direct counter data and meter config carried by a table entry.
        On MODIFY the runtime table keeps the entry's counters and meter
        unless new ones are given (see write)."""
        if entry.HasField("counter_data"):
            if not table.direct_counter_id:
                raise error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct "
                                                f"counters")
            if entry.counter_data.packet_count < 0 or entry.counter_data.byte_count < 0:
                raise error("INVALID_ARGUMENT", f"table {table.name}: negative count")
            new.counter_packets = entry.counter_data.packet_count
            new.counter_bytes = entry.counter_data.byte_count
        if entry.HasField("meter_config"):
            if not table.direct_meter_id:
                raise error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct meters")
            config = meter_config(entry.meter_config)
            new.meter = new_meter_state(self.ctx, runtime)
            apply_meter_config(new.meter, config)

    def read(self, request: p4runtime_pb2.TableEntry) -> list:
        tables = self.ctx.info.selected(self.ctx.info.tables, request.table_id, "table")
        out = []
        for table in tables:
            runtime = self.ctx.runtime("tables", table.name)
            if request.is_default_action:
                out.append(self._default_entity(table, runtime))
                continue
            if len(request.match):
                match = match_key(table, request)
                found = runtime.find(match, request.priority)
                entries = [found] if found is not None else []
            else:
                entries = runtime.entries()
            for e in entries:
                entity = p4runtime_pb2.Entity()
                self._entry_proto(table, e, request, entity.table_entry)
                out.append(entity)
        return out

    def _default_entity(self, table: Table, runtime) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        te = entity.table_entry
        te.table_id = table.id
        te.is_default_action = True
        if not table.implementation_id:
            te.action.action.CopyFrom(self.actions.proto(runtime.default))
        return entity

    def _entry_proto(self, table: Table, e, request, te: p4runtime_pb2.TableEntry) -> None:
        te.table_id = table.id
        te.match.extend(match_protos(table, e.match))
        te.priority = e.priority
        if e.is_const:
            te.is_const = True
        if e.action is not None:
            te.action.action.CopyFrom(self.actions.proto(e.action))
        elif e.member_id is not None:
            te.action.action_profile_member_id = e.member_id
        elif e.group_id is not None:
            oneshot = self.profiles.oneshot.get((table.id, e.group_id))
            if oneshot is not None:
                te.action.action_profile_action_set.CopyFrom(oneshot)
            else:
                te.action.action_profile_group_id = e.group_id
        if request.HasField("counter_data") and table.direct_counter_id:
            counter_data(self.ctx.info, te.counter_data, table.direct_counter_id,
                         e.counter_packets, e.counter_bytes, direct=True)
        if request.HasField("meter_config") and table.direct_meter_id and e.meter is not None:
            config = e.meter.get_config()
            if config is not None:
                set_meter_proto(te.meter_config, config)
