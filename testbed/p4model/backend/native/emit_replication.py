"""v1model's requests for more copies of a packet -> fields of tb_state the
driver reads after a pass (binding.NativePipeline, as v1model.V1Switch).

Model.  A statement does not copy the packet; it leaves a request in the
packet's tb_state, and the after-ingress / after-egress decisions of the
driver act on it in bmv2's order (v1model.py): clone(type, session) and
clone_preserving_field_list / clone3 set req_clone, clone_session and
clone_fl; resubmit* sets req_resubmit and recirculate* req_recirc to the
field list's id + 1 (0: no request; a later call replaces an earlier one).
Writing standard_metadata.mcast_grp needs nothing here: the field is in
the C standard metadata and the driver reads it after ingress.

A field list says which user metadata (or standard metadata) the new
packet keeps: id 0 keeps nothing (clone, resubmit() without data), an
index (the *_preserving_field_list calls) keeps the fields of the user
metadata annotated @field_list(index) (in nested structs too), a data
argument (clone3, resubmit(data), recirculate(data)) keeps each item that
is a field path of the block's metadata or standard_metadata parameter:
the Python back end's rule (backend/python/program.py field lists).
tb_fl_copy(id, old, new) copies them, values as they are when the
pass ends.  `replication` maps each kind of copy the program can ask for
(multicast: mcast_grp named anywhere; clone, resubmit, recirculate: these
calls) to (loc, construct) of its first request: tb_replicates() tells the
driver, and the fabric engine takes the copy path for a program with
clones, resubmit or recirculation, the replica path for one that only
multicasts (engine/binding.py set_pipeline).

Digests and truncation are requests too, with the Python back end's rules
(digest_call says them)."""

from __future__ import annotations

from testbed.p4model.backend.native.emit_types import scalar_width
from testbed.p4model.backend.native.errors import NativeUnsupported
from testbed.p4model.frontend import ir

# what a digest's data may hold: the Python back end flattens these too, the C layout here does not
_NO_DIGEST = ((ir.UnionT, "a header union"), (ir.StackT, "a header stack"), (ir.ArrayT, "an array"),
              (ir.VarbitT, "a varbit"))

REQUEST_CALLS = ("clone", "clone3", "clone_preserving_field_list", "resubmit", "resubmit_preserving_field_list",
                 "recirculate", "recirculate_preserving_field_list")


