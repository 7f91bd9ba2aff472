"""Tables and keysets: properties checked and lowered to ir.TableDecl.

Keysets are shared by parser `select` cases and table `entries`; both
coerce each keyset element to the type of its key.
"""

from __future__ import annotations

import re

from lark import Token, Tree

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir
from testbed.p4model.frontend import types as T
from testbed.p4model.frontend.annotations import control_plane_name, name_annotation
from testbed.p4model.frontend.expressions import ValueSetName, tok_value

_KNOWN_PROPERTIES = {"default_action", "size", "implementation", "counters", "meters",
                     "support_timeout", "idle_timeout", "max_group_size", "selector_size_semantics",
                     "psa_direct_counter", "psa_direct_meter", "psa_implementation",
                     "psa_empty_group_action", "psa_idle_timeout", "largest_priority_wins",
                     "priority_delta"}


class TableLowering:

    # ------------------------------------------------------------ keysets

    def keyset(self, t, keys, ctx, allow_value_set=False):
        """One keyset (select case or table entry) for `keys`."""
        loc = self.loc(t, ctx)
        if isinstance(t, Tree) and t.data == "tuple_keyset":
            if len(t.children) != len(keys):
                raise P4Error(loc, f"the keyset has {len(t.children)} elements, there are {len(keys)} keys")
            return ir.KeysetTuple([self.simple_keyset(c, k.type, ctx, allow_value_set)
                                   for c, k in zip(t.children, keys)],
                                  type=ir.TupleT(tuple(k.type for k in keys)), loc=loc)
        if len(keys) == 1:
            if isinstance(t, Tree) and t.data == "list_expr" and t.children \
                    and isinstance(t.children[0], Tree) and len(t.children[0].children) == 1:
                t = t.children[0].children[0]   # `{ x }` for one key: p4c reads the 1-tuple as x
            return self.simple_keyset(t, keys[0].type, ctx, allow_value_set)
        ks = self.simple_keyset(t, ir.TupleT(tuple(k.type for k in keys)), ctx, allow_value_set)
        if isinstance(ks, (ir.KeysetDefault, ir.KeysetValueSet)):
            return ks
        raise P4Error(loc, f"the keyset has 1 element, there are {len(keys)} keys")

    def simple_keyset(self, t, ktype, ctx, allow_value_set):
        loc = self.loc(t, ctx)
        data = t.data if isinstance(t, Tree) else ""
        if data in ("keyset_default", "keyset_dontcare"):
            return ir.KeysetDefault(type=ktype, loc=loc)
        if data == "keyset_mask":
            v = self.keyset_const(t.children[0], ktype, ctx)
            m = self.keyset_const(t.children[1], ktype, ctx)
            return ir.KeysetMask(v, m, type=ktype, loc=loc)
        if data == "keyset_range":
            lo = self.keyset_const(t.children[0], ktype, ctx)
            hi = self.keyset_const(t.children[1], ktype, ctx)
            return ir.KeysetRange(lo, hi, type=ktype, loc=loc)
        if data in ("name_expr", "dot_name_expr") and allow_value_set:
            e = self._expr(t, ctx)
            if isinstance(e, ValueSetName):
                vs = e.target
                if ktype is not None and not (T.assignable(vs.element_type, ktype)
                                              or isinstance(ir.strip_newtype(vs.element_type), ir.StructT)):
                    raise P4Error(loc, f"value_set {vs.name} of {ir.type_str(vs.element_type)} "
                                       f"does not match key type {ir.type_str(ktype)}")
                return ir.KeysetValueSet(vs, type=vs.element_type, loc=loc)
        return self.keyset_const(t, ktype, ctx)

    def keyset_const(self, t, ktype, ctx):
        e = self.expr(t, ctx, ktype)
        if not isinstance(e, ir.Const):
            raise P4Error(self.loc(t, ctx), "keyset values must be compile-time constants")
        return e

    # -------------------------------------------------------------- tables

    def table_decl(self, t, ctx) -> ir.TableDecl:
        anns, rest = self.split_annotations(t.children, ctx)
        loc = self.loc(t, ctx)
        name = tok_value(rest[0])
        table = ir.TableDecl(name, [], [], None, annotations=anns,
                             cp_name=control_plane_name(anns, name, ctx.prefix), loc=loc)
        seen = set()
        props = rest[1:]
        # actions first: default_action and entries refer to them
        order = sorted(props, key=lambda p: 0 if p.data in ("key_prop", "actions_prop") else 1)
        for p in order:
            pname = self.property_name(p)
            if pname in seen:
                raise P4Error(self.loc(p, ctx), f"table {name}: property '{pname}' given twice")
            seen.add(pname)
            getattr(self, "_p_" + p.data)(table, p, ctx)
        if "actions" not in seen:
            raise P4Error(loc, f"table {name} has no 'actions' property")
        if table.entries and not table.entries_are_const:
            self.assign_priorities(table)
        if table.default_action is None:
            noaction = self.top.lookup("NoAction")
            if not isinstance(noaction, ir.ActionDecl):
                raise P4Error(loc, f"table {name} has no default_action and NoAction is not declared")
            table.default_action = ir.ActionRef(noaction, [], [], loc)
            table.default_is_implicit = True
        ctx.scope.declare(name, table, loc)
        return table

    def property_name(self, p) -> str:
        if p.data == "key_prop":
            return "key"
        if p.data == "actions_prop":
            return "actions"
        if p.data == "entries_prop":
            return "entries"
        for ch in p.children:
            if isinstance(ch, Token) and ch.type == "IDENTIFIER":
                return str(ch)
        return "?"

    def key_name(self, t, e=None) -> str:
        """The match-field name p4c gives a key without @name (its
        front end's KeyNameGenerator): names and members as written, `a[i]`,
        `e[h:l]`, `e & mask` (spaces around `&`), `h.isValid()`, integer
        literals as p4c prints a Constant (its base, no width, lower-case
        hex).  p4c demands @name for any other expression; we keep its
        source text without whitespace instead of refusing it.  `e`, the
        lowered expression when known, supplies struct fields' @name
        (p4c names a member by its field's external name; a global one,
        `@name(".x")`, is the whole name: `meta.x.f` is `x.f`)."""
        data = t.data if isinstance(t, Tree) else None
        ch = t.children if isinstance(t, Tree) else []
        if data == "member_expr":
            given = _member_name(e)
            if given is not None and given.startswith("."):
                return given[1:]          # a global field name drops the left-hand side
            base = e.base if isinstance(e, ir.Member) else None
            return f"{self.key_name(ch[0], base)}.{given or self.text(ch[1])}"
        if data == "index_expr":
            base = e.base if isinstance(e, ir.Index) else None
            return f"{self.key_name(ch[0], base)}[{self.key_name(ch[1])}]"
        if data == "slice_expr":
            base = e.base if isinstance(e, ir.Slice) else None
            return f"{self.key_name(ch[0], base)}[{self.key_name(ch[1])}:{self.key_name(ch[2])}]"
        if data == "b_band":
            left = e.left if isinstance(e, ir.Binary) and e.op == "&" else None
            return f"{self.key_name(ch[0], left)} & {self.key_name(ch[1])}"
        if data == "int_lit":
            return _constant_text(str(ch[0]))
        if data == "call_expr" and not ch[1].children and isinstance(ch[0], Tree) \
                and ch[0].data == "member_expr" and self.text(ch[0].children[1]) == "isValid":
            target = e.target if isinstance(e, ir.BuiltinCall) else None
            return f"{self.key_name(ch[0], _as_member(target, self.text(ch[0].children[1])))}()"
        return self.text(t)

    def _p_key_prop(self, table, p, ctx):
        names = set()
        for k in p.children:
            kloc = self.loc(k, ctx)
            expr_tree, kind_tree = k.children[0], k.children[1]
            anns = self.annotations(k.children[2], ctx) if len(k.children) > 2 else []
            e = self.expr(expr_tree, ctx)
            st = T.value_type(e.type)
            if not isinstance(st, (ir.BitT, ir.BoolT, ir.ErrorT, ir.EnumT)) and not isinstance(st, ir.VarbitT):
                raise P4Error(kloc, f"table {table.name}: key of type {ir.type_str(e.type)} cannot be matched")
            if isinstance(e.type, ir.IntLitT):
                raise P4Error(kloc, f"table {table.name}: key needs a width")
            kind = tok_value(kind_tree)
            if kind not in self.match_kind_type.members:
                raise P4Error(self.loc(kind_tree, ctx), f"unknown match kind '{kind}'")
            kname = name_annotation(anns) or self.key_name(expr_tree, e)
            if kname in names:
                raise P4Error(kloc, f"table {table.name}: duplicate key '{kname}'")
            names.add(kname)
            table.keys.append(ir.KeyElement(e, kind, kname, anns, kloc))
        lpm = [k for k in table.keys if k.match_kind == "lpm"]
        if len(lpm) > 1:
            raise P4Error(lpm[1].loc, f"table {table.name} has more than one lpm key")

    def _p_actions_prop(self, table, p, ctx):
        seen = set()
        for item in p.children:
            anns, rest = self.split_annotations(item.children, ctx)
            ref = self.action_ref(rest[0], ctx, directional_only=True, anns=anns)
            if id(ref.action) in seen:
                raise P4Error(ref.loc, f"table {table.name}: action {ref.action.name} listed twice")
            seen.add(id(ref.action))
            table.actions.append(ref)

    def action_ref(self, t, ctx, directional_only, anns=None, table=None) -> ir.ActionRef:
        """`a`, `a(x)`, `.a(1, 2)`: the action, its arguments bound."""
        loc = self.loc(t, ctx)
        name_tree = t.children[0]
        scope = ctx.scope.top() if name_tree.data == "dot_name" else ctx.scope
        name = tok_value(name_tree)
        action = scope.lookup(name)
        if not isinstance(action, ir.ActionDecl):
            raise P4Error(loc, f"'{name}' is not an action" if action is not None else f"unknown action '{name}'")
        args = list(t.children[1].children) if len(t.children) > 1 else []
        if directional_only:
            dparams = [p for p in action.params if p.direction != ""]
            if args and len(args) != len(dparams):
                raise P4Error(loc, f"action {name}: the actions list binds {len(args)} argument(s), "
                                   f"it has {len(dparams)} directional parameter(s)")
            if not args and dparams:
                raise P4Error(loc, f"action {name}: its directional parameters must be bound in the actions list")
            bound = self.bind_args(dparams, args, ctx, loc, f"action {name}", {}) if args else []
            return ir.ActionRef(action, bound, anns or [], loc)
        bound = self.bind_args(action.params, args, ctx, loc, f"action {name}", {}) if (args or action.params) else []
        data = [a for a, p in zip(bound, action.params) if p.direction == ""]
        for a in data:
            if not isinstance(a, ir.Const):
                raise P4Error(a.loc, f"action {name}: action data must be compile-time constants here")
        return ir.ActionRef(action, data, anns or [], loc)

    def _listed(self, table, action, loc, what):
        for r in table.actions:
            if r.action is action:
                return r
        raise P4Error(loc, f"table {table.name}: {what} {action.name} is not in the actions list")

    def _p_entries_prop(self, table, p, ctx):
        anns, rest = self.split_annotations(p.children, ctx)
        is_const = bool(rest) and isinstance(rest[0], Tree) and rest[0].data == "const_mod"
        if is_const:
            rest = rest[1:]
        table.entries_are_const = is_const
        table.has_entries = True
        self._entries_loc = self.loc(p, ctx)
        if not table.keys:
            raise P4Error(self.loc(p, ctx), f"table {table.name} has entries but no key")
        keys = [k.expr for k in table.keys]
        for e in rest:
            ch = list(e.children)
            eloc = self.loc(e, ctx)
            priority = None
            if ch and isinstance(ch[0], Tree) and ch[0].data == "entry_priority":
                pv = self.expr(ch[0].children[0], ctx)
                if not isinstance(pv, ir.Const) or not isinstance(pv.value, int) or pv.value < 0:
                    raise P4Error(eloc, "entry priority must be a non-negative constant")
                priority = pv.value
                ch = ch[1:]
                if is_const:
                    raise P4Error(eloc, f"table {table.name}: a table with const entries cannot have priorities")
            ks = self.keyset(ch[0], keys, ctx)
            ref = self.action_ref(ch[1], ctx, directional_only=False)
            self._listed(table, ref.action, ref.loc, "entry action")
            if any(ir.find_annotation(r.annotations, "defaultonly") for r in table.actions if r.action is ref.action):
                raise P4Error(ref.loc, f"table {table.name}: action {ref.action.name} is @defaultonly")
            eanns = self.annotations(ch[2], ctx) if len(ch) > 2 else []
            items = ks.items if isinstance(ks, ir.KeysetTuple) else (
                [ks] if len(keys) == 1 else [ks] * len(keys))
            for item, k in zip(items, table.keys):
                self.check_entry_key(item, k, table, eloc)
            table.entries.append(ir.TableEntryDecl(list(items), ref, priority,
                                                   is_const or e.data == "const_entry", eanns, eloc))

    def assign_priorities(self, table) -> None:
        """Priorities of non-const `entries` as p4c computes them
        (frontends/p4/entryPriorities): none given -> 1, 1+delta, ...
        counted from the last entry when the largest priority wins (the
        default), from the first otherwise; some given -> the first must
        have one and each later entry without one gets previous -/+ delta."""
        largest = table.properties.get("largest_priority_wins")
        largest_wins = True if largest is None else bool(getattr(largest, "value", True))
        delta_prop = table.properties.get("priority_delta")
        delta = 1
        if delta_prop is not None:
            if not isinstance(delta_prop, ir.Const) or not isinstance(delta_prop.value, int) or delta_prop.value < 0:
                raise P4Error(delta_prop.loc, f"table {table.name}: priority_delta must be a positive constant")
            delta = delta_prop.value
        entries = table.entries
        if all(e.priority is None for e in entries):
            order = reversed(entries) if largest_wins else entries
            current = 1
            for e in order:
                e.priority = current
                current += delta
            return
        if all(k.match_kind in ("exact", "lpm") for k in table.keys):
            raise P4Error(table.loc, f"table {table.name}: key match kinds do not use priorities, "
                                     f"but some entries give one")
        if entries[0].priority is None:
            raise P4Error(entries[0].loc, f"table {table.name}: the first entry must have a priority")
        current = entries[0].priority
        for e in entries:
            if e.priority is None:
                e.priority = current
            current = e.priority - delta if largest_wins else e.priority + delta
            if current < 0:
                raise P4Error(e.loc, f"table {table.name}: overflow in priority computation")

    def check_entry_key(self, item, key, table, loc):
        kind = key.match_kind
        if isinstance(item, ir.KeysetMask) and kind not in ("ternary", "lpm"):
            raise P4Error(loc, f"table {table.name}: a mask (&&&) needs a ternary or lpm key, "
                               f"'{key.name}' is {kind}")
        if isinstance(item, ir.KeysetRange) and kind != "range":
            raise P4Error(loc, f"table {table.name}: a range (..) needs a range key, '{key.name}' is {kind}")
        if isinstance(item, ir.KeysetDefault) and kind == "exact":
            raise P4Error(loc, f"table {table.name}: '_'/default cannot match the exact key '{key.name}'")

    def _p_custom_prop(self, table, p, ctx):
        anns, rest = self.split_annotations(p.children, ctx)
        is_const = isinstance(rest[0], Tree) and rest[0].data == "const_mod"
        if is_const:
            rest = rest[1:]
        pname = str(rest[0])
        value_tree = rest[1]
        loc = self.loc(p, ctx)
        self._property_annotations = anns
        if pname == "default_action":
            self.default_action(table, value_tree, is_const, ctx, loc)
            return
        if pname == "size":
            v = self.expr(value_tree, ctx)
            if not isinstance(v, ir.Const) or not isinstance(v.value, int) or isinstance(v.value, bool) or v.value < 0:
                raise P4Error(loc, f"table {table.name}: size must be a non-negative constant")
            table.size = v.value
            return
        self._current_property = pname
        if pname == "implementation":
            inst = self.instance_property(value_tree, ctx, loc, table, ("action_profile", "action_selector"))
            table.implementation = inst
        elif pname == "counters":
            table.counters = self.instance_property(value_tree, ctx, loc, table, ("direct_counter",))
        elif pname == "meters":
            table.meters = self.instance_property(value_tree, ctx, loc, table, ("direct_meter",))
        elif pname in ("support_timeout", "idle_timeout"):
            v = self.expr(value_tree, ctx)
            if not isinstance(v, ir.Const) or not isinstance(v.value, bool):
                raise P4Error(loc, f"table {table.name}: {pname} must be true or false")
            table.idle_timeout = v.value
            table.properties[pname] = v
        else:
            # custom property (e.g. max_group_size): kept as an expression;
            # one that is not a valid expression here is kept as its text
            try:
                table.properties[pname] = self.expr(value_tree, ctx)
            except P4Error:
                table.properties[pname] = ir.Const(self.text(value_tree), type=ir.StringT(), loc=loc)

    def instance_property(self, tree, ctx, loc, table, kinds) -> ir.Instance:
        e = self._expr(tree, ctx)
        inst = e if isinstance(e, ir.Instance) else (e.target if isinstance(e, ir.InstanceRef) else None)
        if inst is None or not isinstance(inst.type, ir.ExternT) or inst.type.decl.name not in kinds:
            raise P4Error(loc, f"table {table.name}: expected an instance of {' or '.join(kinds)}")
        if not inst.cp_name:
            # p4c names an instance constructed in a table property by the
            # property's @name (global, not prefixed), else by the property
            anns = getattr(self, "_property_annotations", [])
            given = name_annotation(anns)
            pname = self.property_name_of(tree)
            inst.name = (given or pname).lstrip(".")
            inst.cp_name = inst.name
            inst.annotations = list(anns)
        return inst

    def property_name_of(self, tree) -> str:
        return getattr(self, "_current_property", "implementation")

    def default_action(self, table, tree, is_const, ctx, loc):
        if tree.data == "call_expr":
            callee, args_tree = tree.children
        else:
            callee, args_tree = tree, None
        if callee.data not in ("name_expr", "dot_name_expr"):
            raise P4Error(loc, f"table {table.name}: default_action must name an action")
        name_node = Tree("prefixed_non_type_name" if callee.data == "name_expr" else "dot_name",
                         [callee.children[0]], callee.meta)
        fake = Tree("action_ref", [name_node] + ([args_tree] if args_tree is not None else []), tree.meta)
        ref = self.action_ref(fake, ctx, directional_only=False)
        listed = self._listed(table, ref.action, loc, "default action")
        if ir.find_annotation(listed.annotations, "tableonly"):
            raise P4Error(loc, f"table {table.name}: action {ref.action.name} is @tableonly")
        if args_tree is None and ref.action.data_params():
            raise P4Error(loc, f"table {table.name}: default action {ref.action.name} needs its arguments")
        table.default_action = ref
        table.default_is_const = is_const


