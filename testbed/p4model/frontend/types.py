"""Type rules of P4-16 used by the front end: equality, implicit casts,
generic unification, value wrapping and constant folding.

Why separate: these rules are pure functions of IR types and constants, so
they are tested in isolation and shared by expression lowering, table
entries and parser keysets.
"""

from __future__ import annotations

import re

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir

_INT = re.compile(r"(?:(\d+)([ws]))?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[dD][0-9]+|[0-9]+)$")


def parse_int_literal(text: str, loc) -> ir.Const:
    """P4 integer literal (`42`, `0x2A`, `8w42`, `8s0x7f`, `16w0b1010`, with `_`)."""
    clean = text.replace("_", "")
    m = _INT.match(clean)
    if not m:
        raise P4Error(loc, f"invalid integer literal {text!r}")
    width, kind, digits = m.groups()
    base = 10
    if digits[:2] in ("0x", "0X"):
        base, digits = 16, digits[2:]
    elif digits[:2] in ("0b", "0B"):
        base, digits = 2, digits[2:]
    elif digits[:2] in ("0o", "0O"):
        base, digits = 8, digits[2:]
    elif digits[:2] in ("0d", "0D"):
        base, digits = 10, digits[2:]
    value = int(digits, base)
    if width is None:
        return ir.Const(value, type=ir.IntLitT(), loc=loc)
    w = int(width)
    if w <= 0 or w > 4096:
        raise P4Error(loc, f"invalid width {w} in integer literal {text!r}")
    t = ir.BitT(w, kind == "s")
    limit = (1 << (w - 1)) if t.signed else (1 << w)
    if value >= limit and not (t.signed and value < (1 << w)):
        raise P4Error(loc, f"value {value} does not fit in {t}")
    return ir.Const(wrap(value, t), type=t, loc=loc)


def wrap(value: int, t: ir.Type) -> int:
    """Wrap an integer to the width of a bit/int type (two's complement)."""
    t = value_type(t)
    if isinstance(t, ir.BitT):
        mask = (1 << t.width) - 1
        value &= mask
        if t.signed and value >> (t.width - 1):
            value -= 1 << t.width
    return value


def value_type(t: ir.Type) -> ir.Type:
    """The type values are computed in: NewT stripped, serializable enums
    as their underlying bit type."""
    t = ir.strip_newtype(t)
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying
    return t


def is_numeric(t: ir.Type) -> bool:
    return isinstance(value_type(t), (ir.BitT, ir.IntLitT))


def same_type(a: ir.Type, b: ir.Type) -> bool:
    """Type identity (structural for bit/int/stack/tuple, by declaration
    for named types)."""
    if a is b:
        return True
    if isinstance(a, ir.BitT) and isinstance(b, ir.BitT):
        return a == b
    if isinstance(a, (ir.BoolT, ir.StringT, ir.IntLitT, ir.VoidT)) and type(a) is type(b):
        return True
    if isinstance(a, ir.VarbitT) and isinstance(b, ir.VarbitT):
        return a.max_width == b.max_width
    if isinstance(a, ir.StackT) and isinstance(b, ir.StackT):
        return a.size == b.size and same_type(a.element, b.element)
    if isinstance(a, ir.ArrayT) and isinstance(b, ir.ArrayT):
        return a.size == b.size and same_type(a.element, b.element)
    if isinstance(a, ir.TupleT) and isinstance(b, ir.TupleT):
        return len(a.elements) == len(b.elements) and all(
            same_type(x, y) for x, y in zip(a.elements, b.elements))
    if isinstance(a, ir.ErrorT) and isinstance(b, ir.ErrorT):
        return True
    if isinstance(a, ir.MatchKindT) and isinstance(b, ir.MatchKindT):
        return True
    if isinstance(a, ir.ExternT) and isinstance(b, ir.ExternT):
        return a.decl is b.decl and len(a.type_args) == len(b.type_args) and all(
            same_type(x, y) for x, y in zip(a.type_args, b.type_args))
    if isinstance(a, ir.TypeParamT) and isinstance(b, ir.TypeParamT):
        return a.name == b.name
    return False


def substitute(t: ir.Type, bindings: dict) -> ir.Type:
    """Replace type parameters by their bound types."""
    if isinstance(t, ir.TypeParamT):
        return bindings.get(t.name, t)
    if isinstance(t, ir.StackT):
        return ir.StackT(substitute(t.element, bindings), t.size)
    if isinstance(t, ir.ArrayT):
        return ir.ArrayT(substitute(t.element, bindings), t.size)
    if isinstance(t, ir.TupleT):
        return ir.TupleT(tuple(substitute(e, bindings) for e in t.elements))
    if isinstance(t, ir.ExternT) and t.type_args:
        return ir.ExternT(t.decl, [substitute(a, bindings) for a in t.type_args], typedef=t.typedef)
    if isinstance(t, ir.StructLikeT) and t.origin is not None:
        template, args = t.origin
        bound = [substitute(a, bindings) for a in args]
        if any(b is not a for a, b in zip(args, bound)):
            return template.specialise(bound, t.loc)
    return t