class ReplicationMixin:
    """Needs self.field_lists ({key: id}), self.replication, self.meta_t and self.sm_t."""

    def replication_call(self, c) -> bool:
        """C for one of REQUEST_CALLS; False if `c` is not one."""
        if not isinstance(c, ir.ExternFunctionCall) or c.decl.name not in REQUEST_CALLS:
            return False
        name = c.decl.name
        self.replication.setdefault(name.split("_")[0].rstrip("3"), (c.loc, name))
        if name.startswith("clone"):
            if name == "clone":
                fl = 0
            elif name == "clone3":
                fl = self.field_list_from_data(c.args[2])
            else:
                fl = self.field_list_from_index(c.args[2])
            self.emit(f"s->req_clone = 1; s->clone_session = (uint32_t)({self.ex(c.args[1])}); "
                      f"s->clone_fl = {fl};")
            return True
        if name.endswith("_preserving_field_list"):
            fl = self.field_list_from_index(c.args[0])
        else:
            fl = self.field_list_from_data(c.args[0]) if c.args else 0
        self.emit(f"s->{'req_resubmit' if name.startswith('resubmit') else 'req_recirc'} = {fl + 1};")
        return True

    def digest_call(self, c) -> bool:
        """C for truncate() and digest(); False if `c` is neither.

        digest(receiver, data) stores the data's scalar leaves (in order: list items, struct
        fields, a header's fields whether it is valid or not; bool as 0/1, int<W> as its W-bit
        pattern; a leaf over 64 bits as two words, the high one first) in tb_state with its
        layout's id + 1; a later call replaces an earlier one, and the driver pushes what the pass
        holds after each ingress pass, never after egress.  `digests` lists the layouts (digest
        name, leaf widths), the name that of the data's type, as the Python back end names it for
        the P4Runtime DigestList.  truncate(n) sets the pass's limit; the egress control starts
        with none, and the packet leaves cut to the smallest non-zero of the limit ingress set
        (carried by a unicast packet and its multicast replicas), the one egress set and its
        clone session's packet_length_bytes (a clone's), unless it recirculates."""
        if not isinstance(c, ir.ExternFunctionCall) or c.decl.name not in ("truncate", "digest"):
            return False
        if c.decl.name == "truncate":
            self.emit(f"s->truncate = (uint32_t)({self.ex(c.args[0])});")
            return True
        data = c.args[1]
        t = ir.strip_newtype(c.type_args[0] if c.type_args else data.type)
        leaves = self.digest_leaves(data)
        layout = (getattr(t, "name", "digest"), tuple(w for _, w in leaves))
        if layout not in self.digests:
            self.digests.append(layout)
        words = sum(2 if w > 64 else 1 for _, w in leaves)
        self.digest_words = max(self.digest_words, words)
        stores, k = [], 0
        for code, w in leaves:
            if w > 64:
                v = self.fresh("dv")
                stores.append(f"{{ tb_u128 {v} = (tb_u128)({code}); s->digest_w[{k}] = (uint64_t)({v} >> 64); "
                              f"s->digest_w[{k + 1}] = (uint64_t){v}; }}")
                k += 2
            else:
                stores.append(f"s->digest_w[{k}] = (uint64_t)({code});")
                k += 1
        self.emit(f"s->req_digest = {self.digests.index(layout) + 1}; s->digest_n = {words}; " + " ".join(stores))
        return True

    def digest_leaves(self, e) -> list:
        """(C value, width) of each scalar leaf of a digest's data, in the Python back end's order."""
        t = ir.strip_newtype(e.type)
        if isinstance(e, ir.ListExpr):
            return [x for item in e.items for x in self.digest_leaves(item)]
        if isinstance(e, ir.StructExpr):
            return [x for item in e.fields.values() for x in self.digest_leaves(item)]
        for kind, what in _NO_DIGEST:
            if isinstance(t, kind):
                raise NativeUnsupported(e.loc, f"{what} in a digest's data")
        if isinstance(t, (ir.HeaderT, ir.StructT)):
            return [x for f in t.fields for x in self.digest_leaves(ir.Member(e, f.name, type=f.type, loc=e.loc))]
        return [(self.ex(e), scalar_width(t, e.loc))]

    def _field_list_id(self, key) -> int:
        if key not in self.field_lists:
            self.field_lists[key] = len(self.field_lists) + 1
        return self.field_lists[key]

    def field_list_from_index(self, e) -> int:
        if not isinstance(e, ir.Const):
            raise NativeUnsupported(e.loc, "a field list index that is not a constant")
        return self._field_list_id(("index", int(e.value)))

    def field_list_from_data(self, data) -> int:
        items = data.items if isinstance(data, ir.ListExpr) else (
            list(data.fields.values()) if isinstance(data, ir.StructExpr) else [data])
        paths = tuple(p for p in (_meta_path(item) for item in items) if p is not None)
        return self._field_list_id(("paths", paths)) if paths else 0

    def field_list_c(self) -> list[str]:
        """tb_fl_copy: the copies of every field list the program names."""
        out = ["static void tb_fl_copy(uint32_t fl, const tb_state *o, tb_state *n) {",
               "    switch (fl) {"]
        for key, fid in self.field_lists.items():
            if key[0] == "index":
                paths = _annotated(self.meta_t, key[1], ())
                copies = [f"n->meta{p} = o->meta{p};" for p in paths]
            else:
                copies = []
                for root_t, path in key[1]:
                    root = "meta" if root_t is self.meta_t else "sm" if root_t is self.sm_t else None
                    if root is None or not path:
                        continue
                    p = "".join(f".f_{name}" for name in path)
                    copies.append(f"n->{root}{p} = o->{root}{p};")
            out.append(f"    case {fid}: {' '.join(copies)} break;")
        out += ["    default: (void)o; (void)n; break;", "    }", "}"]
        return out


def _meta_path(e):
    """(the root parameter's type, field names) of a field path, or None."""
    names = []
    while isinstance(e, ir.Member):
        names.append(e.name)
        e = e.base
    if not isinstance(e, ir.VarRef) or not isinstance(e.target, ir.Param):
        return None
    return (e.target.type, tuple(reversed(names)))


def _annotated(t, index: int, path: tuple) -> list[str]:
    """C member paths (.f_a.f_b) of the fields of struct `t` annotated @field_list(index)."""
    from testbed.p4model.backend.python.program import ProgramCompiler

    t = ir.strip_newtype(t)
    out: list[str] = []
    if not isinstance(t, ir.StructT):
        return out
    for f in t.fields:
        ann = ir.find_annotation(f.annotations, "field_list")
        p = path + (f.name,)
        if ann is not None and index in ProgramCompiler._ann_ints(ann):
            out.append("".join(f".f_{name}" for name in p))
        elif isinstance(ir.strip_newtype(f.type), ir.StructT):
            out += _annotated(f.type, index, p)
    return out
