"""Expression lowering: lark expression trees -> typed, resolved ir.Expr.

Does name resolution, type inference with P4's implicit casts (unsized
literals take the other operand's width, serializable enums become their
underlying type), constant folding, and normalises every call into one of
the IR call forms (TableApply, ExternMethodCall, ExternFunctionCall,
ActionCall, FunctionCall, SubApply, BuiltinCall) with arguments in
parameter order.  Used as a mixin by lower.Lowerer.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark import Token, Tree

from testbed.p4model.errors import P4Error, P4Unsupported
from testbed.p4model.frontend import ir
from testbed.p4model.frontend import types as T
from testbed.p4model.frontend.scope import Overloads

_BINOPS = {
    "b_lor": "||", "b_land": "&&", "b_eq": "==", "b_ne": "!=", "b_lt": "<", "b_gt": ">",
    "b_le": "<=", "b_ge": ">=", "b_bor": "|", "b_bxor": "^", "b_band": "&", "b_shl": "<<",
    "b_shr": ">>", "b_add": "+", "b_sub": "-", "b_addsat": "|+|", "b_subsat": "|-|",
    "b_concat": "++", "b_mul": "*", "b_div": "/", "b_mod": "%",
}
COMPOUND_OPS = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&", "|=": "|",
                "^=": "^", "<<=": "<<", ">>=": ">>", "|+|=": "|+|", "|-|=": "|-|"}

_HEADER_METHODS = {"isValid", "setValid", "setInvalid"}
_SIZE_METHODS = {"minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"}


# Names that resolve to something that is not a value; they only appear as
# the callee of a call (or, for tables/value sets, in their special places).
@dataclass(eq=False)
class _Named(ir.Expr):
    target: object = None


class TableName(_Named):
    pass


class ActionName(_Named):
    pass


class FunctionName(_Named):
    pass


class ExternFunctionName(_Named):
    pass


class ValueSetName(_Named):
    pass


class TypeName(_Named):
    pass


def is_lvalue(e: ir.Expr) -> bool:
    if isinstance(e, ir.VarRef):
        t = e.target
        return isinstance(t, ir.Var) or (isinstance(t, ir.Param) and t.direction in ("out", "inout"))
    if isinstance(e, ir.Member):
        if isinstance(e.base.type, ir.StackT) and e.name in ("size", "lastIndex"):
            return False
        if isinstance(e.base, ir.TableApply):
            return False
        return is_lvalue(e.base)
    if isinstance(e, (ir.Index, ir.Slice)):
        return is_lvalue(e.base)
    return False


def tok_value(t) -> str:
    """The identifier text of a name/member/non_type_name tree or token."""
    while isinstance(t, Tree):
        t = t.children[0]
    return str(t)


class ExprLowering:
    """Mixin: needs self.loc(node, ctx), self.resolve_type(tree, ctx),
    self.error_type, self.source, self.instantiate_expr(...)."""

    # ------------------------------------------------------------- entry

    def expr(self, t, ctx, expected: ir.Type | None = None) -> ir.Expr:
        e = self._expr(t, ctx, expected)
        if isinstance(e, _Named):
            what = {TableName: "table", ActionName: "action", FunctionName: "function",
                    ExternFunctionName: "extern function", ValueSetName: "value_set",
                    TypeName: "type"}[type(e)]
            raise P4Error(e.loc, f"{what} '{getattr(e.target, 'name', '?')}' cannot be used as a value")
        if expected is not None:
            e = self.coerce(e, expected, e.loc)
        return e

    def _expr(self, t, ctx, expected=None) -> ir.Expr:
        if isinstance(t, Token):
            raise P4Error(self.loc(t, ctx), f"syntax error: unexpected {t.value!r}")
        data = t.data
        loc = self.loc(t, ctx)
        if data in _BINOPS:
            return self.binary(_BINOPS[data], t.children[0], t.children[1], ctx, loc)
        method = getattr(self, "_x_" + data, None)
        if method is None:
            raise P4Unsupported(loc, f"expression {data}")
        return method(t, ctx, loc, expected)

    # ------------------------------------------------------------ leaves

    def _x_int_lit(self, t, ctx, loc, expected):
        return T.parse_int_literal(str(t.children[0]), loc)

    def _x_str_lit(self, t, ctx, loc, expected):
        raw = str(t.children[0])[1:-1]
        value = raw.encode("utf-8").decode("unicode_escape", errors="replace") if "\\" in raw else raw
        return ir.Const(value, type=ir.StringT(), loc=loc)

    def _x_true_lit(self, t, ctx, loc, expected):
        return ir.Const(True, type=ir.BoolT(), loc=loc)

    def _x_false_lit(self, t, ctx, loc, expected):
        return ir.Const(False, type=ir.BoolT(), loc=loc)

    def _x_this_expr(self, t, ctx, loc, expected):
        raise P4Unsupported(loc, "'this'")

    def _x_name_expr(self, t, ctx, loc, expected):
        return self.name_value(tok_value(t), ctx.scope, loc)

    def _x_dot_name_expr(self, t, ctx, loc, expected):
        return self.name_value(tok_value(t), ctx.scope.top(), loc)

    def name_value(self, name: str, scope, loc) -> ir.Expr:
        ent = scope.lookup(name)
        if ent is None:
            raise P4Error(loc, f"unknown name '{name}'")
        return self.entity_value(ent, name, loc)

    def entity_value(self, ent, name, loc) -> ir.Expr:
        if isinstance(ent, (ir.Var, ir.Param)):
            return ir.VarRef(ent, type=ent.type, loc=loc)
        if isinstance(ent, ir.ConstDecl):
            return _constant_copy(ent.value, loc)
        if isinstance(ent, ir.Instance):
            return ir.InstanceRef(ent, type=ent.type, loc=loc)
        if isinstance(ent, ir.TableDecl):
            return TableName(target=ent, loc=loc)
        if isinstance(ent, ir.ActionDecl):
            return ActionName(target=ent, loc=loc)
        if isinstance(ent, ir.FunctionDecl):
            return FunctionName(target=ent, loc=loc)
        if isinstance(ent, Overloads):
            return ExternFunctionName(target=ent, loc=loc)
        if isinstance(ent, ir.ValueSetDecl):
            return ValueSetName(target=ent, loc=loc)
        return TypeName(target=ent, loc=loc)

    # ------------------------------------------------------ member access

    def _x_type_member_expr(self, t, ctx, loc, expected):
        type_tree, member = t.children
        name = tok_value(type_tree)
        mname = tok_value(member)
        scope = ctx.scope.top() if type_tree.data == "dot_type_name" else ctx.scope
        ent = scope.lookup(name)
        if ent is None:
            raise P4Error(loc, f"unknown name '{name}'")
        if isinstance(ent, (ir.Var, ir.Param, ir.Instance, ir.ConstDecl)):
            return self.member(self.entity_value(ent, name, loc), mname, loc)
        ty = ent if isinstance(ent, ir.Type) else None
        if isinstance(ty, ir.NewT):
            ty = T.value_type(ty) if isinstance(ir.strip_newtype(ty), ir.EnumT) else ty
        if isinstance(ty, ir.EnumT):
            return self.enum_member(ty, mname, loc)
        if isinstance(ty, ir.ErrorT):
            return self.error_member(mname, loc)
        if isinstance(ty, ir.Type) and mname in _SIZE_METHODS:
            return TypeName(target=ty, loc=loc, type=ty)   # T.minSizeInBits()
        raise P4Error(loc, f"'{name}' has no member '{mname}'")

    def enum_member(self, ty: ir.EnumT, mname: str, loc) -> ir.Const:
        if mname not in ty.members:
            raise P4Error(loc, f"enum {ty.name} has no member '{mname}'")
        if ty.underlying is not None:
            return ir.Const(ty.values[mname], type=ty, loc=loc)
        return ir.Const(ty.members.index(mname), type=ty, loc=loc)

    def _x_error_member_expr(self, t, ctx, loc, expected):
        return self.error_member(tok_value(t.children[0]), loc)

    def error_member(self, mname, loc):
        if mname not in self.error_type.members:
            raise P4Error(loc, f"unknown error '{mname}'")
        return ir.Const(self.error_type.members.index(mname), type=self.error_type, loc=loc)

    def _x_member_expr(self, t, ctx, loc, expected):
        base = self._expr(t.children[0], ctx)
        return self.member(base, tok_value(t.children[1]), loc)

    def member(self, base: ir.Expr, name: str, loc) -> ir.Expr:
        if isinstance(base, TableName):
            raise P4Error(loc, f"table '{base.target.name}': use {base.target.name}.apply()")
        if isinstance(base, _Named):
            raise P4Error(loc, f"'{getattr(base.target, 'name', '?')}' has no member '{name}'")
        bt = base.type
        st = ir.strip_newtype(bt)
        if isinstance(st, ir.StructLikeT):
            f = st.field(name)
            if f is None:
                raise P4Error(loc, f"{st.name or 'struct'} has no field '{name}'")
            if isinstance(base, ir.StructExpr) and name in base.fields:
                return base.fields[name]
            return ir.Member(base, name, type=f.type, loc=loc)
        if isinstance(st, ir.StackT):
            if name in ("next", "last"):
                return ir.Member(base, name, type=st.element, loc=loc)
            if name == "size":
                return ir.Const(st.size, type=ir.BitT(32), loc=loc)
            if name == "lastIndex":
                return ir.Member(base, name, type=ir.BitT(32), loc=loc)
            raise P4Error(loc, f"header stack has no member '{name}'")
        if isinstance(st, ir.ArrayT):
            if name == "size":
                return ir.Const(st.size, type=ir.BitT(32), loc=loc)
            raise P4Error(loc, f"array {st} has no member '{name}'")
        if isinstance(st, ir.TableApplyResultT):
            if name in ("hit", "miss"):
                return ir.Member(base, name, type=ir.BoolT(), loc=loc)
            if name == "action_run":
                return ir.Member(base, name, type=ir.ActionEnumT(st.table_name), loc=loc)
            raise P4Error(loc, f"table apply result has no member '{name}'")
        raise P4Error(loc, f"value of type {ir.type_str(bt)} has no member '{name}'")

    def _x_index_expr(self, t, ctx, loc, expected):
        base = self.expr(t.children[0], ctx)
        return self.index(base, t.children[1], ctx, loc)

    def index(self, base, index_tree, ctx, loc):
        st = ir.strip_newtype(base.type)
        if isinstance(st, (ir.StackT, ir.ArrayT)):
            what = "stack" if isinstance(st, ir.StackT) else "array"
            idx = self.expr(index_tree, ctx)
            if isinstance(idx.type, ir.IntLitT):
                idx = self.coerce(idx, ir.BitT(32), loc)
            if not isinstance(T.value_type(idx.type), ir.BitT):
                raise P4Error(loc, f"{what} index must be a number, not {ir.type_str(idx.type)}")
            if isinstance(idx, ir.Const) and not (0 <= idx.value < st.size):
                raise P4Error(loc, f"index {idx.value} out of bounds for {st}")
            return ir.Index(base, idx, type=st.element, loc=loc)
        if isinstance(st, ir.TupleT):
            idx = self.expr(index_tree, ctx)
            if not isinstance(idx, ir.Const) or not (0 <= idx.value < len(st.elements)):
                raise P4Error(loc, "tuple index must be a constant within bounds")
            if isinstance(base, ir.ListExpr):
                return base.items[idx.value]
            return ir.Index(base, idx, type=st.elements[idx.value], loc=loc)
        raise P4Error(loc, f"cannot index a value of type {ir.type_str(base.type)}")

    def _x_slice_expr(self, t, ctx, loc, expected):
        base = self.expr(t.children[0], ctx)
        return self.slice(base, t.children[1], t.children[2], ctx, loc)

    def _x_part_select_expr(self, t, ctx, loc, expected):
        base = self.expr(t.children[0], ctx)
        return self.part_select(base, t.children[1], t.children[3], ctx, loc)

    def part_select(self, base, lo_tree, width_tree, ctx, loc):
        """`e[lo +: w]`: the w bits from bit lo up, i.e. `e[lo + w - 1 : lo]`."""
        lo = self.expr(lo_tree, ctx)
        width = self.expr(width_tree, ctx)
        if not isinstance(lo, ir.Const) or not isinstance(width, ir.Const):
            raise P4Unsupported(loc, "an indexed part-select [lo +: w] with a bound that is not a "
                                     "compile-time constant")
        if int(width.value) < 1:
            raise P4Error(loc, f"the width of [lo +: w] must be positive, not {width.value}")
        return self.slice_at(base, int(lo.value) + int(width.value) - 1, int(lo.value), loc)

    def slice(self, base, hi_tree, lo_tree, ctx, loc):
        hi = self.expr(hi_tree, ctx)
        lo = self.expr(lo_tree, ctx)
        if not isinstance(hi, ir.Const) or not isinstance(lo, ir.Const):
            raise P4Error(loc, "slice bounds must be compile-time constants")
        return self.slice_at(base, int(hi.value), int(lo.value), loc)

    def slice_at(self, base, h: int, l: int, loc):
        vt = T.value_type(base.type)
        if not isinstance(vt, (ir.BitT, ir.IntLitT)):
            raise P4Error(loc, f"cannot slice a value of type {ir.type_str(base.type)}")
        if h < l or l < 0 or (isinstance(vt, ir.BitT) and h >= vt.width):
            raise P4Error(loc, f"invalid slice [{h}:{l}] of {ir.type_str(base.type)}")
        rt = ir.BitT(h - l + 1)
        if isinstance(base, ir.Const):
            return ir.Const((base.value >> l) & ((1 << (h - l + 1)) - 1), type=rt, loc=loc)
        return ir.Slice(base, h, l, type=rt, loc=loc)

    # -------------------------------------------------------- operators

    def binary(self, op, lt, rt, ctx, loc) -> ir.Expr:
        left = self.expr(lt, ctx)
        right = self.expr(rt, ctx)
        return self.make_binary(op, left, right, loc)

    def make_binary(self, op, left, right, loc) -> ir.Expr:
        if op in ("&&", "||"):
            for side in (left, right):
                if not isinstance(side.type, ir.BoolT):
                    raise P4Error(side.loc, f"operand of {op} must be bool, not {ir.type_str(side.type)}")
            if isinstance(left, ir.Const):
                if op == "&&":
                    return right if left.value else ir.Const(False, type=ir.BoolT(), loc=loc)
                return ir.Const(True, type=ir.BoolT(), loc=loc) if left.value else right
            return ir.Binary(op, left, right, type=ir.BoolT(), loc=loc)
        if op == "++":
            lv, rv = T.value_type(left.type), T.value_type(right.type)
            for side, v in ((left, lv), (right, rv)):
                if not isinstance(v, ir.BitT):
                    raise P4Error(side.loc, f"operand of ++ must have a width, not {ir.type_str(side.type)}")
            left = self._as_value(left, lv)
            right = self._as_value(right, rv)
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                return T.fold_concat(left, lv, right, rv, loc)
            return ir.Binary(op, left, right, type=ir.BitT(lv.width + rv.width, lv.signed), loc=loc)
        if op in ("<<", ">>"):
            lv, rv = T.value_type(left.type), T.value_type(right.type)
            if not isinstance(lv, (ir.BitT, ir.IntLitT)) or not isinstance(rv, (ir.BitT, ir.IntLitT)):
                raise P4Error(loc, f"operands of {op} must be numbers")
            if isinstance(rv, ir.BitT) and rv.signed:
                raise P4Error(right.loc, "shift amount must be unsigned")
            if isinstance(lv, ir.IntLitT) and not isinstance(right, ir.Const):
                raise P4Error(loc, f"{op}: the left operand needs a width when the shift amount is not constant")
            left = self._as_value(left, lv)
            right = self._as_value(right, rv)
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                return T.fold_binary(op, left, right, lv, loc)
            return ir.Binary(op, left, right, type=lv, loc=loc)
        # arithmetic, bitwise, comparisons: a common type
        lv, rv = T.value_type(left.type), T.value_type(right.type)
        comparison = op in ("==", "!=", "<", "<=", ">", ">=")
        if op in ("==", "!=") and not (T.is_numeric(left.type) and T.is_numeric(right.type)):
            if not (T.same_type(left.type, right.type) or T.assignable(left.type, right.type)
                    or T.assignable(right.type, left.type)):
                raise P4Error(loc, f"cannot compare {ir.type_str(left.type)} with {ir.type_str(right.type)}")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                return T.fold_binary(op, left, right, left.type, loc)
            if isinstance(right.type, ir.IntLitT):
                right = self.coerce(right, left.type, loc)
            elif isinstance(left.type, ir.IntLitT):
                left = self.coerce(left, right.type, loc)
            return ir.Binary(op, left, right, type=ir.BoolT(), loc=loc)
        if not isinstance(lv, (ir.BitT, ir.IntLitT)) or not isinstance(rv, (ir.BitT, ir.IntLitT)):
            bad = left if not isinstance(lv, (ir.BitT, ir.IntLitT)) else right
            raise P4Error(bad.loc, f"operator {op} cannot be applied to {ir.type_str(bad.type)}")
        if isinstance(lv, ir.IntLitT) and isinstance(rv, ir.BitT):
            left = self.coerce(left, rv, loc)
            common = rv
        elif isinstance(rv, ir.IntLitT) and isinstance(lv, ir.BitT):
            right = self.coerce(right, lv, loc)
            common = lv
        elif isinstance(lv, ir.IntLitT):
            common = lv
        else:
            if lv != rv:
                raise P4Error(loc, f"{op}: operands have different types {ir.type_str(left.type)} and "
                                   f"{ir.type_str(right.type)} (width mismatch)")
            common = lv
            left = self._as_value(left, lv)
            right = self._as_value(right, rv)
        if op in ("/", "%") and isinstance(common, ir.BitT) and common.signed:
            if not (isinstance(left, ir.Const) and isinstance(right, ir.Const)):
                raise P4Unsupported(loc, f"{op} on signed values")
        if isinstance(left, ir.Const) and isinstance(right, ir.Const):
            return T.fold_binary(op, left, right, common, loc)
        if op in ("/", "%") and isinstance(right, ir.Const) and right.value == 0:
            raise P4Error(loc, "division by zero")
        return ir.Binary(op, left, right, type=ir.BoolT() if comparison else common, loc=loc)

    def _as_value(self, e: ir.Expr, vt: ir.Type) -> ir.Expr:
        """Make a serializable enum / new type operand explicit as its base."""
        if e.type is vt or T.same_type(e.type, vt):
            return e
        if isinstance(e, ir.Const):
            return ir.Const(e.value, type=vt, loc=e.loc)
        return ir.Cast(e, type=vt, loc=e.loc)

    def _x_u_not(self, t, ctx, loc, expected):
        e = self.expr(t.children[0], ctx)
        if not isinstance(e.type, ir.BoolT):
            raise P4Error(loc, f"operand of ! must be bool, not {ir.type_str(e.type)}")
        if isinstance(e, ir.Const):
            return ir.Const(not e.value, type=ir.BoolT(), loc=loc)
        return ir.Unary("!", e, type=ir.BoolT(), loc=loc)

    def _x_u_compl(self, t, ctx, loc, expected):
        e = self.expr(t.children[0], ctx)
        vt = T.value_type(e.type)
        if isinstance(vt, ir.IntLitT) and expected is not None and isinstance(T.value_type(expected), ir.BitT):
            e = self.coerce(e, expected, loc)
            vt = T.value_type(expected)
        if not isinstance(vt, ir.BitT):
            raise P4Error(loc, f"operand of ~ must have a width, not {ir.type_str(e.type)}")
        e = self._as_value(e, vt)
        if isinstance(e, ir.Const):
            return ir.Const(T.wrap(~e.value, vt), type=vt, loc=loc)
        return ir.Unary("~", e, type=vt, loc=loc)

    def _x_u_neg(self, t, ctx, loc, expected):
        e = self.expr(t.children[0], ctx)
        vt = T.value_type(e.type)
        if not isinstance(vt, (ir.BitT, ir.IntLitT)):
            raise P4Error(loc, f"operand of - must be a number, not {ir.type_str(e.type)}")
        e = self._as_value(e, vt)
        if isinstance(e, ir.Const):
            return ir.Const(T.wrap(-e.value, vt), type=vt, loc=loc)
        return ir.Unary("-", e, type=vt, loc=loc)

    def _x_u_plus(self, t, ctx, loc, expected):
        e = self.expr(t.children[0], ctx)
        if not T.is_numeric(e.type):
            raise P4Error(loc, f"operand of + must be a number, not {ir.type_str(e.type)}")
        return e

    def _x_mux(self, t, ctx, loc, expected):
        cond = self.expr(t.children[0], ctx)
        if not isinstance(cond.type, ir.BoolT):
            raise P4Error(cond.loc, f"condition must be bool, not {ir.type_str(cond.type)}")
        a = self.expr(t.children[1], ctx, None)
        b = self.expr(t.children[2], ctx, None)
        if isinstance(a.type, ir.IntLitT) and not isinstance(b.type, ir.IntLitT):
            a = self.coerce(a, b.type, loc)
        elif isinstance(b.type, ir.IntLitT) and not isinstance(a.type, ir.IntLitT):
            b = self.coerce(b, a.type, loc)
        elif isinstance(a.type, ir.IntLitT) and expected is not None:
            a = self.coerce(a, expected, loc)
            b = self.coerce(b, expected, loc)
        if not (T.same_type(a.type, b.type) or T.assignable(a.type, b.type)):
            raise P4Error(loc, f"?: branches have different types {ir.type_str(a.type)} and {ir.type_str(b.type)}")
        b = self.coerce(b, a.type, loc)
        if isinstance(cond, ir.Const):
            return a if cond.value else b
        return ir.Mux(cond, a, b, type=a.type, loc=loc)

    def _x_cast(self, t, ctx, loc, expected):
        target = self.resolve_type(t.children[0], ctx)
        operand_tree = t.children[1]
        tv = T.value_type(target)
        if isinstance(ir.strip_newtype(target), (ir.StructLikeT, ir.TupleT)):
            return self.expr(operand_tree, ctx, target)
        e = self.expr(operand_tree, ctx)
        sv = T.value_type(e.type)
        ok = (isinstance(tv, (ir.BitT, ir.IntLitT)) and isinstance(sv, (ir.BitT, ir.IntLitT, ir.BoolT))) or \
             (isinstance(tv, ir.BoolT) and (isinstance(sv, ir.BoolT) or
                                           (isinstance(sv, ir.BitT) and sv.width == 1) or isinstance(sv, ir.IntLitT))) or \
             (isinstance(tv, ir.EnumT) and (isinstance(sv, (ir.BitT, ir.IntLitT)) or tv is sv)) or \
             T.same_type(tv, sv)
        if isinstance(ir.strip_newtype(target), ir.EnumT) and ir.strip_newtype(target).underlying is None:
            ok = T.same_type(target, e.type)
        if not ok:
            raise P4Error(loc, f"cannot cast {ir.type_str(e.type)} to {ir.type_str(target)}")
        if isinstance(e, ir.Const):
            return T.fold_cast(e, target, loc)
        if T.same_type(e.type, target):
            return e
        return ir.Cast(e, type=target, loc=loc)

    # ------------------------------------------------ composite literals

    def _x_list_expr(self, t, ctx, loc, expected):
        items_tree = t.children[0].children if t.children else []
        target = ir.strip_newtype(expected) if expected is not None else None
        if isinstance(target, ir.StructLikeT) and not isinstance(target, ir.UnionT):
            if len(items_tree) != len(target.fields):
                raise P4Error(loc, f"{target.name} has {len(target.fields)} fields, the list has {len(items_tree)}")
            fields = {f.name: self.expr(it, ctx, f.type) for f, it in zip(target.fields, items_tree)}
            return ir.StructExpr(fields, type=expected, loc=loc)
        if isinstance(target, ir.TupleT) and len(target.elements) == len(items_tree):
            items = [self.expr(it, ctx, et) for it, et in zip(items_tree, target.elements)]
            return ir.ListExpr(items, type=target, loc=loc)
        items = [self.expr(it, ctx) for it in items_tree]
        return ir.ListExpr(items, type=ir.TupleT(tuple(i.type for i in items)), loc=loc)

    def _kv(self, kv_tree, ctx, target):
        fields = {}
        for pair in kv_tree.children:
            name = tok_value(pair.children[0])
            if name in fields:
                raise P4Error(self.loc(pair, ctx), f"field '{name}' given twice")
            ftype = None
            if isinstance(target, ir.StructLikeT):
                f = target.field(name)
                if f is None:
                    raise P4Error(self.loc(pair, ctx), f"{target.name} has no field '{name}'")
                ftype = f.type
            fields[name] = self.expr(pair.children[1], ctx, ftype)
        return fields

    def _x_struct_expr(self, t, ctx, loc, expected):
        target = ir.strip_newtype(expected) if expected is not None else None
        if not isinstance(target, ir.StructLikeT):
            target = None
        fields = self._kv(t.children[0], ctx, target)
        if target is not None:
            missing = [f.name for f in target.fields if f.name not in fields]
            if missing:
                raise P4Error(loc, f"{target.name}: missing field(s) {', '.join(missing)}")
            return ir.StructExpr(fields, type=expected, loc=loc)
        anon = ir.StructT("", [ir.Field(n, e.type) for n, e in fields.items()])
        return ir.StructExpr(fields, type=anon, loc=loc)

    def _x_typed_struct_expr(self, t, ctx, loc, expected):
        target = self.resolve_type(t.children[0], ctx)
        st = ir.strip_newtype(target)
        if not isinstance(st, ir.StructLikeT):
            raise P4Error(loc, f"{ir.type_str(target)} is not a struct or header type")
        fields = self._kv(t.children[1], ctx, st) if len(t.children) > 1 else {}
        missing = [f.name for f in st.fields if f.name not in fields]
        if missing:
            raise P4Error(loc, f"{st.name}: missing field(s) {', '.join(missing)}")
        return ir.StructExpr(fields, type=target, loc=loc)

    def _x_ctor_expr(self, t, ctx, loc, expected):
        return self.instantiate_expr(t, ctx, loc)

    # ------------------------------------------------------------- coerce

    def coerce(self, e: ir.Expr, target: ir.Type, loc, what: str = "") -> ir.Expr:
        """Implicit conversion of `e` to `target` or a type error."""
        if target is None or isinstance(target, ir.TypeParamT):
            return e
        src = e.type
        if T.same_type(src, target):
            return e
        prefix = f"{what}: " if what else ""
        tv = T.value_type(target)
        if isinstance(src, ir.IntLitT):
            if isinstance(tv, (ir.BitT, ir.IntLitT)):
                if isinstance(e, ir.Const):
                    if isinstance(tv, ir.BitT):
                        return ir.Const(T.wrap(e.value, tv), type=target, loc=e.loc)
                    return ir.Const(e.value, type=target, loc=e.loc)
                return ir.Cast(e, type=target, loc=e.loc)
            raise P4Error(e.loc, f"{prefix}cannot use an integer where {ir.type_str(target)} is expected")
        if isinstance(e, (ir.ListExpr, ir.StructExpr)) and isinstance(ir.strip_newtype(target), (ir.StructLikeT, ir.TupleT)):
            st = ir.strip_newtype(target)
            if isinstance(e, ir.ListExpr) and isinstance(st, ir.StructLikeT):
                if len(e.items) != len(st.fields):
                    raise P4Error(e.loc, f"{prefix}{st.name} has {len(st.fields)} fields, the list has {len(e.items)}")
                return ir.StructExpr({f.name: self.coerce(i, f.type, loc, what) for f, i in zip(st.fields, e.items)},
                                     type=target, loc=e.loc)
            if isinstance(e, ir.StructExpr) and isinstance(st, ir.StructLikeT):
                if set(e.fields) != {f.name for f in st.fields}:
                    raise P4Error(e.loc, f"{prefix}fields do not match {st.name}")
                return ir.StructExpr({f.name: self.coerce(e.fields[f.name], f.type, loc, what) for f in st.fields},
                                     type=target, loc=e.loc)
            if isinstance(e, ir.ListExpr) and isinstance(st, ir.TupleT) and len(e.items) == len(st.elements):
                return ir.ListExpr([self.coerce(i, et, loc, what) for i, et in zip(e.items, st.elements)],
                                   type=target, loc=e.loc)
        if T.assignable(target, src):
            if isinstance(e, ir.Const):
                return ir.Const(e.value, type=target, loc=e.loc)
            return ir.Cast(e, type=target, loc=e.loc)
        raise P4Error(e.loc if e.loc is not ir.NO_LOC else loc,
                      f"{prefix}type mismatch: expected {ir.type_str(target)}, got {ir.type_str(src)}")

    # ---------------------------------------------------------------- calls

    def _x_call_expr(self, t, ctx, loc, expected):
        return self.call(t.children[0], None, t.children[1], ctx, loc)

    def _x_generic_call_expr(self, t, ctx, loc, expected):
        targs = [self.resolve_type(a, ctx) for a in t.children[1].children]
        return self.call(t.children[0], targs, t.children[2], ctx, loc)

    def callee(self, tree, ctx):
        """(base Expr or None, member name or None, named entity Expr)."""
        data = tree.data
        if data in ("member_expr", "lv_member"):
            base = self._expr(tree.children[0], ctx) if data == "member_expr" else self.lvalue_any(tree.children[0], ctx)
            return base, tok_value(tree.children[1])
        if data == "type_member_expr":
            name = tok_value(tree.children[0])
            ent = (ctx.scope.top() if tree.children[0].data == "dot_type_name" else ctx.scope).lookup(name)
            mname = tok_value(tree.children[1])
            if isinstance(ent, (ir.Var, ir.Param, ir.Instance, ir.ConstDecl)):
                return self.entity_value(ent, name, self.loc(tree, ctx)), mname
            if isinstance(ent, ir.Type):
                return TypeName(target=ent, type=ent, loc=self.loc(tree, ctx)), mname
            raise P4Error(self.loc(tree, ctx), f"unknown name '{name}'")
        if data in ("name_expr", "lv_name"):
            inner = tree.children[0]
            if isinstance(inner, Tree) and inner.data == "dot_name":
                return self.name_value(tok_value(inner), ctx.scope.top(), self.loc(tree, ctx)), None
            return self.name_value(tok_value(inner), ctx.scope, self.loc(tree, ctx)), None
        if data == "dot_name_expr":
            return self.name_value(tok_value(tree), ctx.scope.top(), self.loc(tree, ctx)), None
        return self._expr(tree, ctx), None

    def call(self, callee_tree, type_args, args_tree, ctx, loc) -> ir.Expr:
        base, member = self.callee(callee_tree, ctx)
        args = list(args_tree.children) if args_tree is not None else []
        if member is None:
            if isinstance(base, ActionName) and len(args) > len(base.target.params):
                # an action named like an extern function (p4c's issue1541:
                # `action hash() { hash(...); }`): the call resolves by arity
                outer = ctx.scope.top().lookup(base.target.name)
                if isinstance(outer, Overloads):
                    return self.extern_function_call(outer, type_args, args, ctx, loc)
            if isinstance(base, ActionName):
                return self.action_call(base.target, args, ctx, loc)
            if isinstance(base, FunctionName):
                decl = base.target
                bound = self.bind_args(decl.params, args, ctx, loc, f"function {decl.name}", {})
                return ir.FunctionCall(decl, bound, type=decl.return_type, loc=loc)
            if isinstance(base, ExternFunctionName):
                return self.extern_function_call(base.target, type_args, args, ctx, loc)
            raise P4Error(loc, "this expression cannot be called")
        # method call
        if isinstance(base, TableName):
            if member != "apply":
                raise P4Error(loc, f"table '{base.target.name}' has no method '{member}'")
            if args:
                raise P4Error(loc, "table apply() takes no arguments")
            self.note_table_apply(base.target, ctx, loc)
            return ir.TableApply(base.target, type=ir.TableApplyResultT(base.target.cp_name or base.target.name), loc=loc)
        if isinstance(base, TypeName):
            ty = base.target
            if member in _SIZE_METHODS and isinstance(ty, ir.Type):
                return self.size_method(member, ty, None, loc)
            raise P4Error(loc, f"type '{getattr(ty, 'name', ty)}' has no method '{member}'")
        if isinstance(base, _Named):
            raise P4Error(loc, f"'{getattr(base.target, 'name', '?')}' has no method '{member}'")
        bt = base.type
        st = ir.strip_newtype(bt)
        if isinstance(st, ir.ExternT):
            return self.extern_method_call(base, st, member, type_args, args, ctx, loc)
        if isinstance(st, (ir.ParserT, ir.ControlT)):
            if member != "apply":
                raise P4Error(loc, f"'{base.target.name if isinstance(base, ir.InstanceRef) else '?'}' has no method '{member}'")
            if not isinstance(base, ir.InstanceRef):
                raise P4Unsupported(loc, "apply of a parser/control passed as a parameter")
            decl = st.decl
            bound = self.bind_args(decl.params, args, ctx, loc, f"{decl.name}.apply", {})
            return ir.SubApply(base.target, bound, type=ir.VoidT(), loc=loc)
        if member in _HEADER_METHODS and isinstance(st, (ir.HeaderT, ir.UnionT)):
            if args:
                raise P4Error(loc, f"{member}() takes no arguments")
            if member != "isValid" and isinstance(st, ir.UnionT):
                raise P4Error(loc, f"{member}() cannot be called on a header_union")
            if member != "isValid" and not is_lvalue(base):
                raise P4Error(loc, f"{member}() needs a writable header")
            return ir.BuiltinCall(member, base, [], type=ir.BoolT() if member == "isValid" else ir.VoidT(), loc=loc)
        if member in ("push_front", "pop_front") and isinstance(st, ir.StackT):
            if len(args) != 1:
                raise P4Error(loc, f"{member}() takes one argument")
            count = self.expr(args[0], ctx)
            if not isinstance(count, ir.Const) or not isinstance(count.value, int) or count.value < 0:
                raise P4Error(loc, f"{member}() needs a non-negative constant count")
            if not is_lvalue(base):
                raise P4Error(loc, f"{member}() needs a writable header stack")
            return ir.BuiltinCall(member, base, [ir.Const(count.value, type=ir.IntLitT(), loc=count.loc)],
                                  type=ir.VoidT(), loc=loc)
        if member in _SIZE_METHODS:
            if args:
                raise P4Error(loc, f"{member}() takes no arguments")
            return self.size_method(member, bt, base, loc)
        raise P4Error(loc, f"value of type {ir.type_str(bt)} has no method '{member}'")

    def size_method(self, member, ty, base, loc):
        if "min" in member:
            bits = T.min_size_in_bits(ty)
        else:
            bits = T.max_size_in_bits(ty)
        if bits is None:
            raise P4Error(loc, f"{member}() of {ir.type_str(ty)}")
        # min/max sizes are static even with varbit fields (varbit counts
        # 0 for min, its maximum for max), so they always fold
        value = bits if member.endswith("Bits") else (bits + 7) // 8
        return ir.Const(value, type=ir.IntLitT(), loc=loc)

    def action_call(self, action: ir.ActionDecl, args, ctx, loc) -> ir.ActionCall:
        if ctx.kind == "parser":
            raise P4Error(loc, f"action {action.name} cannot be called from a parser")
        bound = self.bind_args(action.params, args, ctx, loc, f"action {action.name}", {})
        return ir.ActionCall(action, bound, type=ir.VoidT(), loc=loc)

    def extern_function_call(self, ov: Overloads, type_args, args, ctx, loc):
        decl = self.pick_overload(ov.decls, args, loc, f"function {ov.name}")
        bindings = {}
        if type_args:
            if len(type_args) != len(decl.type_params):
                raise P4Error(loc, f"{ov.name} takes {len(decl.type_params)} type arguments")
            bindings = dict(zip(decl.type_params, type_args))
        bound = self.bind_args(decl.params, args, ctx, loc, f"{ov.name}", bindings)
        targs = [bindings.get(p, ir.TypeParamT(p)) for p in decl.type_params]
        rt = T.substitute(decl.return_type, bindings)
        if ov.name == "static_assert":
            return self.static_assert(bound, loc)
        return ir.ExternFunctionCall(decl, bound, targs, type=rt, loc=loc)

    @staticmethod
    def static_assert(bound, loc) -> ir.Const:
        """core.p4's static_assert, evaluated while loading (as p4c does)."""
        check = bound[0]
        if not isinstance(check, ir.Const) or not isinstance(check.value, bool):
            raise P4Error(loc, "static_assert needs a compile-time constant condition")
        if not check.value:
            message = bound[1].value if len(bound) > 1 and isinstance(bound[1], ir.Const) else ""
            raise P4Error(loc, f"static assertion failed{': ' + message if message else ''}")
        return ir.Const(True, type=ir.BoolT(), loc=loc)

    def extern_method_call(self, base, et: ir.ExternT, member, type_args, args, ctx, loc):
        decl = et.decl
        methods = [m for m in decl.methods if m.name == member and m.name != decl.name]
        if not methods:
            raise P4Error(loc, f"extern {decl.name} has no method '{member}'")
        m = self.pick_overload(methods, args, loc, f"{decl.name}.{member}")
        bindings = dict(zip(decl.type_params, et.type_args))
        if type_args:
            if len(type_args) != len(m.type_params):
                raise P4Error(loc, f"{decl.name}.{member} takes {len(m.type_params)} type arguments")
            bindings.update(zip(m.type_params, type_args))
        bound = self.bind_args(m.params, args, ctx, loc, f"{decl.name}.{member}", bindings)
        targs = [bindings.get(p, ir.TypeParamT(p)) for p in m.type_params]
        rt = T.substitute(m.return_type, bindings)
        if isinstance(rt, ir.TypeParamT):
            raise P4Error(loc, f"{decl.name}.{member}: cannot infer the result type; write {member}<T>()")
        return ir.ExternMethodCall(base, m, bound, targs, type=rt, loc=loc)

    def pick_overload(self, decls, args, loc, what):
        """Overload resolution by argument count (and argument names)."""
        names = [tok_value(a.children[0]) for a in args
                 if isinstance(a, Tree) and a.data in ("named_arg", "named_dontcare")]
        fits = []
        for d in decls:
            params = d.params
            if len(args) > len(params):
                continue
            if names:
                pnames = {p.name for p in params}
                if not all(n in pnames for n in names):
                    continue
                given = set(names) | {p.name for p in params[:len(args) - len(names)]}
            else:
                given = {p.name for p in params[:len(args)]}
            if all(p.name in given or p.default is not None or p.optional for p in params):
                fits.append(d)
        if not fits:
            counts = sorted({len(d.params) for d in decls})
            raise P4Error(loc, f"{what}: wrong number of arguments ({len(args)}; expected "
                               f"{' or '.join(str(c) for c in counts)})")
        if len(fits) > 1:
            exact = [d for d in fits if len(d.params) == len(args)]
            if exact:
                return exact[0]
        return fits[0]

    def bind_args(self, params, args, ctx, loc, what, bindings) -> list:
        """Match arguments to parameters (positional, then named), lower
        them with the parameter type as context, check directions, fill
        defaults; returns expressions in parameter order."""
        slots: list = [None] * len(params)
        index = {p.name: i for i, p in enumerate(params)}
        seen_named = False
        if len(args) > len(params):
            raise P4Error(loc, f"{what}: wrong number of arguments ({len(args)}; expected {len(params)})")
        for pos, a in enumerate(args):
            if isinstance(a, Tree) and a.data in ("named_arg", "named_dontcare"):
                seen_named = True
                name = tok_value(a.children[0])
                if name not in index:
                    raise P4Error(self.loc(a, ctx), f"{what}: no parameter named '{name}'")
                i = index[name]
                value = a.children[1] if a.data == "named_arg" else None
            else:
                if seen_named:
                    raise P4Error(self.loc(a, ctx), f"{what}: positional argument after named arguments")
                i = pos
                value = None if (isinstance(a, Tree) and a.data == "dontcare_arg") else a
            if slots[i] is not None:
                raise P4Error(loc, f"{what}: parameter '{params[i].name}' given twice")
            slots[i] = ("dontcare", a) if value is None else ("expr", value)
        result = []
        for i, p in enumerate(params):
            slot = slots[i]
            ptype = T.substitute(p.type, bindings)
            if slot is None:
                if p.default is not None:
                    result.append(self.coerce(p.default, ptype, loc) if not isinstance(ptype, ir.TypeParamT) else p.default)
                    continue
                if p.optional:
                    result.append(ir.DontCare(type=ptype, loc=loc))
                    continue
                raise P4Error(loc, f"{what}: missing argument for parameter '{p.name}'")
            kind, tree = slot
            if kind == "dontcare":
                if p.direction not in ("out", "inout") and not p.optional:
                    raise P4Error(self.loc(tree, ctx), f"{what}: '_' can only be passed to an out parameter")
                result.append(ir.DontCare(type=ptype, loc=self.loc(tree, ctx)))
                continue
            concrete = not _has_type_param(ptype)
            if p.direction == "" and isinstance(ir.strip_newtype(ptype), (ir.ParserT, ir.ControlT, ir.ExternT)):
                inst = self.instance_arg(tree, ctx, ptype, f"{what}: argument '{p.name}'")
                if inst is not None:
                    result.append(inst)
                    continue
            e = self.expr(tree, ctx, None)
            if isinstance(e, (ir.ListExpr, ir.StructExpr)) and concrete:
                e = self.coerce(e, ptype, e.loc, f"{what}: argument '{p.name}'")
            if not concrete:
                if not T.unify(ptype, e.type, bindings):
                    raise P4Error(e.loc, f"{what}: argument '{p.name}' has type {ir.type_str(e.type)}, "
                                         f"expected {ir.type_str(ptype)}")
                ptype = T.substitute(ptype, bindings)
            if not _has_type_param(ptype):
                e = self.coerce(e, ptype, e.loc, f"{what}: argument '{p.name}'")
            if p.direction in ("out", "inout") and not is_lvalue(e):
                raise P4Error(e.loc, f"{what}: argument '{p.name}' must be writable (it is an {p.direction} parameter)")
            result.append(e)
        return result

    def instance_arg(self, tree, ctx, ptype, what):
        """An instance passed to a parameter of parser/control/extern type
        (a constructor argument): `c1` naming an instance or `C1()` making
        an anonymous one.  Returns the Instance, or None when the argument
        is not an instance (an extern-typed value such as a packet_in
        parameter, checked by the caller as usual)."""
        e = self._expr(tree, ctx)
        inst = e if isinstance(e, ir.Instance) else (e.target if isinstance(e, ir.InstanceRef) else None)
        want = ir.strip_newtype(ptype)
        if inst is None:
            if isinstance(want, (ir.ParserT, ir.ControlT)):
                raise P4Error(self.loc(tree, ctx), f"{what} must be a {type(want).__name__[:-1].lower()} "
                                                   f"instance of type {ir.type_str(want)}")
            return None
        got = inst.type
        if isinstance(want, ir.ExternT):
            ok = isinstance(got, ir.ExternT) and got.decl is want.decl and (
                any(isinstance(a, ir.TypeParamT) for a in want.type_args)
                or all(T.same_type(a, b) for a, b in zip(want.type_args, got.type_args)))
            if not ok:
                raise P4Error(inst.loc if e is inst else e.loc,
                              f"{what} has type {ir.type_str(got)}, expected {ir.type_str(want)}")
            return inst
        if type(got) is not type(want):
            raise P4Error(e.loc if e is not inst else self.loc(tree, ctx),
                          f"{what} has type {ir.type_str(got)}, expected {ir.type_str(want)}")
        expected, actual = want.decl.params, got.decl.params
        bindings: dict = {}
        same = len(expected) == len(actual) and all(
            x.direction == y.direction and (T.unify(x.type, y.type, bindings) if _has_type_param(x.type)
                                            else T.same_type(x.type, y.type))
            for x, y in zip(expected, actual))
        if not same:
            sig = lambda ps: ", ".join(f"{(q.direction + ' ') if q.direction else ''}{ir.type_str(q.type)}"
                                       for q in ps)
            raise P4Error(self.loc(tree, ctx), f"{what}: {got.decl.name}({sig(actual)}) does not match "
                                               f"{want.decl.name}({sig(expected)})")
        return inst

    # ----------------------------------------------------------- l-values

    def lvalue_any(self, tree, ctx) -> ir.Expr:
        """An lvalue tree lowered as an expression (read or write)."""
        data = tree.data
        loc = self.loc(tree, ctx)
        if data == "lv_name":
            inner = tree.children[0]
            scope = ctx.scope.top() if inner.data == "dot_name" else ctx.scope
            return self.name_value(tok_value(inner), scope, loc)
        if data == "lv_this":
            raise P4Unsupported(loc, "'this'")
        if data == "lv_member":
            base = self.lvalue_any(tree.children[0], ctx)
            return self.member(base, tok_value(tree.children[1]), loc)
        if data == "lv_index":
            return self.index(self.lvalue_any(tree.children[0], ctx), tree.children[1], ctx, loc)
        if data == "lv_slice":
            return self.slice(self.lvalue_any(tree.children[0], ctx), tree.children[1], tree.children[2], ctx, loc)
        if data == "lv_part_select":
            return self.part_select(self.lvalue_any(tree.children[0], ctx), tree.children[1], tree.children[3],
                                    ctx, loc)
        return self._expr(tree, ctx)

    def lvalue(self, tree, ctx) -> ir.Expr:
        e = self.lvalue_any(tree, ctx)
        if isinstance(e, _Named) or not is_lvalue(e):
            raise P4Error(self.loc(tree, ctx), f"'{self.text(tree)}' cannot be assigned (not a writable l-value)")
        return e


def _constant_copy(value, loc):
    """A use of a constant: a fresh node located at the use (a struct or
    tuple constant is rebuilt, so no two uses share a node)."""
    if isinstance(value, ir.ListExpr):
        return ir.ListExpr([_constant_copy(i, loc) for i in value.items], type=value.type, loc=loc)
    if isinstance(value, ir.StructExpr):
        return ir.StructExpr({k: _constant_copy(v, loc) for k, v in value.fields.items()},
                             type=value.type, loc=loc)
    return ir.Const(value.value, type=value.type, loc=loc)


def _has_type_param(t) -> bool:
    if isinstance(t, ir.TypeParamT):
        return True
    if isinstance(t, (ir.StackT, ir.ArrayT)):
        return _has_type_param(t.element)
    if isinstance(t, ir.TupleT):
        return any(_has_type_param(e) for e in t.elements)
    if isinstance(t, ir.ExternT):
        return any(_has_type_param(a) for a in t.type_args)
    return False
