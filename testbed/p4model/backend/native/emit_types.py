"""P4 types -> C structs.

Model: every scalar (bit<W> with W <= 64, bool, error, serializable enum,
type/newtype of those) is one uint64_t holding the value masked to its
width; bit<W> with 64 < W <= 128 is a tb_u128 (unsigned __int128) so
masked; a header is a struct {uint8_t valid; uint64_t field...}; a struct is
a struct of its members; a header stack H[N] is a struct {H elem[N];
uint64_t next;} (next: P4's nextIndex).  A varbit<M> field is a struct
{uint64_t w; uint8_t b[M/8 rounded up];}: its current width in bits and its
value's bytes, big-endian, zero past w (so == is w and the bytes equal); a
header holds at most one.  A header union is a struct of its member headers
(and a stack of unions a stack of those).  int<W> is held as its W-bit two's
complement pattern (sign-extended where the operation needs it: <, >>,
casts, saturating arithmetic).  Fields wider than 128 bits and tuples are refused with
NativeUnsupported (the Python pipeline runs them)."""

from __future__ import annotations

from testbed.p4model.backend.native.errors import NativeUnsupported
from testbed.p4model.frontend import ir


def scalar_width(t, loc) -> int:
    """The bit width of a scalar type as the native code stores it."""
    while isinstance(t, ir.NewT):
        t = t.base
    if isinstance(t, ir.ArrayT):
        if not bit_array(t):
            raise NativeUnsupported(loc, f"arrays of other than headers ({t})")
        if t.bit_width() > 64:
            raise NativeUnsupported(loc, f"the array {t} ({t.bit_width()} bits, wider than 64 bits)")
        return t.bit_width()
    if isinstance(t, ir.BitT):
        if t.width > 128:
            raise NativeUnsupported(loc, f"bit<{t.width}> (wider than 128 bits)")
        if t.width > 64 and t.signed:
            raise NativeUnsupported(loc, f"int<{t.width}> (a signed int wider than 64 bits)")
        return t.width
    if isinstance(t, ir.BoolT):
        return 1
    if isinstance(t, ir.ErrorT):
        return 32
    if isinstance(t, ir.EnumT):
        if t.underlying is not None:
            return scalar_width(t.underlying, loc)
        return 32
    raise NativeUnsupported(loc, f"a value of type {type(t).__name__}")


def signed_width(t) -> int:
    """W for int<W> (held as its W-bit two's complement pattern), else 0."""
    t = _base(t)
    return t.width if isinstance(t, ir.BitT) and t.signed else 0


def refuse_signed(t, loc, where: str) -> None:
    """int<W> where a value crosses to the control plane or the Python objects (table keys, action
    data, registers): refused, as those hold unsigned patterns here and signed ints there."""
    w = signed_width(t)
    if w:
        raise NativeUnsupported(loc, f"signed int<{w}> in {where}")


def is_scalar(t) -> bool:
    while isinstance(t, ir.NewT):
        t = t.base
    return isinstance(t, (ir.BitT, ir.BoolT, ir.ErrorT, ir.EnumT)) and not wide_bytes(t) or bit_array(t)


def wide_bytes(t) -> int:
    """The bytes of a bit<W> wider than 128 bits held as data (W whole bytes, unsigned): a
    big-endian byte string that is extracted, emitted, copied and compared, never computed with
    (an expression on it is refused); 0 for any other type."""
    t = _base(t)
    if isinstance(t, ir.BitT) and t.width > 128 and not t.signed and t.width % 8 == 0:
        return t.width // 8
    return 0


def wire_bits(t, loc) -> int:
    """The width of a header field on the wire (a wide byte string's too)."""
    n = wide_bytes(t)
    return 8 * n if n else scalar_width(t, loc)


def bit_array(t) -> bool:
    """An array of bit<W>, bool or such arrays: the native code stores it as one scalar of
    W*N bits, element i in bits [W*(N-i)-1 : W*(N-1-i)] (element 0 most significant, so first
    on the wire, as the Python target lays a header's array out)."""
    if not isinstance(t, ir.ArrayT):
        return False
    e = t.element
    return (isinstance(e, ir.BitT) and not e.signed) or isinstance(e, ir.BoolT) or bit_array(e)


def mask(width: int) -> str:
    """C of the width's all-ones value (a tb_u128 above 64 bits)."""
    if width > 64:
        return "(~(tb_u128)0)" if width >= 128 else f"((((tb_u128)1) << {width}) - 1)"
    return "UINT64_MAX" if width >= 64 else f"UINT64_C({(1 << width) - 1:#x})"


def is_wide(t) -> bool:
    """Whether a scalar is wider than 64 bits (held in a tb_u128, unsigned __int128)."""
    t = _base(t)
    return isinstance(t, ir.BitT) and t.width > 64


def refuse_wide(t, loc, where: str) -> None:
    """bit<W> with W > 64 where values cross to the control plane or Python as uint64 words
    (action data, registers, range keys): refused in one line."""
    if is_wide(t):
        raise NativeUnsupported(loc, f"bit<{_base(t).width}> (wider than 64 bits) in {where}")


