"""Tables -> C: one lookup-and-dispatch function per table, one C
function per action (see TableMixin)."""

from __future__ import annotations

from testbed.p4model.backend.native.emit_types import refuse_signed, refuse_wide, scalar_width
from testbed.p4model.backend.native.errors import NativeUnsupported


class TableInfo:
    """What the Python side needs to fill a C table: its id, P4 name, the
    match kinds and widths of its keys, its actions' control-plane names
    in C action-index order, and the row stride in uint64 words:
    2 per key slot (value, mask; lo, hi for range), 1 action index, max_args.
    A key is one slot per 64 bits of its width (a bit<128> key two, the
    high word first); range keys are at most 64 bits."""

    def __init__(self, tid: int, decl, kinds: list, widths: list, actions: list, max_args: int):
        self.tid, self.decl, self.kinds, self.widths = tid, decl, kinds, widths
        self.actions, self.max_args = actions, max_args
        self.slots = sum(key_slots(w) for w in widths)
        self.stride = 2 * self.slots + 1 + max_args


def key_slots(width: int) -> int:
    """The uint64 slots of a key of `width` bits."""
    return max(1, (width + 63) // 64)


def _swap(emitter, lines):
    saved = emitter.lines, emitter.depth
    emitter.lines, emitter.depth = lines, 1
    return saved


class TableMixin:
    """Tables: a C table is an array of rows in precedence order (the first
    row that matches wins; binding.NativeTable orders them as the Python
    target ranks entries) and a default action row.  A key matches a row
    when (key & mask) == value for exact/lpm/ternary/optional, and
    lo <= key <= hi for range.  Action profiles, direct counters and meters,
    are refused.  An action's directional parameters, bound in the table's
    action list (`actions = { a(hdr.x) }`), are copied in and out around the
    action as for a direct call (CodeEmitter.copy_in)."""

    def table(self, t) -> None:
        from testbed.p4model.runtime import tableinfo
        if t.implementation is not None:
            raise NativeUnsupported(t.loc, f"the implementation (action profile) of table {t.name}")
        if t.counters is not None or t.meters is not None:
            raise NativeUnsupported(t.loc, f"direct counters/meters of table {t.name}")
        if id(t) in self.table_fn:
            raise NativeUnsupported(t.loc, f"table {t.name} in a control instantiated twice")
        kinds, widths, keys = [], [], []
        for k in t.keys:
            if k.match_kind not in ("exact", "lpm", "ternary", "range", "optional"):
                raise NativeUnsupported(k.loc or t.loc, f"match kind {k.match_kind}")
            kinds.append(k.match_kind)
            widths.append(scalar_width(k.expr.type, k.loc or t.loc))
            refuse_signed(k.expr.type, k.loc or t.loc, f"a key of table {t.name}")
            if k.match_kind == "range":
                refuse_wide(k.expr.type, k.loc or t.loc, f"the range key of table {t.name}")
            keys.append(k.expr)
        refs = tableinfo.action_refs(t)
        tid = len(self.tables)
        names, fns = [], []
        max_args = 0
        for ref in refs:
            if len(ref.args) != len([p for p in ref.action.params if p.direction]):
                raise NativeUnsupported(ref.loc or t.loc, f"action {ref.action.name} bound to arguments other "
                                        f"than its directional ones in table {t.name}")
            fn = self.action(ref.action, t)
            names.append(ref.action.cp_name)
            fns.append(fn)
            max_args = max(max_args, len(ref.action.params))
        if max_args > 64:
            raise NativeUnsupported(t.loc, f"actions of table {t.name} with more than 64 parameters")
        info = TableInfo(tid, t, kinds, widths, names, max_args)
        self.tables.append(info)
        fn = f"t{tid}_{_ident(t.name)}"
        self.table_fn[id(t)] = fn
        lines: list[str] = []
        saved = _swap(self, lines)
        lines.append(f"static int {fn}(tb_state *s, uint32_t drop_port) {{")
        n = info.slots
        if n:
            words = []
            for x, w in zip(keys, widths):
                code = self.ex(x)
                # a wide key: its 64-bit words, the high one first
                words += [f"(uint64_t)(({code}) >> {64 * j})" for j in reversed(range(key_slots(w)))] \
                    if w > 64 else [code]
            self.emit(f"uint64_t k[{n}] = {{{', '.join(words)}}};")
        else:
            self.emit("const uint64_t *k = 0;")
        slot_kinds = [str(int(x == 'range')) for x, w in zip(kinds, widths) for _ in range(key_slots(w))]
        self.emit(f"static const uint8_t kinds[{max(n, 1)}] = {{{', '.join(slot_kinds) or '0'}}};")
        self.emit(f"const uint64_t *row = tb_lookup(&s->inst->tables[{tid}], k, kinds);")
        self.emit(f"const uint64_t *act = row ? row + {2 * n} : s->inst->tables[{tid}].deflt;")
        self.emit("s->action_run = act[0];")
        self.emit("switch (act[0]) {")
        for i, (afn, ref) in enumerate(zip(fns, refs)):
            if not ref.args:
                self.emit(f"case {i}: {afn}(s, act + 1, 0, drop_port); break;")
                continue
            # arguments bound in the table's action list: copied in and out around the action
            self.emit(f"case {i}: {{")
            self.depth += 1
            directional = [p for p in ref.action.params if p.direction]
            copied = self.copy_in(directional, ref.args, ref.loc or t.loc)
            refs_c = ", ".join(f"&{tmp}" for _p, tmp, _t in copied)
            self.emit(f"void *const dr[] = {{{refs_c}}};")
            self.emit(f"{afn}(s, act + 1, dr, drop_port);")
            self.copy_out(copied)
            self.emit("break;")
            self.depth -= 1
            self.emit("}")
        self.emit("}")
        self.emit("return row != 0;")
        lines.append("}")
        self.lines, self.depth = saved
        self.funcs.extend(lines)

    def action(self, a, t) -> str:
        key = ("action", id(a))
        if key in self.table_fn:
            return self.table_fn[key]
        fn = f"a{len(self.table_fn)}_{_ident(a.name)}"
        self.table_fn[key] = fn
        # directional parameters (a direct call's arguments, copied in and out by the caller)
        # come through `dir` as pointers; action data through `args`
        d = 0
        for p in a.params:
            if p.direction:
                ctype = self.types.c_type(p.type, p.loc or a.loc)
                self.env[id(p)] = f"(*({ctype} *)dir[{d}])"
                d += 1
        for i, p in enumerate(x for x in a.params if not x.direction):
            scalar_width(p.type, p.loc or a.loc)
            refuse_signed(p.type, p.loc or a.loc, f"the action data {p.name} of {a.name}")
            refuse_wide(p.type, p.loc or a.loc, f"the action data {p.name} of {a.name}")
            self.env[id(p)] = f"args[{i}]"
        lines: list[str] = []
        saved = _swap(self, lines)
        saved_ctx, self.ctx = self.ctx, "action"
        lines.append(f"static void {fn}(tb_state *s, const uint64_t *args, void *const *dir, uint32_t drop_port) {{")
        lines.append("    (void)args; (void)dir; (void)drop_port;")
        self.stmt(a.body)
        lines.append("}")
        self.ctx = saved_ctx
        self.lines, self.depth = saved
        self.funcs.extend(lines)
        return fn

    def apply(self, e) -> str:
        fn = self.table_fn.get(id(e.table))
        if fn is None:
            raise NativeUnsupported(e.loc, f"apply of table {e.table.name} outside its control")
        return f"{fn}(s, drop_port)"


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
