"""STF commands -> P4Runtime protobufs, written through the ControlPlane.

Every control-plane line of an STF file becomes the P4Runtime update a
controller would send for it (names resolved against the program's P4Info),
so an STF test exercises exactly the path P4Runtime writes take.  The
simple_switch_CLI multicast model (nodes with a rid and ports, associated
to groups) is kept here and written as whole MulticastGroupEntry updates.

Mapping notes (reference harness -> P4Runtime):
* `add` priority p: bmv2 is given 10000 - p and prefers the smaller value,
  so a larger STF priority wins; P4Runtime prefers the larger priority, and
  needs priorities >= 1, hence priority p + 1.  Tables without ternary,
  range or optional keys ignore the priority, as the harness does; a table
  that needs one and gets none is an error (the harness crashes on it).
* key fields not named in an `add`: exact ones are 0 (the harness writes
  "0"), lpm /0, ternary mask 0, range full and optional wildcard are left
  out of the P4Runtime entry (its spelling of don't-care).
* `meter_set_rates` rates are per microsecond (simple_switch_CLI), first
  committed then peak; P4Runtime rates are per second.
* `mirroring_add_mc s g` makes clone session s replicate to the current
  replicas of multicast group g, and follows later changes of g.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane import encode_value
from testbed.p4model.stf import names, values
from testbed.p4model.stf.parser import PORT_BITS, PORT_MAX, Command

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE
_KINDS = {p4info_pb2.MatchField.EXACT: "exact", p4info_pb2.MatchField.LPM: "lpm",
          p4info_pb2.MatchField.TERNARY: "ternary", p4info_pb2.MatchField.RANGE: "range",
          p4info_pb2.MatchField.OPTIONAL: "optional"}


class BuildError(Exception):
    """The command cannot be expressed (unknown name, bad value); fatal for the file."""


class Builder:
    """Turns STF control-plane commands into ControlPlane writes."""

    def __init__(self, control_plane, p4info) -> None:
        self.cp = control_plane
        self.p4info = p4info
        self.tables = {t.preamble.name: t for t in p4info.tables}
        self.actions = {a.preamble.id: a for a in p4info.actions}
        self.registers = {r.preamble.name: r for r in p4info.registers}
        self.counters = {c.preamble.name: c for c in p4info.counters}
        self.meters = {m.preamble.name: m for m in p4info.meters}
        self.mc_nodes: dict[int, tuple] = {}        # node handle -> (rid, [ports])
        self.mc_groups: dict[int, list] = {}        # group -> [node handles]
        self.next_node = 0
        self.mc_clones: dict[int, int] = {}         # clone session -> multicast group

    # -- helpers -----------------------------------------------------------------

    def _write(self, kind: int, entity: p4runtime_pb2.Entity) -> None:
        self.cp.write(p4runtime_pb2.Update(type=kind, entity=entity))

    def _table(self, name: str):
        try:
            return self.tables[names.resolve(name, self.tables, "table")]
        except names.NameError_ as exc:
            raise BuildError(str(exc)) from None

    def _action(self, table, text) -> p4runtime_pb2.Action:
        own = {self.actions[ref.id].preamble.name: self.actions[ref.id]
               for ref in table.action_refs}
        try:
            action = own[names.resolve(text.name, own, f"action of table {table.preamble.name}")]
        except names.NameError_ as exc:
            raise BuildError(str(exc)) from None
        given = {}
        for param_name, value_text in text.args:
            param = next((p for p in action.params if p.name == param_name), None)
            if param is None:
                raise BuildError(f"action {action.preamble.name} has no parameter "
                                 f"{param_name!r} (parameters: "
                                 f"{', '.join(p.name for p in action.params) or 'none'})")
            if param.id in given:
                raise BuildError(f"parameter {param_name} given twice")
            given[param.id] = self._number(value_text, f"parameter {param_name}")
        missing = [p.name for p in action.params if p.id not in given]
        if missing:
            raise BuildError(f"action {action.preamble.name} needs "
                             f"{', '.join(missing)}")
        out = p4runtime_pb2.Action(action_id=action.preamble.id)
        for p in action.params:
            out.params.add(param_id=p.id, value=encode_value(given[p.id]))
        return out

    @staticmethod
    def _number(text: str, what: str) -> int:
        try:
            v = values.number(text)
        except values.ValueError_ as exc:
            raise BuildError(f"{what}: {exc}") from None
        if v < 0:
            raise BuildError(f"{what}: negative value {text}")
        return v

    def _extern(self, kind: dict, name: str, what: str):
        try:
            return kind[names.resolve(name, kind, what, dotted=True)]
        except names.NameError_ as exc:
            raise BuildError(str(exc)) from None

    def _int_words(self, cmd: Command, start: int = 0) -> list:
        return [self._number(w, f"argument {i + 1}") for i, w in
                enumerate(cmd.words[start:], start=start)]

    # -- tables --------------------------------------------------------------------

    def add(self, cmd: Command) -> None:
        table = self._table(cmd.table)
        entity = p4runtime_pb2.Entity()
        entry = entity.table_entry
        entry.table_id = table.preamble.id
        fields = {mf.name: mf for mf in table.match_fields}
        given = {}
        for key, value_text in cmd.keys:
            try:
                name = names.resolve_key(key, fields, table.preamble.name)
            except names.NameError_ as exc:
                raise BuildError(str(exc)) from None
            given[name] = value_text
        needs_priority = False
        for mf in table.match_fields:
            kind = _KINDS.get(mf.match_type, "exact")
            needs_priority |= kind in ("ternary", "range", "optional")
            fm = self._field_match(mf, kind, given.get(mf.name))
            if fm is not None:
                entry.match.append(fm)
        if needs_priority:
            if cmd.priority is None:
                raise BuildError(f"table {table.preamble.name} has ternary, range or optional "
                                 f"keys: its entries need a priority (add <table> <priority> "
                                 f"...)")
            entry.priority = cmd.priority + 1
        entry.action.action.CopyFrom(self._action(table, cmd.action))
        self._write(INSERT, entity)

    def _field_match(self, mf, kind: str, text):
        width = mf.bitwidth
        fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
        what = f"key {mf.name}"
        try:
            if kind == "exact":
                value = 0 if text is None else values.number(text)
                fm.exact.value = encode_value(value)
            elif text is None:
                return None
            elif kind == "lpm":
                value, length = values.lpm(text, width)
                if length == 0:
                    return None
                fm.lpm.value = encode_value(value)
                fm.lpm.prefix_len = length
            elif kind == "ternary":
                value, mask = values.ternary(text, width)
                if mask == 0:
                    return None
                fm.ternary.value = encode_value(value & mask)
                fm.ternary.mask = encode_value(mask)
            elif kind == "range":
                low, high = values.value_range(text)
                if low == 0 and high == (1 << width) - 1:
                    return None
                fm.range.low = encode_value(low)
                fm.range.high = encode_value(high)
            else:
                if set(text.lower().removeprefix("0x").removeprefix("0b")) <= {"*"}:
                    return None
                fm.optional.value = encode_value(values.number(text))
        except values.ValueError_ as exc:
            raise BuildError(f"{what}: {exc}") from None
        return fm

    def setdefault(self, cmd: Command) -> None:
        table = self._table(cmd.table)
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = table.preamble.id
        entity.table_entry.is_default_action = True
        entity.table_entry.action.action.CopyFrom(self._action(table, cmd.action))
        self._write(MODIFY, entity)

    # -- mirroring -----------------------------------------------------------------------

    def _clone_session(self, session: int, replicas: list) -> None:
        entity = p4runtime_pb2.Entity()
        cs = entity.packet_replication_engine_entry.clone_session_entry
        cs.session_id = session
        for instance, port in replicas:
            cs.replicas.add(egress_port=port, instance=instance)
        self._write(MODIFY if session in self._sessions() else INSERT, entity)

    def _sessions(self) -> set:
        return {e.packet_replication_engine_entry.clone_session_entry.session_id
                for e in self.cp.read(_clone_query(0))}

    def mirroring_add(self, cmd: Command) -> None:
        session, port = self._int_words(cmd)
        _check_ports([port])
        self.mc_clones.pop(session, None)
        self._clone_session(session, [(0, port)])

    def mirroring_add_mc(self, cmd: Command) -> None:
        session, group = self._int_words(cmd)
        self.mc_clones[session] = group
        self._clone_session(session, self._group_replicas(group))

    def mirroring_delete(self, cmd: Command) -> None:
        (session,) = self._int_words(cmd)
        self.mc_clones.pop(session, None)
        entity = _clone_query(session)
        self._write(DELETE, entity)

    def mirroring_get(self, cmd: Command) -> str:
        (session,) = self._int_words(cmd)
        found = self.cp.read(_clone_query(session))
        return str(found[0]).strip() if found else f"no clone session {session}"

    # -- multicast ------------------------------------------------------------------------

    def _group_replicas(self, group: int) -> list:
        replicas = []
        for handle in self.mc_groups.get(group, []):
            rid, ports = self.mc_nodes[handle]
            replicas.extend((rid, p) for p in ports)
        return replicas

    def _sync_group(self, group: int, kind: int) -> None:
        entity = p4runtime_pb2.Entity()
        mg = entity.packet_replication_engine_entry.multicast_group_entry
        mg.multicast_group_id = group
        if kind != DELETE:
            for rid, port in self._group_replicas(group):
                mg.replicas.add(egress_port=port, instance=rid)
        self._write(kind, entity)
        for session, g in self.mc_clones.items():
            if g == group:
                self._clone_session(session, self._group_replicas(group))

    def mc_mgrp_create(self, cmd: Command) -> None:
        (group,) = self._int_words(cmd)
        if group in self.mc_groups:
            raise BuildError(f"multicast group {group} already exists")
        self._sync_group(group, INSERT)
        self.mc_groups[group] = []

    def mc_mgrp_destroy(self, cmd: Command) -> None:
        (group,) = self._int_words(cmd)
        if group not in self.mc_groups:
            raise BuildError(f"multicast group {group} does not exist")
        self._sync_group(group, DELETE)
        del self.mc_groups[group]

    def mc_node_create(self, cmd: Command) -> str:
        rid, *ports = self._int_words(cmd)
        _check_ports(ports)
        handle = self.next_node
        self.next_node += 1
        self.mc_nodes[handle] = (rid, sorted(set(ports)))
        return f"node {handle} created (rid {rid}, ports {ports})"

    def _node(self, handle: int):
        if handle not in self.mc_nodes:
            raise BuildError(f"no multicast node with handle {handle} (mc_node_create "
                             f"returns handles 0, 1, 2, ... in order)")
        return self.mc_nodes[handle]

    def _groups_of(self, handle: int) -> list:
        return [g for g, nodes in self.mc_groups.items() if handle in nodes]

    def mc_node_update(self, cmd: Command) -> None:
        handle, *ports = self._int_words(cmd)
        _check_ports(ports)
        rid, _old = self._node(handle)
        self.mc_nodes[handle] = (rid, sorted(set(ports)))
        for group in self._groups_of(handle):
            self._sync_group(group, MODIFY)

    def mc_node_destroy(self, cmd: Command) -> None:
        (handle,) = self._int_words(cmd)
        self._node(handle)
        groups = self._groups_of(handle)
        for group in groups:
            self.mc_groups[group].remove(handle)
        del self.mc_nodes[handle]
        for group in groups:
            self._sync_group(group, MODIFY)

    def mc_node_associate(self, cmd: Command) -> None:
        group, handle = self._int_words(cmd)
        self._node(handle)
        if group not in self.mc_groups:
            raise BuildError(f"multicast group {group} does not exist (mc_mgrp_create first)")
        if self._groups_of(handle):
            raise BuildError(f"multicast node {handle} is already associated with group "
                             f"{self._groups_of(handle)[0]}")
        self.mc_groups[group].append(handle)
        self._sync_group(group, MODIFY)

    def mc_node_dissociate(self, cmd: Command) -> None:
        group, handle = self._int_words(cmd)
        if handle not in self.mc_groups.get(group, []):
            raise BuildError(f"multicast node {handle} is not in group {group}")
        self.mc_groups[group].remove(handle)
        self._sync_group(group, MODIFY)

    # -- counters, registers, meters ---------------------------------------------------------

    def counter_read(self, cmd: Command) -> str:
        counter = self._extern(self.counters, cmd.words[0], "counter")
        (index,) = self._int_words(cmd, 1)
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = counter.preamble.id
        entity.counter_entry.index.index = index
        data = self.cp.read(entity)[0].counter_entry.data
        return (f"{counter.preamble.name}[{index}] = packets {data.packet_count}, "
                f"bytes {data.byte_count}")

    def counter_write(self, cmd: Command) -> None:
        counter = self._extern(self.counters, cmd.words[0], "counter")
        index, packets, nbytes = self._int_words(cmd, 1)
        entity = p4runtime_pb2.Entity()
        ce = entity.counter_entry
        ce.counter_id = counter.preamble.id
        ce.index.index = index
        ce.data.packet_count, ce.data.byte_count = packets, nbytes
        self._write(MODIFY, entity)

    def counter_reset(self, cmd: Command) -> None:
        counter = self._extern(self.counters, cmd.words[0], "counter")
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = counter.preamble.id
        entity.counter_entry.data.packet_count = 0
        self._write(MODIFY, entity)

    def register_read(self, cmd: Command) -> str:
        register = self._extern(self.registers, cmd.words[0], "register")
        (index,) = self._int_words(cmd, 1)
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = register.preamble.id
        entity.register_entry.index.index = index
        data = self.cp.read(entity)[0].register_entry.data
        return f"{register.preamble.name}[{index}] = {int.from_bytes(data.bitstring, 'big')}"

    def register_write(self, cmd: Command) -> None:
        register = self._extern(self.registers, cmd.words[0], "register")
        index, value = self._int_words(cmd, 1)
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = register.preamble.id
        entity.register_entry.index.index = index
        entity.register_entry.data.bitstring = encode_value(value)
        self._write(MODIFY, entity)

    def register_reset(self, cmd: Command) -> None:
        register = self._extern(self.registers, cmd.words[0], "register")
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = register.preamble.id
        entity.register_entry.data.bitstring = b"\x00"
        self._write(MODIFY, entity)

    def _rates(self, words: list) -> tuple:
        if len(words) != 2:
            raise BuildError(f"a two-rate meter takes two <rate>:<burst> pairs (committed, "
                             f"then peak), got {len(words)}")
        out = []
        for word in words:
            rate_text, sep, burst_text = word.partition(":")
            try:
                rate = float(rate_text)
                burst = int(burst_text, 0)
            except ValueError:
                raise BuildError(f"bad <rate>:<burst> pair {word!r}") from None
            if not sep or rate < 0 or burst < 0:
                raise BuildError(f"bad <rate>:<burst> pair {word!r}")
            out.append((round(rate * 1_000_000), burst))   # per microsecond -> per second
        return out[0][0], out[0][1], out[1][0], out[1][1]

    def _meter_entity(self, name: str, index, rates) -> p4runtime_pb2.Entity:
        meter = self._extern(self.meters, name, "meter")
        entity = p4runtime_pb2.Entity()
        me = entity.meter_entry
        me.meter_id = meter.preamble.id
        if index is not None:
            me.index.index = index
        if rates is not None:
            me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = rates
        return entity

    def meter_set_rates(self, cmd: Command) -> None:
        index = self._number(cmd.words[1], "meter index")
        self._write(MODIFY, self._meter_entity(cmd.words[0], index, self._rates(cmd.words[2:])))

    def meter_array_set_rates(self, cmd: Command) -> None:
        self._write(MODIFY, self._meter_entity(cmd.words[0], None, self._rates(cmd.words[1:])))

    def meter_get_rates(self, cmd: Command) -> str:
        index = self._number(cmd.words[1], "meter index")
        found = self.cp.read(self._meter_entity(cmd.words[0], index, None))
        config = found[0].meter_entry.config if found else None
        if config is None or not found[0].meter_entry.HasField("config"):
            return f"{cmd.words[0]}[{index}]: not configured"
        return (f"{cmd.words[0]}[{index}]: committed {config.cir / 1e6:g}/us burst "
                f"{config.cburst}, peak {config.pir / 1e6:g}/us burst {config.pburst}")


def _clone_query(session: int) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    entity.packet_replication_engine_entry.clone_session_entry.session_id = session
    return entity


def _check_ports(ports) -> None:
    """Every port is a v1model port (9 bits); a larger one is refused (parser.PORT_MAX)."""
    for port in ports:
        if not 0 <= port <= PORT_MAX:
            raise BuildError(f"port {port} is out of range: v1model ports are {PORT_BITS} bits (0..{PORT_MAX})")
