"""P4 types -> C structs.

Model: every scalar (bit<W> with W <= 64, bool, error, serializable enum,
type/newtype of those) is one uint64_t holding the value masked to its
width; a header is a struct {uint8_t valid; uint64_t field...}; a struct is
a struct of its members; a header stack H[N] is a struct {H elem[N];
uint64_t next;} (next: P4's nextIndex).  Wider fields, varbit, unions,
stacks of unions, signed int<W> and tuples are refused with
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
        if t.signed:
            raise NativeUnsupported(loc, f"signed int<{t.width}>")
        if t.width > 64:
            raise NativeUnsupported(loc, f"bit<{t.width}> (wider than 64 bits)")
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


def is_scalar(t) -> bool:
    while isinstance(t, ir.NewT):
        t = t.base
    return isinstance(t, (ir.BitT, ir.BoolT, ir.ErrorT, ir.EnumT)) or bit_array(t)


def bit_array(t) -> bool:
    """An array of bit<W>, bool or such arrays: the native code stores it as one scalar of
    W*N bits, element i in bits [W*(N-i)-1 : W*(N-1-i)] (element 0 most significant, so first
    on the wire, as the Python target lays a header's array out)."""
    if not isinstance(t, ir.ArrayT):
        return False
    e = t.element
    return (isinstance(e, ir.BitT) and not e.signed) or isinstance(e, ir.BoolT) or bit_array(e)


def mask(width: int) -> str:
    return "UINT64_MAX" if width >= 64 else f"UINT64_C({(1 << width) - 1:#x})"


class TypeEmitter:
    """Collects C struct definitions for the struct-like types a program uses."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.stack_elems: dict[int, str] = {}  # header types held in stacks: C name (tb_state's scratch)

    def c_type(self, t, loc) -> str:
        """The C type name for a P4 type (declares structs on first use)."""
        if is_scalar(t):
            scalar_width(t, loc)
            return "uint64_t"
        if isinstance(t, (ir.HeaderT, ir.StructT)):
            return self._struct(t, loc)
        if isinstance(t, ir.StackT):
            return self._stack(t, loc)
        if isinstance(t, ir.UnionT):
            raise NativeUnsupported(loc, "header unions")
        if isinstance(t, ir.VarbitT):
            raise NativeUnsupported(loc, "varbit fields")
        if isinstance(t, ir.ArrayT):
            raise NativeUnsupported(loc, f"arrays of other than headers ({t})")
        raise NativeUnsupported(loc, f"a value of type {type(t).__name__}")

    def _stack(self, t, loc) -> str:
        key = id(t)
        if key in self.names:
            return self.names[key]
        if not isinstance(t.element, ir.HeaderT):
            raise NativeUnsupported(loc, "stacks of header unions")
        elem = self._struct(t.element, loc)
        self.stack_elems[id(t.element)] = elem
        name = f"K{len(self.names)}_{t.element.name}_{t.size}"
        self.names[key] = name
        self.lines.append(f"typedef struct {{ /* {t} */\n    {elem} elem[{t.size}];\n    uint64_t next;\n}} {name};")
        return name

    def _struct(self, t, loc) -> str:
        key = id(t)
        if key in self.names:
            return self.names[key]
        name = f"{'H' if isinstance(t, ir.HeaderT) else 'S'}{len(self.names)}_{t.name}"
        members = []
        for f in t.fields:
            members.append(f"    {self.c_type(f.type, f.loc or loc)} f_{f.name};")
        if isinstance(t, ir.HeaderT):
            members.insert(0, "    uint8_t valid;")
            if header_bits(t, loc) % 8:
                raise NativeUnsupported(t.loc or loc, f"header {t.name} whose width is not whole bytes")
        self.names[key] = name
        body = "\n".join(members) or "    uint8_t unused;"
        self.lines.append(f"typedef struct {{ /* {t.name} */\n{body}\n}} {name};")
        return name


def header_bits(t: ir.HeaderT, loc) -> int:
    return sum(scalar_width(f.type, f.loc or loc) for f in t.fields)
