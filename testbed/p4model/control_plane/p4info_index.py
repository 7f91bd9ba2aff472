"""What a P4Info says, indexed once, and the byte strings of P4Runtime values.

Every handler of the control plane looks ids up here.  An id the P4Info does
not list is INVALID_ARGUMENT ("Invalid P4 id"), as PI answers.  Values travel
as big-endian byte strings: any length is accepted if the value fits the
field's width, and reads give the canonical string (no leading zero bytes,
zero as one zero byte).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.tables import ERROR_FIELD_WIDTH

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE

MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}


def error(code: str, message: str) -> ControlPlaneError:
    return ControlPlaneError(code, message)


def kind_name(kind: int) -> str:
    """'INSERT' or 'DELETE', for the refusals of an update type."""
    return "INSERT" if kind == INSERT else "DELETE"


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
        raise error("INVALID_ARGUMENT",
                    f"{what}: value 0x{data.hex()} does not fit in {width} bits")
    return value


@dataclass
class Field:
    id: int
    name: str
    kind: str          # exact | lpm | ternary | range | optional
    width: int


@dataclass
class Action:
    id: int
    name: str
    params: list       # of Field (kind unused)
    param_by_id: dict


@dataclass
class Table:
    id: int
    name: str
    fields: list                 # Field in P4Info order
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


class Index:
    """Ids and names of a P4Info, and its per-table facts."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.actions = {}
        for action in p4info.actions:
            params = [Field(p.id, p.name, "", p.bitwidth) for p in action.params]
            self.actions[action.preamble.id] = Action(
                action.preamble.id, action.preamble.name, params, {p.id: p for p in params})
        self.direct_counters = {c.preamble.id: c for c in p4info.direct_counters}
        self.direct_meters = {m.preamble.id: m for m in p4info.direct_meters}
        self.tables = {}
        for table in p4info.tables:
            fields = []
            for mf in table.match_fields:
                kind = MATCH_KINDS.get(mf.match_type)
                if kind is None:
                    raise error("INVALID_ARGUMENT",
                                f"table {table.preamble.name}: match field {mf.name} has an "
                                f"unsupported match type")
                # no bitwidth: p4c's P4Info for a key of type `error` (tables.ERROR_FIELD_WIDTH)
                fields.append(Field(mf.id, mf.name, kind, mf.bitwidth or ERROR_FIELD_WIDTH))
            counter_id = meter_id = 0
            for rid in table.direct_resource_ids:
                if rid in self.direct_counters:
                    counter_id = rid
                elif rid in self.direct_meters:
                    meter_id = rid
            self.tables[table.preamble.id] = Table(
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
            raise error("INVALID_ARGUMENT", f"Invalid P4 id: no {what} with id {id_}") from None

    def selected(self, kind: dict, id_: int, what: str) -> list:
        """Every object of `kind` for id 0 (a wildcard read), else the one named."""
        if id_ == 0:
            return list(kind.values())
        return [self.get(kind, id_, what)]
