"""Match keys: a P4Runtime entry's FieldMatch list <-> the runtime match tuple.

The rules are PI's.  A don't-care written out (LPM prefix 0, ternary mask 0,
a full range), a missing exact field, value bits outside the mask or prefix,
low > high, and a priority where none belongs (or none where one does) are
INVALID_ARGUMENT.  Reads omit don't-care fields and give canonical bytes.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.p4info_index import (
    Field, Table, decode_value, encode_value, error)


def match_positions(pipeline, table: Table) -> list:
    """Slot of each P4Info match field in the runtime match tuple (which
    holds the table's non-selector keys in key order)."""
    runtime = getattr(pipeline, "tables", {}).get(table.name)
    names = [f.name for f in getattr(runtime, "fields", ()) if f.match_kind != "selector"]
    if sorted(names) == sorted(f.name for f in table.fields) and len(set(names)) == len(names):
        return [names.index(f.name) for f in table.fields]
    return list(range(len(table.fields)))


def match_key(table: Table, entry: p4runtime_pb2.TableEntry) -> tuple:
    """The runtime match tuple of a P4Runtime entry, validated as PI does."""
    given = {}
    for fm in entry.match:
        if fm.field_id in given:
            raise error("INVALID_ARGUMENT", f"table {table.name}: match field id "
                                            f"{fm.field_id} given twice")
        given[fm.field_id] = fm
    unknown = set(given) - set(table.field_by_id)
    if unknown:
        raise error("INVALID_ARGUMENT", f"table {table.name}: Unknown field in match key "
                                        f"(id {min(unknown)})")
    match = [None] * len(table.fields)
    for f, slot in zip(table.fields, table.positions):
        match[slot] = field_value(table, f, given.get(f.id))
    if table.needs_priority and entry.priority == 0:
        raise error("INVALID_ARGUMENT", f"table {table.name}: Zero priority for ternary match")
    if not table.needs_priority and entry.priority != 0:
        raise error("INVALID_ARGUMENT", f"table {table.name}: Non-zero priority for "
                                        f"non-ternary match")
    if entry.priority < 0:
        raise error("INVALID_ARGUMENT", f"table {table.name}: negative priority")
    return tuple(match)


def field_value(table: Table, f: Field, fm):
    """One field's runtime value from its FieldMatch (None: the field was left out)."""
    what = f"table {table.name}, match field {f.name}"
    if fm is None:
        if f.kind == "exact":
            raise error("INVALID_ARGUMENT", f"{what}: Missing non-ternary field in match key")
        return {"lpm": (0, 0), "ternary": (0, 0), "range": (0, (1 << f.width) - 1),
                "optional": None}[f.kind]
    given = fm.WhichOneof("field_match_type")
    if given != f.kind:
        raise error("INVALID_ARGUMENT", f"{what}: Invalid match type {given} "
                                        f"(the field is {f.kind})")
    if f.kind == "exact":
        return decode_value(fm.exact.value, f.width, what)
    if f.kind == "optional":
        return decode_value(fm.optional.value, f.width, what)
    if f.kind == "lpm":
        value = decode_value(fm.lpm.value, f.width, what)
        plen = fm.lpm.prefix_len
        if plen < 0 or plen > f.width:
            raise error("INVALID_ARGUMENT", f"{what}: prefix length {plen} outside "
                                            f"0..{f.width}")
        if plen == 0:
            raise error("INVALID_ARGUMENT", f"{what}: invalid representation of a "
                                            f"don't-care LPM match, omit the field instead "
                                            f"of using a prefix length of 0")
        if value & ((1 << (f.width - plen)) - 1):
            raise error("INVALID_ARGUMENT", f"{what}: Invalid LPM value, incorrect number "
                                            f"of trailing zeros")
        return (value, plen)
    if f.kind == "ternary":
        value = decode_value(fm.ternary.value, f.width, what)
        mask = decode_value(fm.ternary.mask, f.width, what)
        if mask == 0:
            raise error("INVALID_ARGUMENT", f"{what}: invalid representation of a "
                                            f"don't-care ternary match, omit the field "
                                            f"instead of using a 0 mask")
        if value & ~mask:
            raise error("INVALID_ARGUMENT", f"{what}: Invalid ternary value, make sure "
                                            f"value & mask == value")
        return (value, mask)
    low = decode_value(fm.range.low, f.width, what)
    high = decode_value(fm.range.high, f.width, what)
    if low == 0 and high == (1 << f.width) - 1:
        raise error("INVALID_ARGUMENT", f"{what}: invalid representation of a don't-care "
                                        f"range match, omit the field instead")
    if low > high:
        raise error("INVALID_ARGUMENT", f"{what}: Invalid range value, make sure "
                                        f"low <= high")
    return (low, high)


def match_protos(table: Table, match: tuple) -> list:
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
