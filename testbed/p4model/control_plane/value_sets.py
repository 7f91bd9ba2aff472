"""Parser value sets (beyond PI, which answers UNIMPLEMENTED).

Only MODIFY exists: it replaces the whole set.  More members than the set's
size is RESOURCE_EXHAUSTED.  Each member is a match key over the select
keys, checked by the table rules (matches.py); range members are
UNIMPLEMENTED.  The parser compares one (value, mask) over the keys
concatenated, first key most significant.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.context import Context
from testbed.p4model.control_plane.matches import match_key, match_protos
from testbed.p4model.control_plane.p4info_index import (
    MATCH_KINDS, MODIFY, Field, Index, Table, error)


def flatten_member(pseudo: Table, match: tuple) -> tuple:
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
            raise error("UNIMPLEMENTED", f"{pseudo.name}: range members are not supported")
        value = (value << f.width) | v
        mask = (mask << f.width) | m
    return value, mask


class ValueSets:
    """ValueSetEntry writes and reads; the members are kept as written, for reads."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.members: dict[int, list] = {vs: [] for vs in ctx.info.value_sets}

    def write(self, kind: int, entry: p4runtime_pb2.ValueSetEntry) -> None:
        vs = Index.get(self.ctx.info.value_sets, entry.value_set_id, "value set")
        name = vs.preamble.name
        if kind != MODIFY:
            raise error("INVALID_ARGUMENT", f"value set {name}: only MODIFY is allowed for "
                                            f"value sets")
        if len(entry.members) > vs.size:
            raise error("RESOURCE_EXHAUSTED", f"value set {name} holds at most {vs.size} "
                                              f"members, got {len(entry.members)}")
        fields = [Field(mf.id, mf.name, MATCH_KINDS.get(mf.match_type, "exact"), mf.bitwidth)
                  for mf in vs.match]
        pseudo = Table(id=vs.preamble.id, name=f"value set {name}", fields=fields,
                       field_by_id={f.id: f for f in fields}, action_scopes={},
                       const_default_action_id=0, implementation_id=0, direct_counter_id=0,
                       direct_meter_id=0, is_const=False, size=vs.size, needs_priority=False,
                       positions=list(range(len(fields))))
        members = []
        for member in entry.members:
            holder = p4runtime_pb2.TableEntry(match=member.match)
            members.append(match_key(pseudo, holder))
        flat = [flatten_member(pseudo, m) for m in members]
        runtime = self.ctx.runtime("value_sets", name)
        runtime.clear()
        for value, mask in flat:
            runtime.add(value, mask)
        self.members[vs.preamble.id] = [(pseudo, m) for m in members]

    def read(self, request: p4runtime_pb2.ValueSetEntry) -> list:
        ids = [request.value_set_id] if request.value_set_id else sorted(self.ctx.info.value_sets)
        out = []
        for vs_id in ids:
            Index.get(self.ctx.info.value_sets, vs_id, "value set")
            entity = p4runtime_pb2.Entity()
            entity.value_set_entry.value_set_id = vs_id
            for pseudo, match in self.members[vs_id]:
                entity.value_set_entry.members.add().match.extend(match_protos(pseudo, match))
            out.append(entity)
        return out
