"""Expressions and l-values: IR -> Python source text.

Every generated expression of type bit<W>/int<W> evaluates to a value
already in range (the wrap is an inline `& mask`, or a sign fold for
int<W>), so assignments of same-typed values need no further work.
"""

from __future__ import annotations

from testbed.p4model.backend.python.effects import has_effects
from testbed.p4model.backend.python.types import LIST_TYPES, is_composite, scalar_type
from testbed.p4model.errors import P4Unsupported
from testbed.p4model.frontend import ir


def mask(width: int) -> str:
    return hex((1 << width) - 1)


def wrap(code: str, t: ir.Type) -> str:
    """Fold `code` into the range of type t (bit<W> mask, int<W> sign fold)."""
    t = scalar_type(t)
    if isinstance(t, ir.BitT):
        if t.signed:
            half = 1 << (t.width - 1)
            return f"((({code}) + {hex(half)}) & {mask(t.width)}) - {hex(half)}"
        return f"(({code}) & {mask(t.width)})"
    return code


def to_unsigned(code: str, t: ir.Type) -> str:
    """The unsigned bit pattern of a value (for keys, hashing, emission)."""
    t = scalar_type(t)
    if isinstance(t, ir.BitT) and t.signed:
        return f"(({code}) & {mask(t.width)})"
    if isinstance(t, ir.BoolT):
        return f"(1 if {code} else 0)"
    return code