class TypeEmitter:
    """Collects C struct definitions for the struct-like types a program uses."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.stack_elems: dict[int, str] = {}  # header types held in stacks: C name (tb_state's scratch)

    def c_type(self, t, loc) -> str:
        """The C type name for a P4 type (declares structs on first use)."""
        if wide_bytes(t):
            return self._wide(wide_bytes(t))
        if is_scalar(t):
            return "tb_u128" if scalar_width(t, loc) > 64 else "uint64_t"
        if isinstance(t, (ir.HeaderT, ir.StructT, ir.UnionT)):
            return self._struct(t, loc)
        if isinstance(t, ir.StackT):
            return self._stack(t, loc)
        if isinstance(t, ir.TupleT):
            return self._tuple(t, loc)
        if isinstance(t, ir.VarbitT):
            return self._varbit(t)
        if isinstance(t, ir.ArrayT):
            raise NativeUnsupported(loc, f"arrays of other than headers ({t})")
        raise NativeUnsupported(loc, f"a value of type {type(t).__name__}")

    def _varbit(self, t) -> str:
        key = ("varbit", t.max_width)
        if key not in self.names:
            self.names[key] = f"V{t.max_width}"
            self.lines.append(f"typedef struct {{ uint64_t w; uint8_t b[{(t.max_width + 7) // 8}]; }} V{t.max_width};")
        return self.names[key]

    def _stack(self, t, loc) -> str:
        key = ("stack", id(t.element), t.size)   # one C type per element type and size
        if key in self.names:
            return self.names[key]
        if not isinstance(t.element, (ir.HeaderT, ir.UnionT)):
            raise NativeUnsupported(loc, f"a stack of {type(t.element).__name__}")
        elem = self._struct(t.element, loc)
        self.stack_elems[id(t.element)] = elem
        name = f"K{len(self.names)}_{t.element.name}_{t.size}"
        self.names[key] = name
        self.lines.append(f"typedef struct {{ /* {t} */\n    {elem} elem[{t.size}];\n    uint64_t next;\n}} {name};")
        return name

    def _wide(self, n: int) -> str:
        key = ("wide", n)
        if key not in self.names:
            self.names[key] = f"W{n}"
            self.lines.append(f"typedef struct {{ uint8_t b[{n}]; }} W{n};   /* bit<{8 * n}>, big-endian */")
        return self.names[key]

    def _tuple(self, t, loc) -> str:
        """tuple<T0, T1, ...>: a struct of members f_0, f_1, ... (one C type per element list)."""
        members = [self.c_type(et, loc) for et in t.elements]
        key = ("tuple", tuple(members))
        if key not in self.names:
            name = f"T{len(self.names)}"
            self.names[key] = name
            body = "\n".join(f"    {m} f_{i};" for i, m in enumerate(members)) or "    uint8_t unused;"
            self.lines.append(f"typedef struct {{ /* {t} */\n{body}\n}} {name};")
        return self.names[key]

    def _struct(self, t, loc) -> str:
        key = id(t)
        if key in self.names:
            return self.names[key]
        prefix = "H" if isinstance(t, ir.HeaderT) else "U" if isinstance(t, ir.UnionT) else "S"
        name = f"{prefix}{len(self.names)}_{t.name}"
        members = []
        for f in t.fields:
            members.append(f"    {self.c_type(f.type, f.loc or loc)} f_{f.name};")
        if isinstance(t, ir.HeaderT):
            members.insert(0, "    uint8_t valid;")
            if sum(isinstance(_base(f.type), ir.VarbitT) for f in t.fields) > 1:
                raise NativeUnsupported(t.loc or loc, f"header {t.name} with more than one varbit field")
            if header_bits(t, loc) % 8:
                raise NativeUnsupported(t.loc or loc, f"header {t.name} whose width is not whole bytes")
        self.names[key] = name
        body = "\n".join(members) or "    uint8_t unused;"
        self.lines.append(f"typedef struct {{ /* {t.name} */\n{body}\n}} {name};")
        return name


def _base(t):
    while isinstance(t, ir.NewT):
        t = t.base
    return t


def varbit_field(t: ir.HeaderT):
    """The header's varbit field, or None."""
    return next((f for f in t.fields if isinstance(_base(f.type), ir.VarbitT)), None)


def header_leaves(t: ir.HeaderT, loc) -> list:
    """(C member path, field) of each of the header's wire fields, in wire order: a struct field's
    fields in turn, named by path (`f_row.f_e`), as the Python back end's wire_view; a varbit
    field inside such a struct is refused."""
    out: list = []

    def walk(fields, prefix: str, nested: bool) -> None:
        for f in fields:
            ft = _base(f.type)
            if isinstance(ft, ir.StructT):
                walk(ft.fields, f"{prefix}f_{f.name}.", True)
            elif nested and isinstance(ft, ir.VarbitT):
                raise NativeUnsupported(f.loc or loc, f"a varbit field inside a struct field of header {t.name}")
            else:
                out.append((f"{prefix}f_{f.name}", f))

    walk(t.fields, "", False)
    return out


def header_bits(t: ir.HeaderT, loc) -> int:
    """The header's fixed width in bits (its varbit field, whose width is run-time, excluded)."""
    return sum(wire_bits(f.type, f.loc or loc) for _path, f in header_leaves(t, loc)
               if not isinstance(_base(f.type), ir.VarbitT))


def max_header_bits(t: ir.HeaderT, loc) -> int:
    """The header's widest width in bits: its varbit field at its maximum width."""
    vb = varbit_field(t)
    return header_bits(t, loc) + (_base(vb.type).max_width if vb is not None else 0)