def _constant_text(literal: str) -> str:
    """An integer literal as p4c's Constant::toString prints it: the value
    in the base it was written in, without width prefix or leading zeros."""
    m = re.match(r"(?:\d+[ws])?(0[xXbBoOdD])?([0-9a-fA-F_]+)$", literal)
    if not m:
        return literal
    prefix, digits = (m.group(1) or "").lower(), m.group(2).replace("_", "")
    base = {"0x": 16, "0b": 2, "0o": 8, "0d": 10, "": 10}[prefix]
    value = int(digits, base)
    body = {16: f"{value:x}", 2: f"{value:b}", 8: f"{value:o}", 10: str(value)}[base]
    return ("" if prefix == "0d" else prefix) + body


def _member_name(e) -> str | None:
    """A struct/header field's @name, for the member expression e (a
    leading '.' kept: the name is global)."""
    if not isinstance(e, ir.Member):
        return None
    bt = ir.strip_newtype(e.base.type) if e.base.type is not None else None
    f = bt.field(e.name) if isinstance(bt, ir.StructLikeT) else None
    given = name_annotation(f.annotations) if f is not None else None
    return given or None


def _as_member(target, method: str):
    """`h.isValid()` lowers to a call on h: the key name's `h` part is the
    target itself (a pseudo member chain ending in the method)."""
    return ir.Member(target, method) if target is not None else None
