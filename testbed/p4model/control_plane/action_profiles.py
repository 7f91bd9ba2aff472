"""Action profiles: members and groups, and one-shot action sets.

A profile is programmed either with members and groups the controller writes
or with one-shot action sets in table entries, never both (PI's rule).  A
one-shot set becomes a hidden group of hidden members per entry and reads
back as the set.  Only weight 1 exists (bmv2 keeps a member at most once per
group): other weights are UNIMPLEMENTED.  A member or group still in use
cannot be deleted (FAILED_PRECONDITION).  Members and groups are kept here
as written, so reads return them as the controller wrote them.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.actions import Actions
from testbed.p4model.control_plane.context import Context
from testbed.p4model.control_plane.p4info_index import DELETE, INSERT, MODIFY, Index, Table, error


def check_weight(weight: int, where: str) -> None:
    """bmv2 keeps a member at most once per group, so only weight 1 exists."""
    if weight <= 0:
        raise error("INVALID_ARGUMENT", f"{where}: weight {weight}; weights must be positive")
    if weight != 1:
        raise error("UNIMPLEMENTED", f"{where}: weight {weight}; this target supports only "
                                     f"weight 1 (each member at most once per group)")


class ActionProfiles:
    """ActionProfileMember and ActionProfileGroup writes and reads, and the
    hidden members and groups of one-shot table entries."""

    def __init__(self, ctx: Context, actions: Actions) -> None:
        self.ctx = ctx
        self.actions = actions
        info = ctx.info
        self.members: dict[int, dict[int, p4runtime_pb2.ActionProfileMember]] = {
            ap: {} for ap in info.action_profiles}
        self.groups: dict[int, dict[int, p4runtime_pb2.ActionProfileGroup]] = {
            ap: {} for ap in info.action_profiles}
        self.oneshot: dict[tuple, p4runtime_pb2.ActionProfileActionSet] = {}   # (table, gid)
        self._next_hidden_id = 0            # ids of one-shot members and groups
        self._mode: dict[int, str] = {}     # profile id -> 'member/group' | 'one-shot'

    # -- plumbing ------------------------------------------------------------------

    def _profile(self, profile_id: int):
        profile = Index.get(self.ctx.info.action_profiles, profile_id, "action profile")
        return profile, self.ctx.runtime("action_profiles", profile.preamble.name)

    def _tables(self, profile) -> list:
        return [self.ctx.info.tables[t] for t in profile.table_ids if t in self.ctx.info.tables]

    def _check_mode(self, profile, mode: str) -> None:
        """PI runs an action profile either with members/groups written by the
        controller or with one-shot action sets, never both."""
        current = self._mode.get(profile.preamble.id)
        if current is not None and current != mode:
            raise error("INVALID_ARGUMENT", f"action profile {profile.preamble.name} is "
                                            f"programmed with {current} writes; it cannot also "
                                            f"take {mode} ones")

    # -- one-shot action sets --------------------------------------------------------

    def check_action_set(self, table: Table, profile, action_set) -> None:
        """Refuse a one-shot set the profile cannot take, before anything changes."""
        self._check_mode(profile, "one-shot")
        if not len(action_set.action_profile_actions):
            raise error("INVALID_ARGUMENT", f"table {table.name}: empty action profile action set")
        for apa in action_set.action_profile_actions:
            check_weight(apa.weight, f"table {table.name}")
            if apa.WhichOneof("watch_kind") is not None:
                raise error("UNIMPLEMENTED", f"table {table.name}: watch ports are not supported")
            self.actions.check_scope(table, apa.action.action_id, default=False)
            self.actions.call(apa.action, f"table {table.name}")
        count = len(action_set.action_profile_actions)
        if profile.max_group_size and count > profile.max_group_size:
            raise error("RESOURCE_EXHAUSTED", f"table {table.name}: one-shot group of {count} "
                                              f"exceeds max_group_size {profile.max_group_size}")

    def install_oneshot(self, table: Table, action_set, new) -> None:
        """Create the hidden members and group of a (validated) one-shot entry."""
        profile = self.ctx.info.action_profiles[table.implementation_id]
        runtime = self.ctx.runtime("action_profiles", profile.preamble.name)
        member_ids = []
        for apa in action_set.action_profile_actions:
            member_id = self._hidden_id()
            runtime.insert_member(member_id, self.actions.call(apa.action, f"table {table.name}"))
            member_ids.append(member_id)
        group_id = self._hidden_id()
        runtime.insert_group(group_id, member_ids, 0)
        new.group_id = group_id
        stored = p4runtime_pb2.ActionProfileActionSet()
        stored.CopyFrom(action_set)
        for apa in stored.action_profile_actions:
            self.actions.canonical(apa.action)
        self.oneshot[(table.id, group_id)] = stored
        self._mode[profile.preamble.id] = "one-shot"

    def forget_oneshot(self, table: Table, group_id) -> None:
        """Remove the hidden group (and its members) an entry no longer uses."""
        if group_id is None or (table.id, group_id) not in self.oneshot:
            return
        del self.oneshot[(table.id, group_id)]
        profile = self.ctx.info.action_profiles[table.implementation_id]
        runtime = self.ctx.runtime("action_profiles", profile.preamble.name)
        members = list(runtime.groups.get(group_id, ()))
        runtime.delete_group(group_id)
        for member_id in sorted(set(members)):
            runtime.delete_member(member_id)

    def _hidden_id(self) -> int:
        self._next_hidden_id += 1
        return self._next_hidden_id

    # -- members -------------------------------------------------------------------------

    def write_member(self, kind: int, member: p4runtime_pb2.ActionProfileMember) -> None:
        profile, runtime = self._profile(member.action_profile_id)
        self._check_mode(profile, "member/group")
        members = self.members[profile.preamble.id]
        name = profile.preamble.name
        exists = member.member_id in members
        if kind == DELETE:
            if not exists:
                raise error("NOT_FOUND", f"action profile {name}: member {member.member_id} "
                                         f"does not exist")
            if self._member_in_use(profile, member.member_id):
                raise error("FAILED_PRECONDITION", f"action profile {name}: member "
                                                   f"{member.member_id} is still used by a "
                                                   f"group or a table entry")
            runtime.delete_member(member.member_id)
            del members[member.member_id]
            return
        if kind == INSERT and exists:
            raise error("ALREADY_EXISTS", f"action profile {name}: member {member.member_id} "
                                          f"already exists")
        if kind == MODIFY and not exists:
            raise error("NOT_FOUND", f"action profile {name}: member {member.member_id} "
                                     f"does not exist")
        if kind == INSERT and len(members) >= (profile.size or 1 << 62):
            raise error("RESOURCE_EXHAUSTED", f"action profile {name} is full "
                                              f"({profile.size} members)")
        action_id = member.action.action_id
        Index.get(self.ctx.info.actions, action_id, "action")
        for table in self._tables(profile):
            if action_id not in table.action_scopes:
                raise error("INVALID_ARGUMENT", f"action profile {name}: action "
                                                f"{self.ctx.info.actions[action_id].name} is not an "
                                                f"action of table {table.name}")
        call = self.actions.call(member.action, f"action profile {name}")
        if kind == INSERT:
            runtime.insert_member(member.member_id, call)
        else:
            runtime.modify_member(member.member_id, call)
        stored = p4runtime_pb2.ActionProfileMember()
        stored.CopyFrom(member)
        members[member.member_id] = stored
        self._mode[profile.preamble.id] = "member/group"

    def _member_in_use(self, profile, member_id: int) -> bool:
        for group in self.groups[profile.preamble.id].values():
            if any(m.member_id == member_id for m in group.members):
                return True
        for table in self._tables(profile):
            for e in self.ctx.runtime("tables", table.name).entries():
                if e.member_id == member_id:
                    return True
        return False

    def read_members(self, request: p4runtime_pb2.ActionProfileMember) -> list:
        out = []
        for profile in self._profiles_for(request.action_profile_id):
            for member_id, member in self.members[profile.preamble.id].items():
                if request.member_id and request.member_id != member_id:
                    continue
                entity = p4runtime_pb2.Entity()
                entity.action_profile_member.CopyFrom(member)
                self.actions.canonical(entity.action_profile_member.action)
                out.append(entity)
        return out

    # -- groups --------------------------------------------------------------------------

    def write_group(self, kind: int, group: p4runtime_pb2.ActionProfileGroup) -> None:
        profile, runtime = self._profile(group.action_profile_id)
        self._check_mode(profile, "member/group")
        name = profile.preamble.name
        if not profile.with_selector:
            raise error("INVALID_ARGUMENT", f"action profile {name} has no selector, so no "
                                            f"groups")
        groups = self.groups[profile.preamble.id]
        exists = group.group_id in groups
        if kind == DELETE:
            if not exists:
                raise error("NOT_FOUND", f"action profile {name}: group {group.group_id} does "
                                         f"not exist")
            for table in self._tables(profile):
                if any(e.group_id == group.group_id
                       for e in self.ctx.runtime("tables", table.name).entries()):
                    raise error("FAILED_PRECONDITION", f"action profile {name}: group "
                                                       f"{group.group_id} is still used by a "
                                                       f"table entry")
            runtime.delete_group(group.group_id)
            del groups[group.group_id]
            return
        if kind == INSERT and exists:
            raise error("ALREADY_EXISTS", f"action profile {name}: group {group.group_id} "
                                          f"already exists")
        if kind == MODIFY and not exists:
            raise error("NOT_FOUND", f"action profile {name}: group {group.group_id} does not "
                                     f"exist")
        if group.max_size < 0:
            raise error("INVALID_ARGUMENT", f"action profile {name}: negative max_size")
        if profile.max_group_size and group.max_size > profile.max_group_size:
            raise error("RESOURCE_EXHAUSTED", f"action profile {name}: max_size "
                                              f"{group.max_size} exceeds max_group_size "
                                              f"{profile.max_group_size}")
        member_ids = self._group_members(profile, group)
        limit = group.max_size or profile.max_group_size
        if limit and len(member_ids) > limit:
            raise error("RESOURCE_EXHAUSTED", f"action profile {name}: group {group.group_id} "
                                              f"has {len(member_ids)} members, more than its "
                                              f"maximum {limit}")
        if kind == INSERT:
            runtime.insert_group(group.group_id, member_ids, group.max_size)
        else:
            runtime.modify_group(group.group_id, member_ids, group.max_size)
        stored = p4runtime_pb2.ActionProfileGroup()
        stored.CopyFrom(group)
        groups[group.group_id] = stored

    def _group_members(self, profile, group: p4runtime_pb2.ActionProfileGroup) -> list:
        """The member ids of a group as written, each existing, listed once, of weight 1."""
        name = profile.preamble.name
        member_ids, seen = [], set()
        for m in group.members:
            if m.member_id not in self.members[profile.preamble.id]:
                raise error("NOT_FOUND", f"action profile {name}: group {group.group_id} uses "
                                         f"member {m.member_id}, which does not exist")
            if m.member_id in seen:
                raise error("INVALID_ARGUMENT", f"action profile {name}: member {m.member_id} "
                                                f"listed twice in group {group.group_id}")
            check_weight(m.weight, f"action profile {name}, group {group.group_id}, member "
                                   f"{m.member_id}")
            if m.WhichOneof("watch_kind") is not None:
                raise error("UNIMPLEMENTED", f"action profile {name}: watch ports are not "
                                             f"supported")
            seen.add(m.member_id)
            member_ids.append(m.member_id)
        return member_ids

    def read_groups(self, request: p4runtime_pb2.ActionProfileGroup) -> list:
        out = []
        for profile in self._profiles_for(request.action_profile_id):
            for group_id, group in self.groups[profile.preamble.id].items():
                if request.group_id and request.group_id != group_id:
                    continue
                entity = p4runtime_pb2.Entity()
                g = entity.action_profile_group
                g.action_profile_id, g.group_id, g.max_size = (group.action_profile_id,
                                                               group.group_id, group.max_size)
                for m in sorted(group.members, key=lambda m: m.member_id):
                    g.members.add(member_id=m.member_id, weight=m.weight)
                out.append(entity)
        return out

    def _profiles_for(self, profile_id: int) -> list:
        return self.ctx.info.selected(self.ctx.info.action_profiles, profile_id, "action profile")