def unify(param: ir.Type, arg: ir.Type, bindings: dict) -> bool:
    """Bind type parameters in `param` so that it accepts `arg`; True if
    the types are compatible."""
    if isinstance(param, ir.TypeParamT):
        bound = bindings.get(param.name)
        if bound is None:
            bindings[param.name] = arg
            return True
        if isinstance(bound, ir.IntLitT) and not isinstance(arg, ir.IntLitT):
            bindings[param.name] = arg
            return True
        return isinstance(arg, ir.IntLitT) or same_type(bound, arg) or assignable(bound, arg)
    if isinstance(param, ir.StackT) and isinstance(arg, ir.StackT):
        return param.size == arg.size and unify(param.element, arg.element, bindings)
    if isinstance(param, ir.ArrayT) and isinstance(arg, ir.ArrayT):
        return param.size == arg.size and unify(param.element, arg.element, bindings)
    if isinstance(param, ir.TupleT) and isinstance(arg, ir.TupleT):
        return len(param.elements) == len(arg.elements) and all(
            unify(p, a, bindings) for p, a in zip(param.elements, arg.elements))
    if isinstance(param, ir.ExternT) and isinstance(arg, ir.ExternT):
        if param.decl is not arg.decl:
            return False
        return all(unify(p, a, bindings) for p, a in zip(param.type_args, arg.type_args))
    return assignable(param, arg)


def assignable(target: ir.Type, source: ir.Type) -> bool:
    """Can a value of type `source` be used where `target` is expected
    (with P4's implicit casts: int literals take the target's width,
    serializable enums convert to and from their underlying bit<W>, `type`s
    to their base, as p4c accepts for assignments)?  Never between
    different widths: p4c rejects `bit<64> c = a + b` with a, b bit<32>
    ("Cannot cast implicitly type 'bit<32>' to type 'bit<64>'"); its
    samples that once relied on it (arith-bmv2) now cast explicitly."""
    if same_type(target, source):
        return True
    if isinstance(source, ir.IntLitT):
        return isinstance(value_type(target), (ir.BitT, ir.IntLitT))
    tv, sv = value_type(target), value_type(source)
    if isinstance(target, ir.NewT) or isinstance(source, ir.NewT):
        return same_type(tv, sv) or (isinstance(tv, ir.EnumT) and tv is sv)
    if isinstance(source, ir.EnumT) and source.underlying is not None:
        return same_type(target, source.underlying) or same_type(tv, sv)
    if isinstance(target, ir.EnumT) and target.underlying is not None:
        # p4c (TypeUnification, CanBeImplicitlyCastConstraint): a value of
        # the underlying bit<W> converts implicitly to a serializable enum
        return same_type(target.underlying, sv)
    if isinstance(target, ir.StructT) and isinstance(source, ir.StructT) and not source.name:
        return _fields_assignable(target, source)
    if isinstance(target, ir.HeaderT) and isinstance(source, ir.StructT) and not source.name:
        return _fields_assignable(target, source)
    if isinstance(target, ir.StructLikeT) and isinstance(source, ir.TupleT):
        return len(target.fields) == len(source.elements) and all(
            assignable(f.type, e) for f, e in zip(target.fields, source.elements))
    if isinstance(target, ir.TupleT) and isinstance(source, ir.TupleT):
        return len(target.elements) == len(source.elements) and all(
            assignable(a, b) for a, b in zip(target.elements, source.elements))
    return False


def _fields_assignable(target: ir.StructLikeT, source: ir.StructLikeT) -> bool:
    if len(target.fields) != len(source.fields):
        return False
    for f in source.fields:
        tf = target.field(f.name)
        if tf is None or not assignable(tf.type, f.type):
            return False
    return True


# --------------------------------------------------------------------------
# constant folding


