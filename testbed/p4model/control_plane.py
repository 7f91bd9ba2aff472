"""P4Runtime entities <-> the runtime objects of a loaded Pipeline.

One class, `ControlPlane`, is the only way control-plane state reaches a
pipeline: the P4Runtime server hands it the `p4.v1.Update`s of a
WriteRequest and the `p4.v1.Entity`s of a ReadRequest, and the STF runner
builds the same protobufs from its text commands, so an STF line and a
P4Runtime write mean exactly the same thing.

Behaviour follows the reference server (p4lang/PI `DeviceMgr`, what
simple_switch_grpc runs) wherever it defines one, and the P4Runtime 1.4
specification where PI stops short.  Status codes, per mistake:

* ids that are not in the P4Info (table, action, counter, ...): INVALID_ARGUMENT
  ("Invalid P4 id"), as PI; unknown match-field or parameter ids: INVALID_ARGUMENT.
* byte strings: any length is accepted as long as the value fits the field
  width (PI pads short strings and accepts leading zero bytes); a value that
  does not fit: INVALID_ARGUMENT.  Reads return canonical byte strings
  (leading zero bytes stripped, zero is b"\\x00").
* LPM prefix 0, ternary mask 0, a full-range range, a missing exact field,
  value bits outside the mask / prefix, low > high, priority 0 on a table
  that needs one or non-zero on one that does not: INVALID_ARGUMENT (PI).
* INSERT of an existing entry: ALREADY_EXISTS; MODIFY/DELETE of a missing
  one: NOT_FOUND; INSERT/DELETE with is_default_action: INVALID_ARGUMENT.
* a const default action, a TABLE_ONLY action as default or a DEFAULT_ONLY
  action in an entry: PERMISSION_DENIED (PI); entries written to a table with
  `const entries`: PERMISSION_DENIED (the P4Runtime specification's rule for
  immutable tables; PI leaves it to the target).
* a full table: RESOURCE_EXHAUSTED.
* INSERT/DELETE of counters, meters or registers: INVALID_ARGUMENT
  (only MODIFY exists for them; DELETE of a counter resets it, as PI does).
* multicast group 0 / clone session 0: INVALID_ARGUMENT; group ids >= 2**15
  (reserved by PI for clone sessions): OUT_OF_RANGE; clone session ids above
  511, class_of_service and duplicate replicas are refused by the PRE itself
  (pre.py, which follows the bmv2 server).
* indices out of range: OUT_OF_RANGE; negative: INVALID_ARGUMENT.

Beyond PI (which answers UNIMPLEMENTED for these), registers and value sets
can be written and read, and counter / meter / register writes without an
index apply to every cell, as the specification describes.  One-shot action
selector programming (`action_profile_action_set`) is supported as PI does:
a hidden group of hidden members per entry, read back as the action set.

Everything a request carries is validated before anything is changed, so a
refused update leaves the pipeline exactly as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.tables import ERROR_FIELD_WIDTH

__all__ = ["ControlPlane", "encode_value", "decode_value"]

_INSERT = p4runtime_pb2.Update.INSERT
_MODIFY = p4runtime_pb2.Update.MODIFY
_DELETE = p4runtime_pb2.Update.DELETE

_MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}
_COUNTER_UNITS = {
    p4info_pb2.CounterSpec.PACKETS: "packets",
    p4info_pb2.CounterSpec.BYTES: "bytes",
    p4info_pb2.CounterSpec.BOTH: "packets_and_bytes",
}
_FIRST_RESERVED_GROUP = 1 << 15      # PI keeps these multicast groups for clone sessions


def _error(code: str, message: str) -> ControlPlaneError:
    return ControlPlaneError(code, message)


# --------------------------------------------------------------------------
# Byte strings


def encode_value(value: int) -> bytes:
    """The canonical P4Runtime byte string of a non-negative int: no leading
    zero bytes, and zero as one zero byte (what PI sends back)."""
    if value == 0:
        return b"\x00"
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def decode_value(data: bytes, width: int, what: str) -> int:
    """A P4Runtime byte string as an int of `width` bits.  Short and padded
    strings are both accepted (PI's bytestring_p4rt_to_pi); only the value
    must fit."""
    value = int.from_bytes(data, "big")
    if value >> width:
        raise _error("INVALID_ARGUMENT",
                     f"{what}: value 0x{data.hex()} does not fit in {width} bits")
    return value


# --------------------------------------------------------------------------
# What the P4Info says, indexed once


@dataclass
class _Field:
    id: int
    name: str
    kind: str          # exact | lpm | ternary | range | optional
    width: int


@dataclass
class _Action:
    id: int
    name: str
    params: list       # of _Field (kind unused)
    param_by_id: dict


@dataclass
class _Table:
    id: int
    name: str
    fields: list                 # _Field in P4Info order
    field_by_id: dict
    action_scopes: dict          # action id -> p4info ActionRef scope
    const_default_action_id: int
    implementation_id: int
    direct_counter_id: int
    direct_meter_id: int
    is_const: bool
    size: int
    needs_priority: bool
    positions: list = field(default_factory=list)   # runtime match tuple slot of each field


class _Index:
    """Ids and names of a P4Info, and its per-table facts."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.actions = {}
        for action in p4info.actions:
            params = [_Field(p.id, p.name, "", p.bitwidth) for p in action.params]
            self.actions[action.preamble.id] = _Action(
                action.preamble.id, action.preamble.name, params, {p.id: p for p in params})
        self.direct_counters = {c.preamble.id: c for c in p4info.direct_counters}
        self.direct_meters = {m.preamble.id: m for m in p4info.direct_meters}
        self.tables = {}
        for table in p4info.tables:
            fields = []
            for mf in table.match_fields:
                kind = _MATCH_KINDS.get(mf.match_type)
                if kind is None:
                    raise _error("INVALID_ARGUMENT",
                                 f"table {table.preamble.name}: match field {mf.name} has an "
                                 f"unsupported match type")
                # no bitwidth: p4c's P4Info for a key of type `error` (tables.ERROR_FIELD_WIDTH)
                fields.append(_Field(mf.id, mf.name, kind, mf.bitwidth or ERROR_FIELD_WIDTH))
            counter_id = meter_id = 0
            for rid in table.direct_resource_ids:
                if rid in self.direct_counters:
                    counter_id = rid
                elif rid in self.direct_meters:
                    meter_id = rid
            self.tables[table.preamble.id] = _Table(
                id=table.preamble.id, name=table.preamble.name, fields=fields,
                field_by_id={f.id: f for f in fields},
                action_scopes={ref.id: ref.scope for ref in table.action_refs},
                const_default_action_id=table.const_default_action_id,
                implementation_id=table.implementation_id,
                direct_counter_id=counter_id, direct_meter_id=meter_id,
                is_const=table.is_const_table, size=table.size or 1024,
                needs_priority=any(f.kind in ("ternary", "range", "optional") for f in fields))
        self.action_profiles = {a.preamble.id: a for a in p4info.action_profiles}
        self.counters = {c.preamble.id: c for c in p4info.counters}
        self.meters = {m.preamble.id: m for m in p4info.meters}
        self.registers = {r.preamble.id: r for r in p4info.registers}
        self.value_sets = {v.preamble.id: v for v in p4info.value_sets}
        self.digests = {d.preamble.id: d for d in p4info.digests}

    @staticmethod
    def get(kind: dict, id_: int, what: str):
        try:
            return kind[id_]
        except KeyError:
            raise _error("INVALID_ARGUMENT", f"Invalid P4 id: no {what} with id {id_}") from None


def _check_weight(weight: int, where: str) -> None:
    """bmv2 keeps a member at most once per group, so only weight 1 exists."""
    if weight <= 0:
        raise _error("INVALID_ARGUMENT", f"{where}: weight {weight}; weights must be positive")
    if weight != 1:
        raise _error("UNIMPLEMENTED", f"{where}: weight {weight}; this target supports only "
                                      f"weight 1 (each member at most once per group)")


def _flatten_member(pseudo: "_Table", match: tuple) -> tuple:
    """A value-set member as the parser compares it: (value, mask) over the
    select keys concatenated in order, first key most significant."""
    value = mask = 0
    for f, item in zip(pseudo.fields, match):
        full = (1 << f.width) - 1
        if f.kind == "exact":
            v, m = item, full
        elif f.kind == "ternary":
            v, m = item
        elif f.kind == "lpm":
            v, m = item[0], (full >> (f.width - item[1])) << (f.width - item[1]) if item[1] else 0
        elif f.kind == "optional":
            v, m = (0, 0) if item is None else (item, full)
        else:
            raise _error("UNIMPLEMENTED", f"{pseudo.name}: range members are not supported")
        value = (value << f.width) | v
        mask = (mask << f.width) | m
    return value, mask


def _register_width(register: p4info_pb2.Register) -> int:
    spec = register.type_spec
    if spec.HasField("bitstring"):
        bits = spec.bitstring
        for kind in ("bit", "int", "varbit"):
            if bits.HasField(kind):
                return getattr(bits, kind).bitwidth if kind != "varbit" else bits.varbit.max_bitwidth
    raise _error("UNIMPLEMENTED", f"register {register.preamble.name}: only bit<W>/int<W> registers "
                                  f"can be accessed over P4Runtime")


# --------------------------------------------------------------------------
# The facade


class ControlPlane:
    """Applies P4Runtime writes to a Pipeline and answers P4Runtime reads.

    State the pipeline does not keep in P4Runtime terms (action-profile
    members and groups as written, multicast groups, clone sessions, digest
    configurations, one-shot groups) is mirrored here; this object is the
    pipeline's only writer, so the mirror is exact."""

    def __init__(self, pipeline, p4info: p4info_pb2.P4Info) -> None:
        self.pipeline = pipeline
        self.p4info = p4info
        self.info = _Index(p4info)
        for table in self.info.tables.values():
            table.positions = self._match_positions(table)
        self._members: dict[int, dict[int, p4runtime_pb2.ActionProfileMember]] = {
            ap: {} for ap in self.info.action_profiles}
        self._groups: dict[int, dict[int, p4runtime_pb2.ActionProfileGroup]] = {
            ap: {} for ap in self.info.action_profiles}
        self._oneshot: dict[tuple, p4runtime_pb2.ActionProfileActionSet] = {}   # (table, gid)
        self._next_hidden_id = 0            # ids of one-shot members and groups
        self._profile_mode: dict[int, str] = {}   # profile id -> 'member/group' | 'one-shot'
        self._mc_groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = {}
        self._clone_sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = {}
        self._digest_configs: dict[int, p4runtime_pb2.DigestEntry] = {}
        self._value_sets: dict[int, list] = {vs: [] for vs in self.info.value_sets}

    # -- plumbing to the pipeline ------------------------------------------

    def _runtime(self, kind: str, name: str):
        objects = getattr(self.pipeline, kind, None) or {}
        try:
            return objects[name]
        except KeyError:
            raise _error("INTERNAL", f"the pipeline has no {kind[:-1].replace('_', ' ')} "
                                     f"named {name} although the P4Info lists it") from None

    def _match_positions(self, table: _Table) -> list:
        """Slot of each P4Info match field in the runtime match tuple (which
        holds the table's non-selector keys in key order)."""
        runtime = getattr(self.pipeline, "tables", {}).get(table.name)
        names = [f.name for f in getattr(runtime, "fields", ()) if f.match_kind != "selector"]
        if sorted(names) == sorted(f.name for f in table.fields) and len(set(names)) == len(names):
            return [names.index(f.name) for f in table.fields]
        return list(range(len(table.fields)))

    # -- entry points --------------------------------------------------------

    def write(self, update: p4runtime_pb2.Update) -> None:
        """Apply one update, or raise ControlPlaneError and change nothing."""
        kind = update.type
        if kind not in (_INSERT, _MODIFY, _DELETE):
            raise _error("INVALID_ARGUMENT", "Update type is not set" if kind == 0
                         else "Invalid update type")
        entity = update.entity
        which = entity.WhichOneof("entity")
        handler = {
            "table_entry": self._write_table_entry,
            "action_profile_member": self._write_member,
            "action_profile_group": self._write_group,
            "counter_entry": self._write_counter,
            "direct_counter_entry": self._write_direct_counter,
            "meter_entry": self._write_meter,
            "direct_meter_entry": self._write_direct_meter,
            "register_entry": self._write_register,
            "packet_replication_engine_entry": self._write_pre,
            "value_set_entry": self._write_value_set,
            "digest_entry": self._write_digest,
        }.get(which)
        if handler is None:
            if which == "extern_entry":
                raise _error("UNIMPLEMENTED", "extern entries are not supported")
            raise _error("UNKNOWN", "Incorrect entity type")
        handler(kind, getattr(entity, which))

    def read_later(self, entity: p4runtime_pb2.Entity):
        """read() in two steps, for the packet thread's sake: the switch state is taken now (call
        this inside Device.call: errors are raised here), and the returned function builds the
        messages, outside it. Counters and registers, which telemetry polls, defer the building:
        with pure-Python protobuf it was most of a poll's ~3.4 ms on the packet thread."""
        which = entity.WhichOneof("entity")
        if which == "counter_entry":
            values = self._counter_values(entity.counter_entry)
            return lambda: self._encode_counters(values)
        if which == "register_entry":
            values = self._register_values(entity.register_entry)
            return lambda: self._encode_registers(values)
        found = self.read(entity)
        return lambda: found

    def read(self, entity: p4runtime_pb2.Entity) -> list:
        """The entities matching `entity`, wildcards as P4Runtime defines them."""
        which = entity.WhichOneof("entity")
        handler = {
            "table_entry": self._read_table_entries,
            "action_profile_member": self._read_members,
            "action_profile_group": self._read_groups,
            "counter_entry": self._read_counters,
            "direct_counter_entry": self._read_direct_counters,
            "meter_entry": self._read_meters,
            "direct_meter_entry": self._read_direct_meters,
            "register_entry": self._read_registers,
            "packet_replication_engine_entry": self._read_pre,
            "value_set_entry": self._read_value_sets,
            "digest_entry": self._read_digests,
        }.get(which)
        if handler is None:
            if which == "extern_entry":
                raise _error("UNIMPLEMENTED", "extern entries are not supported")
            raise _error("UNKNOWN", "Incorrect entity type")
        return handler(getattr(entity, which))

    # -- match keys ------------------------------------------------------------

    def _match_key(self, table: _Table, entry: p4runtime_pb2.TableEntry) -> tuple:
        """The runtime match tuple of a P4Runtime entry, validated as PI does."""
        given = {}
        for fm in entry.match:
            if fm.field_id in given:
                raise _error("INVALID_ARGUMENT", f"table {table.name}: match field id "
                                                 f"{fm.field_id} given twice")
            given[fm.field_id] = fm
        unknown = set(given) - set(table.field_by_id)
        if unknown:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Unknown field in match key "
                                             f"(id {min(unknown)})")
        match = [None] * len(table.fields)
        for f, slot in zip(table.fields, table.positions):
            match[slot] = self._field_value(table, f, given.get(f.id))
        if table.needs_priority and entry.priority == 0:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Zero priority for ternary match")
        if not table.needs_priority and entry.priority != 0:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Non-zero priority for "
                                             f"non-ternary match")
        if entry.priority < 0:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: negative priority")
        return tuple(match)

    @staticmethod
    def _field_value(table: _Table, f: _Field, fm):
        what = f"table {table.name}, match field {f.name}"
        if fm is None:
            if f.kind == "exact":
                raise _error("INVALID_ARGUMENT", f"{what}: Missing non-ternary field in match key")
            return {"lpm": (0, 0), "ternary": (0, 0), "range": (0, (1 << f.width) - 1),
                    "optional": None}[f.kind]
        given = fm.WhichOneof("field_match_type")
        if given != f.kind:
            raise _error("INVALID_ARGUMENT", f"{what}: Invalid match type {given} "
                                             f"(the field is {f.kind})")
        if f.kind == "exact":
            return decode_value(fm.exact.value, f.width, what)
        if f.kind == "optional":
            return decode_value(fm.optional.value, f.width, what)
        if f.kind == "lpm":
            value = decode_value(fm.lpm.value, f.width, what)
            plen = fm.lpm.prefix_len
            if plen < 0 or plen > f.width:
                raise _error("INVALID_ARGUMENT", f"{what}: prefix length {plen} outside "
                                                 f"0..{f.width}")
            if plen == 0:
                raise _error("INVALID_ARGUMENT", f"{what}: invalid representation of a "
                                                 f"don't-care LPM match, omit the field instead "
                                                 f"of using a prefix length of 0")
            if value & ((1 << (f.width - plen)) - 1):
                raise _error("INVALID_ARGUMENT", f"{what}: Invalid LPM value, incorrect number "
                                                 f"of trailing zeros")
            return (value, plen)
        if f.kind == "ternary":
            value = decode_value(fm.ternary.value, f.width, what)
            mask = decode_value(fm.ternary.mask, f.width, what)
            if mask == 0:
                raise _error("INVALID_ARGUMENT", f"{what}: invalid representation of a "
                                                 f"don't-care ternary match, omit the field "
                                                 f"instead of using a 0 mask")
            if value & ~mask:
                raise _error("INVALID_ARGUMENT", f"{what}: Invalid ternary value, make sure "
                                                 f"value & mask == value")
            return (value, mask)
        low = decode_value(fm.range.low, f.width, what)
        high = decode_value(fm.range.high, f.width, what)
        if low == 0 and high == (1 << f.width) - 1:
            raise _error("INVALID_ARGUMENT", f"{what}: invalid representation of a don't-care "
                                             f"range match, omit the field instead")
        if low > high:
            raise _error("INVALID_ARGUMENT", f"{what}: Invalid range value, make sure "
                                             f"low <= high")
        return (low, high)

    @staticmethod
    def _match_protos(table: _Table, match: tuple) -> list:
        """The P4Runtime FieldMatch list of a runtime match tuple: don't-care
        fields are omitted, byte strings canonical."""
        out = []
        for f, slot in zip(table.fields, table.positions):
            value = match[slot]
            fm = p4runtime_pb2.FieldMatch(field_id=f.id)
            if f.kind == "exact":
                fm.exact.value = encode_value(value)
            elif f.kind == "optional":
                if value is None:
                    continue
                fm.optional.value = encode_value(value)
            elif f.kind == "lpm":
                if value[1] == 0:
                    continue
                fm.lpm.value = encode_value(value[0])
                fm.lpm.prefix_len = value[1]
            elif f.kind == "ternary":
                if value[1] == 0:
                    continue
                fm.ternary.value = encode_value(value[0])
                fm.ternary.mask = encode_value(value[1])
            else:
                if value == (0, (1 << f.width) - 1):
                    continue
                fm.range.low = encode_value(value[0])
                fm.range.high = encode_value(value[1])
            out.append(fm)
        return out

    # -- actions ------------------------------------------------------------------

    def _action_call(self, action: p4runtime_pb2.Action, where: str):
        """A runtime ActionCall from a P4Runtime Action, every parameter checked."""
        from testbed.p4model.runtime.tables import ActionCall

        info = _Index.get(self.info.actions, action.action_id, "action")
        if len(action.params) != len(info.params):
            raise _error("INVALID_ARGUMENT", f"{where}: action {info.name} takes "
                                             f"{len(info.params)} parameters, got "
                                             f"{len(action.params)} (Unexpected number of action "
                                             f"parameters)")
        values = {}
        for p in action.params:
            param = info.param_by_id.get(p.param_id)
            if param is None:
                raise _error("INVALID_ARGUMENT", f"{where}: action {info.name} has no parameter "
                                                 f"with id {p.param_id} (Unknown action parameter)")
            if p.param_id in values:
                raise _error("INVALID_ARGUMENT", f"{where}: action {info.name}: parameter "
                                                 f"{param.name} given twice")
            values[p.param_id] = decode_value(p.value, param.width,
                                              f"{where}: action {info.name}, parameter {param.name}")
        return ActionCall(info.name, tuple(values[p.id] for p in info.params))

    def _action_proto(self, call) -> p4runtime_pb2.Action:
        info = self._action_by_name(call.action)
        action = p4runtime_pb2.Action(action_id=info.id)
        for param, value in zip(info.params, call.args):
            action.params.add(param_id=param.id, value=encode_value(value))
        return action

    def _action_by_name(self, name: str) -> _Action:
        if not hasattr(self, "_actions_by_name"):
            self._actions_by_name = {a.name: a for a in self.info.actions.values()}
        try:
            return self._actions_by_name[name]
        except KeyError:
            raise _error("INTERNAL", f"the pipeline runs action {name}, which the P4Info does "
                                     f"not list") from None

    def _check_table_action(self, table: _Table, action_id: int, default: bool) -> None:
        _Index.get(self.info.actions, action_id, "action")
        scope = table.action_scopes.get(action_id)
        name = self.info.actions[action_id].name
        if scope is None:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Invalid action for table "
                                             f"({name})")
        if scope == p4info_pb2.ActionRef.TABLE_ONLY and default:
            raise _error("PERMISSION_DENIED", f"table {table.name}: Cannot use TABLE_ONLY action "
                                              f"{name} as default action")
        if scope == p4info_pb2.ActionRef.DEFAULT_ONLY and not default:
            raise _error("PERMISSION_DENIED", f"table {table.name}: Cannot use DEFAULT_ONLY "
                                              f"action {name} in table entry")

    # -- table entries -------------------------------------------------------------

    def _write_table_entry(self, kind: int, entry: p4runtime_pb2.TableEntry) -> None:
        table = _Index.get(self.info.tables, entry.table_id, "table")
        runtime = self._runtime("tables", table.name)
        if entry.HasField("time_since_last_hit"):
            raise _error("INVALID_ARGUMENT", "has_time_since_last_hit must not be set in "
                                             "WriteRequest")
        if entry.idle_timeout_ns:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: idle_timeout_ns must be set "
                                             f"to 0 for tables which do not support idle timeout")
        if entry.is_default_action:
            self._write_default_entry(kind, table, runtime, entry)
            return
        if table.is_const:
            raise _error("PERMISSION_DENIED", f"table {table.name} has const entries and cannot "
                                              f"be written")
        match = self._match_key(table, entry)
        existing = runtime.find(match, entry.priority)
        if kind == _DELETE:
            if existing is None:
                raise _error("NOT_FOUND", f"table {table.name}: Cannot find match entry")
            runtime.delete(match, entry.priority)
            self._forget_oneshot(table, existing.group_id)
            return
        if not entry.HasField("action"):
            raise _error("INVALID_ARGUMENT", f"table {table.name}: 'action' field must be set")
        if kind == _INSERT and existing is not None:
            raise _error("ALREADY_EXISTS", f"table {table.name}: Match entry exists, use MODIFY "
                                           f"if you wish to change action")
        if kind == _MODIFY and existing is None:
            raise _error("NOT_FOUND", f"table {table.name}: Cannot find match entry")
        if kind == _INSERT and len(runtime.entries()) >= table.size:
            raise _error("RESOURCE_EXHAUSTED", f"table {table.name} is full ({table.size} "
                                               f"entries)")
        new = self._entry_from_proto(table, entry, match)
        self._direct_resources(table, runtime, entry, new)
        if entry.action.WhichOneof("type") == "action_profile_action_set":
            self._install_oneshot(table, entry.action.action_profile_action_set, new)
        if kind == _INSERT:
            runtime.insert(new)
            return
        old_group = existing.group_id
        runtime.modify(new)
        if entry.HasField("counter_data"):
            existing.counter_packets = new.counter_packets
            existing.counter_bytes = new.counter_bytes
        self._forget_oneshot(table, old_group)

    def _write_default_entry(self, kind, table: _Table, runtime, entry) -> None:
        if kind != _MODIFY:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Cannot use "
                                             f"{'INSERT' if kind == _INSERT else 'DELETE'} for "
                                             f"default entry")
        if len(entry.match):
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Non-empty key for default entry")
        if entry.priority:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Non-zero priority for "
                                             f"default entry")
        if table.implementation_id:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Cannot set / reset default "
                                             f"action for indirect table")
        if table.const_default_action_id:
            raise _error("PERMISSION_DENIED", f"table {table.name}: Cannot set / reset default "
                                              f"action for a table which has a const default "
                                              f"action")
        if entry.HasField("counter_data") or entry.HasField("meter_config"):
            raise _error("UNIMPLEMENTED", f"table {table.name}: direct resources of the default "
                                          f"entry are not supported")
        if not entry.HasField("action"):
            runtime.reset_default()
            return
        if entry.action.WhichOneof("type") != "action":
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Cannot provide indirect "
                                             f"action for direct table")
        self._check_table_action(table, entry.action.action.action_id, default=True)
        runtime.set_default(self._action_call(entry.action.action, f"table {table.name}"))

    def _entry_from_proto(self, table: _Table, entry, match: tuple):
        from testbed.p4model.runtime.tables import TableEntry

        action = entry.action
        which = action.WhichOneof("type")
        new = TableEntry(match=match, priority=entry.priority)
        if table.implementation_id:
            if which == "action":
                raise _error("INVALID_ARGUMENT", f"table {table.name}: Cannot provide direct "
                                                 f"action for indirect table")
            profile = self.info.action_profiles[table.implementation_id]
            if which == "action_profile_member_id":
                if action.action_profile_member_id not in self._members[profile.preamble.id]:
                    raise _error("INVALID_ARGUMENT", f"table {table.name}: Invalid member / "
                                                     f"group id (no member "
                                                     f"{action.action_profile_member_id})")
                new.member_id = action.action_profile_member_id
            elif which == "action_profile_group_id":
                if not profile.with_selector:
                    raise _error("INVALID_ARGUMENT", f"table {table.name}: action profile "
                                                     f"{profile.preamble.name} has no selector, "
                                                     f"so no groups")
                if action.action_profile_group_id not in self._groups[profile.preamble.id]:
                    raise _error("INVALID_ARGUMENT", f"table {table.name}: Invalid member / "
                                                     f"group id (no group "
                                                     f"{action.action_profile_group_id})")
                new.group_id = action.action_profile_group_id
            elif which == "action_profile_action_set":
                if not profile.with_selector:
                    raise _error("INVALID_ARGUMENT", f"table {table.name}: one-shot programming "
                                                     f"needs an action selector")
                self._check_action_set(table, profile, action.action_profile_action_set)
            else:
                raise _error("INVALID_ARGUMENT", f"table {table.name}: Invalid table action type")
            return new
        if which != "action":
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Cannot provide indirect "
                                             f"action for direct table")
        self._check_table_action(table, action.action.action_id, default=False)
        new.action = self._action_call(action.action, f"table {table.name}")
        return new

    def _direct_resources(self, table: _Table, runtime, entry, new) -> None:
        """Direct counter data and meter config carried by a table entry.
        On MODIFY the runtime table keeps the entry's counters and meter
        unless new ones are given (see _write_table_entry)."""
        if entry.HasField("counter_data"):
            if not table.direct_counter_id:
                raise _error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct "
                                                 f"counters")
            if entry.counter_data.packet_count < 0 or entry.counter_data.byte_count < 0:
                raise _error("INVALID_ARGUMENT", f"table {table.name}: negative count")
            new.counter_packets = entry.counter_data.packet_count
            new.counter_bytes = entry.counter_data.byte_count
        if entry.HasField("meter_config"):
            if not table.direct_meter_id:
                raise _error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct meters")
            config = self._meter_config(entry.meter_config)
            new.meter = self._new_meter_state(runtime)
            self._apply_meter_config(new.meter, config)

    def _new_meter_state(self, runtime):
        from testbed.p4model.runtime.meters import MeterState

        return MeterState(runtime.direct_meter_kind or "packets",
                          getattr(self.pipeline, "clock", None) or runtime.clock)

    def _read_table_entries(self, request: p4runtime_pb2.TableEntry) -> list:
        if request.table_id == 0:
            tables = list(self.info.tables.values())
        else:
            tables = [_Index.get(self.info.tables, request.table_id, "table")]
        out = []
        for table in tables:
            runtime = self._runtime("tables", table.name)
            if request.is_default_action:
                out.append(self._default_entity(table, runtime))
                continue
            if len(request.match):
                match = self._match_key(table, request)
                found = runtime.find(match, request.priority)
                entries = [found] if found is not None else []
            else:
                entries = runtime.entries()
            for e in entries:
                entity = p4runtime_pb2.Entity()
                self._entry_proto(table, e, request, entity.table_entry)
                out.append(entity)
        return out

    def _default_entity(self, table: _Table, runtime) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        te = entity.table_entry
        te.table_id = table.id
        te.is_default_action = True
        if not table.implementation_id:
            te.action.action.CopyFrom(self._action_proto(runtime.default))
        return entity

    def _entry_proto(self, table: _Table, e, request, te: p4runtime_pb2.TableEntry) -> None:
        te.table_id = table.id
        te.match.extend(self._match_protos(table, e.match))
        te.priority = e.priority
        if e.is_const:
            te.is_const = True
        if e.action is not None:
            te.action.action.CopyFrom(self._action_proto(e.action))
        elif e.member_id is not None:
            te.action.action_profile_member_id = e.member_id
        elif e.group_id is not None:
            oneshot = self._oneshot.get((table.id, e.group_id))
            if oneshot is not None:
                te.action.action_profile_action_set.CopyFrom(oneshot)
            else:
                te.action.action_profile_group_id = e.group_id
        if request.HasField("counter_data") and table.direct_counter_id:
            self._counter_data(te.counter_data, table.direct_counter_id, e.counter_packets,
                               e.counter_bytes, direct=True)
        if request.HasField("meter_config") and table.direct_meter_id and e.meter is not None:
            config = self._meter_state_config(e.meter)
            if config is not None:
                self._set_meter_proto(te.meter_config, config)

    # -- one-shot action selector programming --------------------------------------

    def _set_profile_mode(self, profile, mode: str) -> None:
        """PI runs an action profile either with members/groups written by the
        controller or with one-shot action sets, never both."""
        current = self._profile_mode.get(profile.preamble.id)
        if current is not None and current != mode:
            raise _error("INVALID_ARGUMENT", f"action profile {profile.preamble.name} is "
                                             f"programmed with {current} writes; it cannot also "
                                             f"take {mode} ones")

    def _check_action_set(self, table: _Table, profile, action_set) -> None:
        self._set_profile_mode(profile, "one-shot")
        if not len(action_set.action_profile_actions):
            raise _error("INVALID_ARGUMENT", f"table {table.name}: empty action profile action set")
        for apa in action_set.action_profile_actions:
            _check_weight(apa.weight, f"table {table.name}")
            if apa.WhichOneof("watch_kind") is not None:
                raise _error("UNIMPLEMENTED", f"table {table.name}: watch ports are not supported")
            self._check_table_action(table, apa.action.action_id, default=False)
            self._action_call(apa.action, f"table {table.name}")
        count = len(action_set.action_profile_actions)
        if profile.max_group_size and count > profile.max_group_size:
            raise _error("RESOURCE_EXHAUSTED", f"table {table.name}: one-shot group of {count} "
                                               f"exceeds max_group_size {profile.max_group_size}")

    def _install_oneshot(self, table: _Table, action_set, new) -> None:
        """Create the hidden members and group of a (validated) one-shot entry."""
        profile = self.info.action_profiles[table.implementation_id]
        runtime = self._runtime("action_profiles", profile.preamble.name)
        member_ids = []
        for apa in action_set.action_profile_actions:
            member_id = self._hidden_id()
            runtime.insert_member(member_id, self._action_call(apa.action, f"table {table.name}"))
            member_ids.append(member_id)
        group_id = self._hidden_id()
        runtime.insert_group(group_id, member_ids, 0)
        new.group_id = group_id
        stored = p4runtime_pb2.ActionProfileActionSet()
        stored.CopyFrom(action_set)
        for apa in stored.action_profile_actions:
            self._canonical_action(apa.action)
        self._oneshot[(table.id, group_id)] = stored
        self._profile_mode[profile.preamble.id] = "one-shot"

    def _forget_oneshot(self, table: _Table, group_id) -> None:
        """Remove the hidden group (and its members) an entry no longer uses."""
        if group_id is None or (table.id, group_id) not in self._oneshot:
            return
        del self._oneshot[(table.id, group_id)]
        profile = self.info.action_profiles[table.implementation_id]
        runtime = self._runtime("action_profiles", profile.preamble.name)
        members = list(runtime.groups.get(group_id, ()))
        runtime.delete_group(group_id)
        for member_id in sorted(set(members)):
            runtime.delete_member(member_id)

    def _hidden_id(self) -> int:
        self._next_hidden_id += 1
        return self._next_hidden_id

    # -- action profiles -------------------------------------------------------------

    def _profile(self, profile_id: int):
        profile = _Index.get(self.info.action_profiles, profile_id, "action profile")
        return profile, self._runtime("action_profiles", profile.preamble.name)

    def _profile_tables(self, profile) -> list:
        return [self.info.tables[t] for t in profile.table_ids if t in self.info.tables]

    def _write_member(self, kind: int, member: p4runtime_pb2.ActionProfileMember) -> None:
        profile, runtime = self._profile(member.action_profile_id)
        self._set_profile_mode(profile, "member/group")
        members = self._members[profile.preamble.id]
        name = profile.preamble.name
        exists = member.member_id in members
        if kind == _DELETE:
            if not exists:
                raise _error("NOT_FOUND", f"action profile {name}: member {member.member_id} "
                                          f"does not exist")
            if self._member_in_use(profile, member.member_id):
                raise _error("FAILED_PRECONDITION", f"action profile {name}: member "
                                                    f"{member.member_id} is still used by a "
                                                    f"group or a table entry")
            runtime.delete_member(member.member_id)
            del members[member.member_id]
            return
        if kind == _INSERT and exists:
            raise _error("ALREADY_EXISTS", f"action profile {name}: member {member.member_id} "
                                           f"already exists")
        if kind == _MODIFY and not exists:
            raise _error("NOT_FOUND", f"action profile {name}: member {member.member_id} "
                                      f"does not exist")
        if kind == _INSERT and len(members) >= (profile.size or 1 << 62):
            raise _error("RESOURCE_EXHAUSTED", f"action profile {name} is full "
                                               f"({profile.size} members)")
        action_id = member.action.action_id
        _Index.get(self.info.actions, action_id, "action")
        for table in self._profile_tables(profile):
            if action_id not in table.action_scopes:
                raise _error("INVALID_ARGUMENT", f"action profile {name}: action "
                                                 f"{self.info.actions[action_id].name} is not an "
                                                 f"action of table {table.name}")
        call = self._action_call(member.action, f"action profile {name}")
        if kind == _INSERT:
            runtime.insert_member(member.member_id, call)
        else:
            runtime.modify_member(member.member_id, call)
        stored = p4runtime_pb2.ActionProfileMember()
        stored.CopyFrom(member)
        members[member.member_id] = stored
        self._profile_mode[profile.preamble.id] = "member/group"

    def _member_in_use(self, profile, member_id: int) -> bool:
        for group in self._groups[profile.preamble.id].values():
            if any(m.member_id == member_id for m in group.members):
                return True
        for table in self._profile_tables(profile):
            for e in self._runtime("tables", table.name).entries():
                if e.member_id == member_id:
                    return True
        return False

    def _write_group(self, kind: int, group: p4runtime_pb2.ActionProfileGroup) -> None:
        profile, runtime = self._profile(group.action_profile_id)
        self._set_profile_mode(profile, "member/group")
        name = profile.preamble.name
        if not profile.with_selector:
            raise _error("INVALID_ARGUMENT", f"action profile {name} has no selector, so no "
                                             f"groups")
        groups = self._groups[profile.preamble.id]
        exists = group.group_id in groups
        if kind == _DELETE:
            if not exists:
                raise _error("NOT_FOUND", f"action profile {name}: group {group.group_id} does "
                                          f"not exist")
            for table in self._profile_tables(profile):
                if any(e.group_id == group.group_id
                       for e in self._runtime("tables", table.name).entries()):
                    raise _error("FAILED_PRECONDITION", f"action profile {name}: group "
                                                        f"{group.group_id} is still used by a "
                                                        f"table entry")
            runtime.delete_group(group.group_id)
            del groups[group.group_id]
            return
        if kind == _INSERT and exists:
            raise _error("ALREADY_EXISTS", f"action profile {name}: group {group.group_id} "
                                           f"already exists")
        if kind == _MODIFY and not exists:
            raise _error("NOT_FOUND", f"action profile {name}: group {group.group_id} does not "
                                      f"exist")
        if group.max_size < 0:
            raise _error("INVALID_ARGUMENT", f"action profile {name}: negative max_size")
        if profile.max_group_size and group.max_size > profile.max_group_size:
            raise _error("RESOURCE_EXHAUSTED", f"action profile {name}: max_size "
                                               f"{group.max_size} exceeds max_group_size "
                                               f"{profile.max_group_size}")
        member_ids, seen = [], set()
        for m in group.members:
            if m.member_id not in self._members[profile.preamble.id]:
                raise _error("NOT_FOUND", f"action profile {name}: group {group.group_id} uses "
                                          f"member {m.member_id}, which does not exist")
            if m.member_id in seen:
                raise _error("INVALID_ARGUMENT", f"action profile {name}: member {m.member_id} "
                                                 f"listed twice in group {group.group_id}")
            _check_weight(m.weight, f"action profile {name}, group {group.group_id}, member "
                                    f"{m.member_id}")
            if m.WhichOneof("watch_kind") is not None:
                raise _error("UNIMPLEMENTED", f"action profile {name}: watch ports are not "
                                              f"supported")
            seen.add(m.member_id)
            member_ids.append(m.member_id)
        limit = group.max_size or profile.max_group_size
        if limit and len(member_ids) > limit:
            raise _error("RESOURCE_EXHAUSTED", f"action profile {name}: group {group.group_id} "
                                               f"has {len(member_ids)} members, more than its "
                                               f"maximum {limit}")
        if kind == _INSERT:
            runtime.insert_group(group.group_id, member_ids, group.max_size)
        else:
            runtime.modify_group(group.group_id, member_ids, group.max_size)
        stored = p4runtime_pb2.ActionProfileGroup()
        stored.CopyFrom(group)
        groups[group.group_id] = stored

    def _read_members(self, request: p4runtime_pb2.ActionProfileMember) -> list:
        out = []
        for profile in self._profiles_for(request.action_profile_id):
            for member_id, member in self._members[profile.preamble.id].items():
                if request.member_id and request.member_id != member_id:
                    continue
                entity = p4runtime_pb2.Entity()
                entity.action_profile_member.CopyFrom(member)
                self._canonical_action(entity.action_profile_member.action)
                out.append(entity)
        return out

    def _read_groups(self, request: p4runtime_pb2.ActionProfileGroup) -> list:
        out = []
        for profile in self._profiles_for(request.action_profile_id):
            for group_id, group in self._groups[profile.preamble.id].items():
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
        if profile_id == 0:
            return list(self.info.action_profiles.values())
        return [_Index.get(self.info.action_profiles, profile_id, "action profile")]

    def _canonical_action(self, action: p4runtime_pb2.Action) -> None:
        info = self.info.actions[action.action_id]
        values = {p.param_id: int.from_bytes(p.value, "big") for p in action.params}
        del action.params[:]
        for param in info.params:
            action.params.add(param_id=param.id, value=encode_value(values[param.id]))

    # -- counters ----------------------------------------------------------------------

    def _counter_data(self, data: p4runtime_pb2.CounterData, counter_id: int, packets: int,
                      nbytes: int, direct: bool) -> None:
        spec = (self.info.direct_counters if direct else self.info.counters)[counter_id].spec
        if spec.unit in (p4info_pb2.CounterSpec.PACKETS, p4info_pb2.CounterSpec.BOTH):
            data.packet_count = packets
        if spec.unit in (p4info_pb2.CounterSpec.BYTES, p4info_pb2.CounterSpec.BOTH):
            data.byte_count = nbytes

    @staticmethod
    def _indices(entry, size: int, what: str, write: bool) -> range:
        """The cells an index selects: one, or all when it is unset."""
        if not entry.HasField("index"):
            return range(size)
        index = entry.index.index
        if index < 0:
            raise _error("INVALID_ARGUMENT", f"{what}: A negative number is not a valid index "
                                             f"value")
        if index >= size:
            raise _error("OUT_OF_RANGE", f"{what}: index {index} is out of range (size {size})")
        return range(index, index + 1)

    def _write_counter(self, kind: int, entry: p4runtime_pb2.CounterEntry) -> None:
        counter = _Index.get(self.info.counters, entry.counter_id, "counter")
        name = counter.preamble.name
        if kind == _INSERT:
            raise _error("INVALID_ARGUMENT", f"counter {name}: INSERT update type not "
                                             f"supported for counters")
        cells = self._indices(entry, counter.size, f"counter {name}", write=True)
        runtime = self._runtime("counters", name)
        packets = entry.data.packet_count if kind == _MODIFY else 0
        nbytes = entry.data.byte_count if kind == _MODIFY else 0
        if packets < 0 or nbytes < 0:
            raise _error("INVALID_ARGUMENT", f"counter {name}: negative count")
        for i in cells:
            runtime.packets[i] = packets
            runtime.bytes[i] = nbytes

    def _read_counters(self, request: p4runtime_pb2.CounterEntry) -> list:
        return self._encode_counters(self._counter_values(request))

    def _counter_values(self, request: p4runtime_pb2.CounterEntry) -> list[tuple[int, int, int, int]]:
        """(counter id, index, packets, bytes) of every cell the request selects."""
        if request.counter_id == 0:
            counters = list(self.info.counters.values())
        else:
            counters = [_Index.get(self.info.counters, request.counter_id, "counter")]
        out = []
        for counter in counters:
            runtime = self._runtime("counters", counter.preamble.name)
            cid = counter.preamble.id
            for i in self._indices(request, counter.size, f"counter {counter.preamble.name}",
                                   write=False):
                out.append((cid, i, runtime.packets[i], runtime.bytes[i]))
        return out

    def _encode_counters(self, values) -> list:
        out = []
        for cid, i, packets, nbytes in values:
            entity = p4runtime_pb2.Entity()
            ce = entity.counter_entry
            ce.counter_id = cid
            ce.index.index = i
            self._counter_data(ce.data, cid, packets, nbytes, direct=False)
            out.append(entity)
        return out

    def _direct_target(self, entry, kind_name: str):
        """(table, runtime table, runtime entry) a Direct*Entry addresses."""
        if not entry.HasField("table_entry"):
            raise _error("INVALID_ARGUMENT", f"Missing table_entry field in Direct{kind_name}Entry")
        te = entry.table_entry
        table = _Index.get(self.info.tables, te.table_id, "table")
        resource = table.direct_counter_id if kind_name == "Counter" else table.direct_meter_id
        if not resource:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct "
                                             f"{kind_name.lower()}s")
        if te.is_default_action:
            raise _error("UNIMPLEMENTED", f"table {table.name}: direct {kind_name.lower()}s of "
                                          f"the default entry are not supported")
        runtime = self._runtime("tables", table.name)
        match = self._match_key(table, te)
        found = runtime.find(match, te.priority)
        if found is None:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Cannot map table entry to "
                                             f"handle (no such entry)")
        return table, runtime, found

    def _write_direct_counter(self, kind: int, entry: p4runtime_pb2.DirectCounterEntry) -> None:
        if kind == _INSERT:
            raise _error("INVALID_ARGUMENT", "INSERT update type not supported for counters")
        table, _runtime, found = self._direct_target(entry, "Counter")
        packets = entry.data.packet_count if kind == _MODIFY else 0
        nbytes = entry.data.byte_count if kind == _MODIFY else 0
        if packets < 0 or nbytes < 0:
            raise _error("INVALID_ARGUMENT", f"table {table.name}: negative count")
        found.counter_packets, found.counter_bytes = packets, nbytes

    def _direct_read_entries(self, request, kind: str) -> tuple:
        """The table and entries a direct counter/meter read names (`kind` is
        'Counter' or 'Meter'): one entry, or every entry of one table."""
        if not request.HasField("table_entry"):
            raise _error("INVALID_ARGUMENT", f"Missing table_entry field in Direct{kind}Entry")
        te = request.table_entry
        if te.table_id == 0:
            raise _error("UNIMPLEMENTED", f"Reading all direct {kind.lower()}s for ALL tables is not "
                                          "supported yet")
        if len(te.match) or te.is_default_action:
            table, _runtime, found = self._direct_target(request, kind)
            return table, [found]
        table = _Index.get(self.info.tables, te.table_id, "table")
        if not (table.direct_counter_id if kind == "Counter" else table.direct_meter_id):
            raise _error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct {kind.lower()}s")
        return table, self._runtime("tables", table.name).entries()

    def _read_direct_counters(self, request: p4runtime_pb2.DirectCounterEntry) -> list:
        table, entries = self._direct_read_entries(request, "Counter")
        out = []
        for e in entries:
            entity = p4runtime_pb2.Entity()
            dce = entity.direct_counter_entry
            dce.table_entry.table_id = table.id
            dce.table_entry.match.extend(self._match_protos(table, e.match))
            dce.table_entry.priority = e.priority
            self._counter_data(dce.data, table.direct_counter_id, e.counter_packets,
                               e.counter_bytes, direct=True)
            out.append(entity)
        return out

    # -- meters -------------------------------------------------------------------------

    @staticmethod
    def _meter_config(config: p4runtime_pb2.MeterConfig):
        """(cir, cburst, pir, pburst), or None for "unconfigured" (PI keeps -1
        as the old spelling of an always-green meter)."""
        values = (config.cir, config.cburst, config.pir, config.pburst)
        if any(v < -1 for v in values):
            raise _error("INVALID_ARGUMENT", "Negative meter rate or burst")
        if -1 in values:
            return None
        if config.cburst > 0xFFFFFFFF or config.pburst > 0xFFFFFFFF:
            raise _error("UNIMPLEMENTED", "meter burst too large")
        return values

    @staticmethod
    def _set_meter_proto(proto: p4runtime_pb2.MeterConfig, config) -> None:
        proto.cir, proto.cburst, proto.pir, proto.pburst = config

    @staticmethod
    def _apply_meter_config(meter, config) -> None:
        if config is None:
            meter.reset_config()
        else:
            meter.set_config(*config)

    @staticmethod
    def _meter_state_config(meter):
        return meter.get_config()

    def _write_meter(self, kind: int, entry: p4runtime_pb2.MeterEntry) -> None:
        meter = _Index.get(self.info.meters, entry.meter_id, "meter")
        name = meter.preamble.name
        if kind != _MODIFY:
            raise _error("INVALID_ARGUMENT", f"meter {name}: "
                                             f"{'INSERT' if kind == _INSERT else 'DELETE'} update "
                                             f"type not supported for meters")
        cells = self._indices(entry, meter.size, f"meter {name}", write=True)
        config = self._meter_config(entry.config) if entry.HasField("config") else None
        runtime = self._runtime("meters", name)
        for i in cells:
            if config is None:
                runtime.reset_config(i)
            else:
                runtime.set_config(i, *config)

    def _read_meters(self, request: p4runtime_pb2.MeterEntry) -> list:
        if request.meter_id == 0:
            meters = list(self.info.meters.values())
        else:
            meters = [_Index.get(self.info.meters, request.meter_id, "meter")]
        out = []
        for meter in meters:
            runtime = self._runtime("meters", meter.preamble.name)
            for i in self._indices(request, meter.size, f"meter {meter.preamble.name}",
                                   write=False):
                entity = p4runtime_pb2.Entity()
                me = entity.meter_entry
                me.meter_id = meter.preamble.id
                me.index.index = i
                config = runtime.get_config(i)
                if config is not None:
                    self._set_meter_proto(me.config, config)
                out.append(entity)
        return out

    def _write_direct_meter(self, kind: int, entry: p4runtime_pb2.DirectMeterEntry) -> None:
        if kind != _MODIFY:
            raise _error("INVALID_ARGUMENT", f"{'INSERT' if kind == _INSERT else 'DELETE'} "
                                             f"update type not supported for meters")
        table, runtime, found = self._direct_target(entry, "Meter")
        config = self._meter_config(entry.config) if entry.HasField("config") else None
        if found.meter is None:
            found.meter = self._new_meter_state(runtime)
        self._apply_meter_config(found.meter, config)

    def _read_direct_meters(self, request: p4runtime_pb2.DirectMeterEntry) -> list:
        table, entries = self._direct_read_entries(request, "Meter")
        out = []
        for e in entries:
            entity = p4runtime_pb2.Entity()
            dme = entity.direct_meter_entry
            dme.table_entry.table_id = table.id
            dme.table_entry.match.extend(self._match_protos(table, e.match))
            dme.table_entry.priority = e.priority
            config = e.meter.get_config() if e.meter is not None else None
            if config is not None:
                self._set_meter_proto(dme.config, config)
            out.append(entity)
        return out

    # -- registers ------------------------------------------------------------------------

    def _write_register(self, kind: int, entry: p4runtime_pb2.RegisterEntry) -> None:
        register = _Index.get(self.info.registers, entry.register_id, "register")
        name = register.preamble.name
        if kind != _MODIFY:
            raise _error("INVALID_ARGUMENT", f"register {name}: "
                                             f"{'INSERT' if kind == _INSERT else 'DELETE'} update "
                                             f"type not supported for registers")
        width = _register_width(register)
        cells = self._indices(entry, register.size, f"register {name}", write=True)
        if entry.data.WhichOneof("data") != "bitstring":
            raise _error("INVALID_ARGUMENT", f"register {name}: data must be a bitstring")
        value = decode_value(entry.data.bitstring, width, f"register {name}")
        runtime = self._runtime("registers", name)
        for i in cells:
            runtime.write(i, value)

    def _read_registers(self, request: p4runtime_pb2.RegisterEntry) -> list:
        return self._encode_registers(self._register_values(request))

    def _register_values(self, request: p4runtime_pb2.RegisterEntry) -> list[tuple[int, int, int]]:
        """(register id, index, value) of every cell the request selects."""
        if request.register_id == 0:
            registers = list(self.info.registers.values())
        else:
            registers = [_Index.get(self.info.registers, request.register_id, "register")]
        out = []
        for register in registers:
            runtime = self._runtime("registers", register.preamble.name)
            mask = (1 << _register_width(register)) - 1
            rid = register.preamble.id
            for i in self._indices(request, register.size, f"register {register.preamble.name}",
                                   write=False):
                out.append((rid, i, runtime.values[i] & mask))
        return out

    @staticmethod
    def _encode_registers(values) -> list:
        out = []
        for rid, i, value in values:
            entity = p4runtime_pb2.Entity()
            re_ = entity.register_entry
            re_.register_id = rid
            re_.index.index = i
            re_.data.bitstring = encode_value(value)
            out.append(entity)
        return out

    # -- packet replication engine -----------------------------------------------------------

    @staticmethod
    def _replicas(replicas, what: str) -> list:
        out, seen = [], set()
        for r in replicas:
            if r.WhichOneof("port_kind") == "port":
                if not r.port:
                    raise _error("INVALID_ARGUMENT", f"{what}: Port must not be the empty string")
                if len(r.port) > 4:
                    raise _error("UNIMPLEMENTED", f"{what}: only 4-byte ports are supported")
                port = int.from_bytes(r.port, "big")
            else:
                port = r.egress_port
            if (r.instance, port) in seen:
                raise _error("INVALID_ARGUMENT", f"{what}: duplicate replica (instance "
                                                 f"{r.instance}, port {port})")
            seen.add((r.instance, port))
            out.append((r.instance, port))
        return out

    def _write_pre(self, kind: int, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        which = entry.WhichOneof("type")
        pre = getattr(self.pipeline, "pre")
        if which == "multicast_group_entry":
            group = entry.multicast_group_entry
            gid = group.multicast_group_id
            if gid == 0:
                raise _error("INVALID_ARGUMENT", "0 is not a valid group id")
            if gid >= _FIRST_RESERVED_GROUP:
                raise _error("OUT_OF_RANGE", f"multicast group id {gid} is too high (at most "
                                             f"{_FIRST_RESERVED_GROUP - 1})")
            exists = gid in self._mc_groups
            if kind == _DELETE:
                if not exists:
                    raise _error("NOT_FOUND", f"multicast group {gid} does not exist")
                pre.delete_group(gid)
                del self._mc_groups[gid]
                return
            if kind == _INSERT and exists:
                raise _error("ALREADY_EXISTS", f"multicast group {gid} already exists")
            if kind == _MODIFY and not exists:
                raise _error("NOT_FOUND", f"multicast group {gid} does not exist")
            replicas = self._replicas(group.replicas, f"multicast group {gid}")
            (pre.insert_group if kind == _INSERT else pre.modify_group)(gid, replicas)
            stored = p4runtime_pb2.MulticastGroupEntry()
            stored.CopyFrom(group)
            self._mc_groups[gid] = stored
        elif which == "clone_session_entry":
            session = entry.clone_session_entry
            sid = session.session_id
            if sid == 0:
                raise _error("INVALID_ARGUMENT", "0 is not a valid session id")
            exists = sid in self._clone_sessions
            if kind == _DELETE:
                if not exists:
                    raise _error("NOT_FOUND", f"clone session {sid} does not exist")
                pre.delete_clone_session(sid)
                del self._clone_sessions[sid]
                return
            if kind == _INSERT and exists:
                raise _error("ALREADY_EXISTS", f"clone session {sid} already exists")
            if kind == _MODIFY and not exists:
                raise _error("NOT_FOUND", f"clone session {sid} does not exist")
            if session.packet_length_bytes < 0:
                raise _error("INVALID_ARGUMENT", f"clone session {sid}: negative "
                                                 f"packet_length_bytes")
            replicas = self._replicas(session.replicas, f"clone session {sid}")
            (pre.insert_clone_session if kind == _INSERT else pre.modify_clone_session)(
                sid, replicas, session.class_of_service, session.packet_length_bytes)
            stored = p4runtime_pb2.CloneSessionEntry()
            stored.CopyFrom(session)
            self._clone_sessions[sid] = stored
        else:
            raise _error("INVALID_ARGUMENT", "Invalid PRE operation")

    def _read_pre(self, request: p4runtime_pb2.PacketReplicationEngineEntry) -> list:
        which = request.WhichOneof("type")
        out = []
        if which == "multicast_group_entry":
            gid = request.multicast_group_entry.multicast_group_id
            if gid >= _FIRST_RESERVED_GROUP:
                raise _error("OUT_OF_RANGE", f"multicast group id {gid} is too high")
            if gid and gid not in self._mc_groups:
                raise _error("NOT_FOUND", f"multicast group {gid} does not exist")
            for key in sorted(self._mc_groups) if not gid else [gid]:
                entity = p4runtime_pb2.Entity()
                entity.packet_replication_engine_entry.multicast_group_entry.CopyFrom(
                    self._mc_groups[key])
                out.append(entity)
        elif which == "clone_session_entry":
            sid = request.clone_session_entry.session_id
            if sid and sid not in self._clone_sessions:
                raise _error("NOT_FOUND", f"clone session {sid} does not exist")
            for key in sorted(self._clone_sessions) if not sid else [sid]:
                entity = p4runtime_pb2.Entity()
                entity.packet_replication_engine_entry.clone_session_entry.CopyFrom(
                    self._clone_sessions[key])
                out.append(entity)
        else:
            raise _error("INVALID_ARGUMENT", "Invalid PRE operation")
        return out

    # -- value sets --------------------------------------------------------------------------

    def _write_value_set(self, kind: int, entry: p4runtime_pb2.ValueSetEntry) -> None:
        vs = _Index.get(self.info.value_sets, entry.value_set_id, "value set")
        name = vs.preamble.name
        if kind != _MODIFY:
            raise _error("INVALID_ARGUMENT", f"value set {name}: only MODIFY is allowed for "
                                             f"value sets")
        if len(entry.members) > vs.size:
            raise _error("RESOURCE_EXHAUSTED", f"value set {name} holds at most {vs.size} "
                                               f"members, got {len(entry.members)}")
        fields = [_Field(mf.id, mf.name, _MATCH_KINDS.get(mf.match_type, "exact"), mf.bitwidth)
                  for mf in vs.match]
        pseudo = _Table(id=vs.preamble.id, name=f"value set {name}", fields=fields,
                        field_by_id={f.id: f for f in fields}, action_scopes={},
                        const_default_action_id=0, implementation_id=0, direct_counter_id=0,
                        direct_meter_id=0, is_const=False, size=vs.size, needs_priority=False,
                        positions=list(range(len(fields))))
        members = []
        for member in entry.members:
            holder = p4runtime_pb2.TableEntry(match=member.match)
            members.append(self._match_key(pseudo, holder))
        flat = [_flatten_member(pseudo, m) for m in members]
        runtime = self._runtime("value_sets", name)
        runtime.clear()
        for value, mask in flat:
            runtime.add(value, mask)
        self._value_sets[vs.preamble.id] = [(pseudo, m) for m in members]

    def _read_value_sets(self, request: p4runtime_pb2.ValueSetEntry) -> list:
        ids = [request.value_set_id] if request.value_set_id else sorted(self.info.value_sets)
        out = []
        for vs_id in ids:
            _Index.get(self.info.value_sets, vs_id, "value set")
            entity = p4runtime_pb2.Entity()
            entity.value_set_entry.value_set_id = vs_id
            for pseudo, match in self._value_sets[vs_id]:
                entity.value_set_entry.members.add().match.extend(
                    self._match_protos(pseudo, match))
            out.append(entity)
        return out

    # -- digests -------------------------------------------------------------------------------

    def _write_digest(self, kind: int, entry: p4runtime_pb2.DigestEntry) -> None:
        digest = _Index.get(self.info.digests, entry.digest_id, "digest")
        name = digest.preamble.name
        exists = entry.digest_id in self._digest_configs
        if kind == _DELETE:
            if not exists:
                raise _error("NOT_FOUND", f"digest {name} is not configured")
            del self._digest_configs[entry.digest_id]
            return
        if kind == _INSERT and exists:
            raise _error("ALREADY_EXISTS", f"digest {name} is already configured")
        if kind == _MODIFY and not exists:
            raise _error("NOT_FOUND", f"digest {name} is not configured")
        if not entry.HasField("config"):
            raise _error("INVALID_ARGUMENT", f"digest {name}: config must be set")
        config = entry.config
        if config.max_timeout_ns < 0 or config.max_list_size < 0 or config.ack_timeout_ns < 0:
            raise _error("INVALID_ARGUMENT", f"digest {name}: negative config value")
        stored = p4runtime_pb2.DigestEntry()
        stored.CopyFrom(entry)
        self._digest_configs[entry.digest_id] = stored

    def digest_config(self, digest_id: int):
        """The DigestEntry.Config a controller set for a digest, or None: the
        P4Runtime server streams a digest's lists only once it is configured."""
        stored = self._digest_configs.get(digest_id)
        return stored.config if stored is not None else None

    def _read_digests(self, request: p4runtime_pb2.DigestEntry) -> list:
        if request.digest_id:
            _Index.get(self.info.digests, request.digest_id, "digest")
            ids = [request.digest_id] if request.digest_id in self._digest_configs else []
        else:
            ids = sorted(self._digest_configs)
        out = []
        for digest_id in ids:
            entity = p4runtime_pb2.Entity()
            entity.digest_entry.CopyFrom(self._digest_configs[digest_id])
            out.append(entity)
        return out