class ExprMixin:
    """Expression and assignment generation; needs self.fc (FuncCtx),
    self.src (Source), self.types (TypeClasses)."""

    # ------------------------------------------------------------ helpers

    def tmp(self, stem: str = "t") -> str:
        return self.fc.tmp(stem)

    def emit(self, line: str) -> None:
        self.src.line(line)

    def ex_in_order(self, exprs) -> list[str]:
        """Codes of operands evaluated left to right: an operand followed by
        one with side effects (a call written as statements before the
        expression) is first saved in a temporary."""
        codes = []
        for i, e in enumerate(exprs):
            code = self.ex(e)
            if not isinstance(e, ir.Const) and any(has_effects(x) for x in exprs[i + 1:]):
                t = self.tmp("o")
                self.emit(f"{t} = {self.types.copy(e.type, code) if e.type is not None else code}")
                code = t
            codes.append(code)
        return codes

    def ex_when(self, cond_code: str, e: ir.Expr, other: str, negate: bool = False) -> str:
        """`e if cond else other`, with e's side effects (statements) run
        only when cond holds."""
        t = self.tmp("c")
        self.emit(f"if {'not ' if negate else ''}{cond_code}:")
        self.src.indent()
        code = self.ex(e)
        self.emit(f"{t} = {self.types.copy(e.type, code) if e.type is not None else code}")
        self.src.dedent()
        self.emit("else:")
        self.src.indent()
        self.emit(f"{t} = {other}")
        self.src.dedent()
        return t

    # -------------------------------------------------------- expressions

    def ex(self, e: ir.Expr) -> str:
        pinned = self.__dict__.get("_pinned")
        if pinned and id(e) in pinned:
            return pinned[id(e)]
        method = getattr(self, "ex_" + type(e).__name__, None)
        if method is None:
            raise P4Unsupported(e.loc, f"expression {type(e).__name__}")
        return method(e)

    def ex_Const(self, e: ir.Const) -> str:
        v = e.value
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, str):
            return repr(v)
        t = ir.strip_newtype(e.type) if e.type is not None else None
        if isinstance(t, ir.BoolT):
            return "True" if v else "False"
        return str(v) if -10 < v < 10 else hex(v) if v >= 0 else f"({v})"

    def ex_VarRef(self, e: ir.VarRef) -> str:
        try:
            return self.fc.env[id(e.target)]
        except KeyError:
            raise P4Unsupported(e.loc, f"reference to {e.target.name} outside its scope") from None

    def ex_InstanceRef(self, e: ir.InstanceRef) -> str:
        return self.instance_code(e.target, e.loc)

    def ex_Member(self, e: ir.Member) -> str:
        base = e.base
        if isinstance(base, ir.TableApply):
            r = self.ex(base)
            if e.name == "hit":
                return f"{r}[0]"
            if e.name == "miss":
                return f"(not {r}[0])"
            if e.name == "action_run":
                return f"{r}[1]"
            raise P4Unsupported(e.loc, f"table result .{e.name}")
        bt = ir.strip_newtype(base.type)
        b = self.ex(base)
        if isinstance(bt, ir.StackT):
            if e.name == "next":
                return f"{b}._next()"
            if e.name == "last":
                return f"{b}._last()"
            if e.name == "size":
                return str(bt.size)
            if e.name == "lastIndex":
                return f"(({b}.nxt - 1) & 0xffffffff)"
            if e.name == "nextIndex":
                return f"{b}.nxt"
            raise P4Unsupported(e.loc, f"header stack member .{e.name}")
        return f"{b}.{e.name}"

    def ex_Index(self, e: ir.Index) -> str:
        b = self.ex(e.base)
        bt = ir.strip_newtype(e.base.type)
        if isinstance(e.index, ir.Const) and isinstance(bt, ir.StackT) and 0 <= e.index.value < bt.size:
            return f"{b}.elems[{e.index.value}]"
        if isinstance(bt, ir.TupleT):      # a tuple is a Python list; the index is a constant
            return f"{b}[{self.ex(e.index)}]"
        if isinstance(bt, ir.ArrayT):      # so is an array; a constant index is within bounds
            if isinstance(e.index, ir.Const):
                return f"{b}[{e.index.value}]"
            return f"_array_get({b}, {self.ex(e.index)}, {self.types.zero(bt.element)})"
        return f"{b}._get({self.ex(e.index)})"

    def ex_Slice(self, e: ir.Slice) -> str:
        b = self.ex(e.base)
        w = e.hi - e.lo + 1
        if e.lo:
            return f"(({b} >> {e.lo}) & {mask(w)})"
        return f"({b} & {mask(w)})"

    def ex_Unary(self, e: ir.Unary) -> str:
        v = self.ex(e.operand)
        t = scalar_type(e.type)
        if e.op == "!":
            return f"(not {v})"
        if e.op == "-":
            if isinstance(t, ir.BitT):
                return wrap(f"-{v}", t)
            return f"(-{v})"
        if e.op == "~":
            if isinstance(t, ir.BitT) and not t.signed:
                return f"({v} ^ {mask(t.width)})"
            return f"(~{v})"
        raise P4Unsupported(e.loc, f"unary operator {e.op}")

    def ex_Binary(self, e: ir.Binary) -> str:
        op = e.op
        if op in ("&&", "||") and has_effects(e.right):
            left = self.tmp("b")
            self.emit(f"{left} = {self.ex(e.left)}")
            return self.ex_when(left, e.right, left, negate=(op == "||"))
        if op == "&&":
            return f"({self.ex(e.left)} and {self.ex(e.right)})"
        if op == "||":
            return f"({self.ex(e.left)} or {self.ex(e.right)})"
        lt = ir.strip_newtype(e.left.type)
        a, b = self.ex_in_order([e.left, e.right])
        if op in ("==", "!=") and isinstance(lt, ir.ArrayT):
            r = f"_list_eq({a}, {b})"
            return r if op == "==" else f"(not {r})"
        if op in ("==", "!=") and is_composite(lt) and not isinstance(lt, ir.TupleT):
            r = f"{a}._eq({b})"
            return r if op == "==" else f"(not {r})"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return f"({a} {op} {b})"
        t = scalar_type(e.type)
        bits = isinstance(t, ir.BitT)
        if op == "++":
            rt = scalar_type(e.right.type)
            rw = rt.width if isinstance(rt, ir.BitT) else 1
            lw = t.width - rw
            raw = f"(({to_unsigned(a, e.left.type)} & {mask(lw)}) << {rw}) | {to_unsigned(b, e.right.type)}"
            if isinstance(rt, ir.BitT) and rt.signed:
                raw = f"(({to_unsigned(a, e.left.type)} & {mask(lw)}) << {rw}) | ({b} & {mask(rw)})"
            return wrap(raw, t) if t.signed else f"({raw})"
        if op in ("+", "-", "*"):
            return wrap(f"{a} {op} {b}", t) if bits else f"({a} {op} {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("/", "%"):
            pyop = "//" if op == "/" else "%"
            if isinstance(e.right, ir.Const) and e.right.value != 0:
                return f"({a} {pyop} {b})"
            return f"_div({a}, {b})" if op == "/" else f"_mod({a}, {b})"
        if op == "<<":
            if not bits:
                return f"({a} << {b})"
            if isinstance(e.right, ir.Const):
                if e.right.value >= t.width:
                    return "0"
                return wrap(f"{a} << {b}", t)
            return f"({wrap(f'{a} << {b}', t)} if {b} < {t.width} else 0)"
        if op == ">>":
            if bits and t.signed:
                return f"({a} >> {b})"  # arithmetic shift of a Python int
            return f"({a} >> {b})"
        if op in ("|+|", "|-|"):
            if not bits:
                raise P4Unsupported(e.loc, f"saturating {op} on {t}")
            pyop = op[1]
            if t.signed:
                lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
            else:
                lo, hi = 0, (1 << t.width) - 1
            return f"min(max({a} {pyop} {b}, {lo}), {hi})"
        raise P4Unsupported(e.loc, f"binary operator {op}")

    def ex_Cast(self, e: ir.Cast) -> str:
        v = self.ex(e.operand)
        src = scalar_type(e.operand.type)
        dst = scalar_type(e.type)
        if isinstance(dst, ir.BoolT):
            if isinstance(src, ir.BoolT):
                return v
            return f"({v} != 0)"
        if isinstance(dst, ir.BitT):
            if isinstance(src, ir.BoolT):
                return f"(1 if {v} else 0)"
            if isinstance(src, ir.BitT) and src.signed == dst.signed and src.width <= dst.width and not src.signed:
                return v
            if isinstance(src, ir.BitT) and src.signed and dst.signed and src.width <= dst.width:
                return v
            if dst.signed:
                half = 1 << (dst.width - 1)
                return f"((({v}) & {mask(dst.width)}) ^ {hex(half)}) - {hex(half)}"
            return f"({v} & {mask(dst.width)})"
        if isinstance(dst, (ir.StructLikeT, ir.TupleT)):
            return self.ex(e.operand)
        return v

    def ex_Mux(self, e: ir.Mux) -> str:
        if has_effects(e.if_true) or has_effects(e.if_false):
            cond = self.tmp("m")
            self.emit(f"{cond} = {self.ex(e.cond)}")
            t = self.tmp("c")
            for test, arm in ((f"if {cond}:", e.if_true), ("else:", e.if_false)):
                self.emit(test)
                self.src.indent()
                code = self.ex(arm)
                self.emit(f"{t} = {self.types.copy(arm.type, code) if arm.type is not None else code}")
                self.src.dedent()
            return t
        return f"({self.ex(e.if_true)} if {self.ex(e.cond)} else {self.ex(e.if_false)})"

    def ex_ListExpr(self, e: ir.ListExpr) -> str:
        t = ir.strip_newtype(e.type)
        if isinstance(t, ir.StructLikeT):
            return self._build(t, [(f.name, item) for f, item in zip(t.fields, e.items)])
        if isinstance(t, ir.StackT):
            cls = self.types.class_of(t)
            items = ", ".join(self.types.copy(i.type, c) for i, c in zip(e.items, self.ex_in_order(e.items)))
            return f"_build_stack({cls}(), [{items}])"
        items = ", ".join(self.types.copy(i.type, c) for i, c in zip(e.items, self.ex_in_order(e.items)))
        return f"[{items}]"

    def ex_StructExpr(self, e: ir.StructExpr) -> str:
        t = ir.strip_newtype(e.type)
        if isinstance(t, ir.TupleT):
            return "[" + ", ".join(self.ex_in_order(list(e.fields.values()))) + "]"
        return self._build(t, list(e.fields.items()))

    def _build(self, t: ir.Type, items) -> str:
        cls = self.types.class_of(t)
        valid = isinstance(t, ir.HeaderT)
        names = tuple(name for name, _ in items)
        codes = self.ex_in_order([v for _, v in items])
        values = ", ".join(self.types.copy(v.type, c) for (_, v), c in zip(items, codes))
        return f"_build({cls}(), {valid}, {names!r}, ({values}{',' if len(items) == 1 else ''}))"

    def ex_DontCare(self, e: ir.DontCare) -> str:
        return self.types.zero(e.type) if e.type is not None else "0"

    def ex_BuiltinCall(self, e: ir.BuiltinCall) -> str:
        t = ir.strip_newtype(e.target.type)
        if e.name == "isValid":
            b = self.ex(e.target)
            if isinstance(t, ir.UnionT):
                return f"{b}._isvalid()"
            return f"{b}._valid"
        if e.name in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
            bits = t.bit_width() or 0
            if e.name.startswith("max") and isinstance(t, ir.HeaderT):
                bits += sum(ir.strip_newtype(f.type).max_width for f in t.fields
                            if isinstance(ir.strip_newtype(f.type), ir.VarbitT))
            return str(bits // 8 if e.name.endswith("Bytes") else bits)
        # setValid / setInvalid / push / pop used as a value: run it, value None
        self.stmt_builtin(e)
        return "None"

    # calls used as values are generated by the call mixin
    def ex_ExternMethodCall(self, e):
        return self.call_extern_method(e, want=True)

    def ex_ExternFunctionCall(self, e):
        return self.call_extern_function(e, want=True)

    def ex_ActionCall(self, e):
        return self.call_action(e, want=True)

    def ex_FunctionCall(self, e):
        return self.call_function(e, want=True)

    def ex_TableApply(self, e):
        return self.call_table(e)

    def ex_SubApply(self, e):
        return self.call_sub(e, want=True)

    # ----------------------------------------------------------- builtins

    def stmt_builtin(self, e: ir.BuiltinCall) -> None:
        name = e.name
        target = e.target
        if name in ("setValid", "setInvalid"):
            h = self.ex(target)
            union_sibs = self._union_siblings(target)
            if name == "setValid":
                self.emit(f"if not {h}._valid:")
                self.src.indent()
                self.emit(f"{h}._zero(); {h}._valid = True; RT.pkt.length += {h}._nbytes()")
                self.src.dedent()
                for sib in union_sibs:
                    self.emit(f"if {sib}._valid: RT.pkt.length -= {sib}._nbytes(); {sib}._valid = False")
            else:
                self.emit(f"if {h}._valid: RT.pkt.length -= {h}._nbytes(); {h}._valid = False")
            return
        if name in ("push_front", "pop_front"):
            count = self.ex(e.args[0]) if e.args else "1"
            self.emit(f"{self.ex(target)}.{name}({count})")
            return
        if name == "isValid":
            return
        raise P4Unsupported(e.loc, f"built-in method {name}")

    def _union_siblings(self, target: ir.Expr) -> list[str]:
        """Code of the other members when target is a member of a union."""
        if isinstance(target, ir.Member):
            bt = ir.strip_newtype(target.base.type)
            if isinstance(bt, ir.UnionT):
                b = self.ex(target.base)
                return [f"{b}.{f.name}" for f in bt.fields if f.name != target.name]
        return []

    # ------------------------------------------------------------ l-values

    def assign(self, lhs: ir.Expr, value: str, vtype: ir.Type = None) -> None:
        """Emit `lhs = value` with P4 semantics (wrap, in-place composite
        copy, union exclusivity, slice insertion)."""
        lt = ir.strip_newtype(lhs.type) if lhs.type is not None else None
        if isinstance(lhs, ir.DontCare):
            return
        if lt is not None and is_composite(lt):
            if isinstance(lt, LIST_TYPES):
                target = self.ex(lhs)
                if isinstance(lhs, ir.VarRef):
                    self.emit(f"{target} = _copy_list({value})")
                else:
                    self._assign_simple(lhs, f"_copy_list({value})")
                return
            target = self.ex(lhs)
            sibs = self._union_siblings(lhs)
            if sibs:
                v = self.tmp("u")
                self.emit(f"{v} = {value}")
                self.emit(f"{target}._set({v})")
                self.emit(f"if {v}._valid:")
                self.src.indent()
                for sib in sibs:
                    self.emit(f"{sib}._valid = False")
                self.src.dedent()
            else:
                self.emit(f"{target}._set({value})")
            return
        if vtype is not None and lt is not None:
            vt, st = scalar_type(vtype), scalar_type(lt)
            if isinstance(st, ir.BitT) and vt != st:
                value = wrap(value, st)
        if isinstance(lhs, ir.Slice):
            base = self.ex(lhs.base)
            w = lhs.hi - lhs.lo + 1
            hole = ((1 << w) - 1) << lhs.lo
            bt = scalar_type(lhs.base.type)
            bw = bt.width if isinstance(bt, ir.BitT) else w
            keep = ((1 << bw) - 1) ^ hole
            new = f"({to_unsigned(base, bt)} & {hex(keep)}) | ((({value}) & {mask(w)}) << {lhs.lo})"
            if isinstance(bt, ir.BitT) and bt.signed:
                new = wrap(new, bt)
            self.assign(lhs.base, new)
            return
        self._assign_simple(lhs, value)

    def _assign_simple(self, lhs: ir.Expr, value: str) -> None:
        if (isinstance(lhs, ir.Index) and isinstance(ir.strip_newtype(lhs.base.type), ir.ArrayT)
                and not isinstance(lhs.index, ir.Const)):   # out of bounds (undefined in P4): no write
            index = self.tmp("i")
            self.emit(f"{index} = {self.ex(lhs.index)}")
            base = self.ex(lhs.base)
            self.emit(f"if {index} < len({base}): {base}[{index}] = {value}")
            return
        if isinstance(lhs, (ir.VarRef, ir.Member, ir.Index)):
            self.emit(f"{self.ex(lhs)} = {value}")
            return
        raise P4Unsupported(lhs.loc, f"assignment to {type(lhs).__name__}")