def fold_binary(op: str, a: ir.Const, b: ir.Const, t: ir.Type, loc) -> ir.Const:
    """Fold `a op b` for constants whose operands already share type `t`
    (or IntLitT); the result type is `t` (bool for comparisons)."""
    x, y = a.value, b.value
    vt = value_type(t)
    if op in ("==", "!="):
        r = (x == y) if op == "==" else (x != y)
        return ir.Const(r, type=ir.BoolT(), loc=loc)
    if op in ("<", "<=", ">", ">="):
        r = {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
        return ir.Const(r, type=ir.BoolT(), loc=loc)
    if op in ("&&", "||"):
        r = (x and y) if op == "&&" else (x or y)
        return ir.Const(bool(r), type=ir.BoolT(), loc=loc)
    if isinstance(x, bool) or isinstance(y, bool):
        raise P4Error(loc, f"operator {op} cannot be applied to bool")
    if op == "+":
        r = x + y
    elif op == "-":
        r = x - y
    elif op == "*":
        r = x * y
    elif op in ("/", "%"):
        if y == 0:
            raise P4Error(loc, "division by zero")
        if x < 0 or y < 0:
            raise P4Error(loc, f"operator {op} requires non-negative operands")
        r = x // y if op == "/" else x % y
    elif op == "&":
        r = x & y
    elif op == "|":
        r = x | y
    elif op == "^":
        r = x ^ y
    elif op == "<<":
        if y < 0:
            raise P4Error(loc, "negative shift amount")
        if isinstance(vt, ir.BitT) and y >= vt.width:
            r = 0
        else:
            r = x << min(y, 1 << 16)
    elif op == ">>":
        if y < 0:
            raise P4Error(loc, "negative shift amount")
        r = x >> min(y, 1 << 16)
    elif op in ("|+|", "|-|"):
        r = x + y if op == "|+|" else x - y
        if isinstance(vt, ir.BitT):
            lo, hi = ((-(1 << (vt.width - 1)), (1 << (vt.width - 1)) - 1) if vt.signed
                      else (0, (1 << vt.width) - 1))
            r = max(lo, min(hi, r))
    else:
        raise P4Error(loc, f"cannot fold operator {op}")
    if isinstance(vt, ir.BitT):
        r = wrap(r, vt)
    return ir.Const(r, type=t if isinstance(vt, ir.BitT) else ir.IntLitT(), loc=loc)


def fold_concat(a: ir.Const, at: ir.BitT, b: ir.Const, bt: ir.BitT, loc) -> ir.Const:
    t = ir.BitT(at.width + bt.width, at.signed)
    raw = ((a.value & ((1 << at.width) - 1)) << bt.width) | (b.value & ((1 << bt.width) - 1))
    return ir.Const(wrap(raw, t), type=t, loc=loc)


def fold_cast(c: ir.Const, target: ir.Type, loc) -> ir.Const:
    tv = value_type(target)
    v = c.value
    if isinstance(tv, ir.BoolT):
        if isinstance(v, bool):
            return ir.Const(v, type=target, loc=loc)
        if v not in (0, 1):
            raise P4Error(loc, f"cannot cast {v} to bool")
        return ir.Const(bool(v), type=target, loc=loc)
    if isinstance(tv, ir.BitT):
        if isinstance(v, bool):
            v = int(v)
        if not isinstance(v, int):
            raise P4Error(loc, f"cannot cast {v!r} to {target}")
        src = value_type(c.type)
        if isinstance(src, ir.BitT) and src.signed and not tv.signed:
            v = v & ((1 << src.width) - 1) if tv.width >= src.width else v
        return ir.Const(wrap(v, tv), type=target, loc=loc)
    if isinstance(tv, ir.IntLitT):
        return ir.Const(int(v), type=target, loc=loc)
    return ir.Const(v, type=target, loc=loc)


def min_size_in_bits(t: ir.Type):
    """minSizeInBits of a type (varbit fields count 0); None if unsized."""
    t = ir.strip_newtype(t)
    if isinstance(t, ir.HeaderT):
        return sum(min_size_in_bits(f.type) or 0 for f in t.fields)
    if isinstance(t, ir.UnionT):
        sizes = [min_size_in_bits(f.type) or 0 for f in t.fields]
        return min(sizes) if sizes else 0
    if isinstance(t, ir.StructT):
        return sum(min_size_in_bits(f.type) or 0 for f in t.fields)
    if isinstance(t, (ir.StackT, ir.ArrayT)):
        return (min_size_in_bits(t.element) or 0) * t.size
    if isinstance(t, ir.VarbitT):
        return 0
    if isinstance(t, ir.TupleT):
        return sum(min_size_in_bits(e) or 0 for e in t.elements)
    return t.bit_width()


def max_size_in_bits(t: ir.Type):
    t = ir.strip_newtype(t)
    if isinstance(t, ir.VarbitT):
        return t.max_width
    if isinstance(t, (ir.HeaderT, ir.StructT)):
        return sum(max_size_in_bits(f.type) or 0 for f in t.fields)
    if isinstance(t, ir.UnionT):
        sizes = [max_size_in_bits(f.type) or 0 for f in t.fields]
        return max(sizes) if sizes else 0
    if isinstance(t, (ir.StackT, ir.ArrayT)):
        return (max_size_in_bits(t.element) or 0) * t.size
    if isinstance(t, ir.TupleT):
        return sum(max_size_in_bits(e) or 0 for e in t.elements)
    return t.bit_width()
