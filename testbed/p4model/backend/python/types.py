"""Python classes for the program's headers, structs, unions and stacks.

Every P4 composite type becomes one generated class with `__slots__`
(fields as Python ints/bools, headers with a `_valid` flag), so a field
access is one attribute load.  Widths are static, so a byte-aligned
fixed-width header is extracted with one precompiled `struct` unpack (one
item per byte-aligned run of fields, a shift/mask per field inside a run)
and emitted with one `struct` pack: about 3x faster than going through one
big int, which remains the path for headers that are not byte multiples.
Extract/emit statements inline that code (no method call per header).
Scalar representation:

* bit<W>: int in [0, 2^W); int<W>: Python int in [-2^(W-1), 2^(W-1));
* bool: Python bool; enums/error: int (member index or serializable value);
* varbit<M>: a tuple (current width, value);
* tuples/lists: Python lists.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from testbed.p4model.backend.python.emitter import Names, Source
from testbed.p4model.backend.python.structcodec import byte_runs, combine, join_pieces, split_pieces, struct_format
from testbed.p4model.errors import P4Unsupported
from testbed.p4model.frontend import ir


def scalar_type(t: ir.Type) -> ir.Type:
    """The execution type: new types and serializable enums as their base."""
    t = ir.strip_newtype(t)
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying
    return t


# Types whose values are Python lists: tuples, and arrays of other than headers.
LIST_TYPES = (ir.TupleT, ir.ArrayT)


def is_composite(t: ir.Type) -> bool:
    t = ir.strip_newtype(t)
    return isinstance(t, (ir.StructLikeT, ir.StackT) + LIST_TYPES)


def width_of(t: ir.Type) -> int:
    t = scalar_type(t)
    if isinstance(t, ir.BitT):
        return t.width
    if isinstance(t, ir.BoolT):
        return 1
    w = t.bit_width()
    if w is None:
        raise ValueError(f"type {t} has no fixed width")
    return w


class TypeClasses:
    """Generates (once per type) the Python class of each composite type."""

    def __init__(self, src: Source, names: Names, oob_code: int, too_short_code: int,
                 header_too_short_code: int, invalid_argument_code: int = 0) -> None:
        self.sink = src      # finished classes, each whole at module level
        self.src = src       # the class being written (a private buffer while it is)
        self.names = names
        self.classes: dict[int, str] = {}
        self._stack_classes: dict[tuple, str] = {}
        self.oob_code = oob_code
        self.too_short_code = too_short_code
        self.header_too_short_code = header_too_short_code
        self.invalid_argument_code = invalid_argument_code
        self._inline: dict[int, _InlineCodec] = {}  # header type id -> its struct codec's code

    # ---------------------------------------------------------------- values

    def zero(self, t: ir.Type) -> str:
        """Source of a fresh zero/invalid value of type t."""
        t = ir.strip_newtype(t)
        if isinstance(t, (ir.StructLikeT, ir.StackT)):
            return f"{self.class_of(t)}()"
        if isinstance(t, ir.TupleT):
            return "[" + ", ".join(self.zero(e) for e in t.elements) + "]"
        if isinstance(t, ir.ArrayT):
            if is_composite(t.element):
                return f"[{self.zero(t.element)} for _ in range({t.size})]"
            return f"[{self.zero(t.element)}] * {t.size}"
        if isinstance(t, ir.BoolT):
            return "False"
        if isinstance(t, ir.VarbitT):
            return "(0, 0)"
        if isinstance(t, ir.StringT):
            return "''"
        return "0"

    def copy(self, t: ir.Type, code: str) -> str:
        """Source of an independent copy of the value `code` of type t."""
        t = ir.strip_newtype(t)
        if isinstance(t, (ir.StructLikeT, ir.StackT)):
            return f"{code}._copy()"
        if isinstance(t, LIST_TYPES):
            return f"_copy_list({code})"
        return code

    # --------------------------------------------------------------- classes

    def class_of(self, t: ir.Type) -> str:
        t = ir.strip_newtype(t)
        if isinstance(t, ir.StackT):
            key = (id(t.element), t.size)
            if key not in self._stack_classes:
                elem_cls = self.class_of(t.element)
                name = self.names.new(f"Stack_{elem_cls}_{t.size}")
                self._stack_classes[key] = name
                self._generate(self._gen_stack, name, elem_cls, t.size)
            return self._stack_classes[key]
        if id(t) not in self.classes:
            if isinstance(t, ir.HeaderT):
                prefix, gen = "H_", self._gen_header
            elif isinstance(t, ir.UnionT):
                prefix, gen = "U_", self._gen_union
            elif isinstance(t, ir.StructT):
                prefix, gen = "S_", self._gen_struct
            else:
                raise P4Unsupported(None, f"value of type {t}")
            name = self.names.new(f"{prefix}{t.name}")
            self.classes[id(t)] = name
            self._generate(gen, name, t)
        return self.classes[id(t)]

    def _generate(self, gen, *args) -> None:
        """Write one class into a private buffer and add it to the module
        when complete: a class needed while another one is being written
        (a nested type first met in a tuple, say) must not land inside it."""
        outer, self.src = self.src, Source()
        try:
            gen(*args)
            part = self.src
        finally:
            self.src = outer
        self.sink.lines.extend(part.lines)

    def _field_init(self, fields) -> list[str]:
        return [f"self.{f.name} = {self.zero(f.type)}" for f in fields]

    def _gen_common(self, name: str, fields, has_valid: bool, extra_slots=()) -> None:
        """__init__, _reset, _copy, _set, _eq, _fields for any composite."""
        s = self.src
        slots = (["_valid"] if has_valid else []) + [f.name for f in fields] + list(extra_slots)
        for f in fields:   # make sure nested classes exist before this one
            if is_composite(f.type):
                self.class_of(f.type) if not isinstance(ir.strip_newtype(f.type), LIST_TYPES) else None
        self._class_line = len(s.lines)  # module-level helpers of this class go before it
        s.line(f"class {name}:")
        s.indent()
        s.line(f"__slots__ = {tuple(slots)!r}")
        s.line("def __init__(self):")
        s.indent()
        body = (["self._valid = False"] if has_valid else []) + self._field_init(fields)
        for line in body or ["pass"]:
            s.line(line)
        s.dedent()
        s.line("_reset = __init__")
        # copy
        s.line("def _copy(self):")
        s.indent()
        s.line(f"n = {name}.__new__({name})")
        if has_valid:
            s.line("n._valid = self._valid")
        for f in fields:
            s.line(f"n.{f.name} = {self.copy(f.type, 'self.' + f.name)}")
        s.line("return n")
        s.dedent()
        # set (in-place assignment)
        s.line("def _set(self, o):")
        s.indent()
        if has_valid:
            s.line("self._valid = o._valid")
        for f in fields:
            ft = ir.strip_newtype(f.type)
            if isinstance(ft, (ir.StructLikeT, ir.StackT)):
                s.line(f"self.{f.name}._set(o.{f.name})")
            elif isinstance(ft, LIST_TYPES):
                s.line(f"self.{f.name} = _copy_list(o.{f.name})")
            else:
                s.line(f"self.{f.name} = o.{f.name}")
        if not fields and not has_valid:
            s.line("pass")
        s.dedent()
        # equality
        s.line("def _eq(self, o):")
        s.indent()
        parts = []
        for f in fields:
            ft = ir.strip_newtype(f.type)
            if isinstance(ft, (ir.StructLikeT, ir.StackT)):
                parts.append(f"self.{f.name}._eq(o.{f.name})")
            elif isinstance(ft, ir.ArrayT):
                parts.append(f"_list_eq(self.{f.name}, o.{f.name})")
            else:
                parts.append(f"self.{f.name} == o.{f.name}")
        cond = " and ".join(parts) or "True"
        if has_valid:
            s.line("if self._valid != o._valid: return False")
            s.line("if not self._valid: return True")
        s.line(f"return {cond}")
        s.dedent()
        s.line(f"_fields = {tuple(f.name for f in fields)!r}")

    def _gen_struct(self, name: str, t: ir.StructT) -> None:
        s = self.src
        self._gen_common(name, t.fields, has_valid=False)
        self._gen_emit_children(t.fields)
        s.dedent()
        s.blank()

    def _gen_union(self, name: str, t: ir.UnionT) -> None:
        s = self.src
        self._gen_common(name, t.fields, has_valid=False)
        s.line("def _isvalid(self):")
        s.indent()
        s.line("return " + (" or ".join(f"self.{f.name}._valid" for f in t.fields) or "False"))
        s.dedent()
        self._gen_emit_children(t.fields)
        s.line("def _extract(self, cur):")   # only reached through stacks of unions
        s.indent()
        s.line("raise PacketAbort('extract of a header union')")
        s.dedent()
        s.dedent()
        s.blank()

    def _gen_emit_children(self, fields) -> None:
        s = self.src
        comp = [f for f in fields if isinstance(ir.strip_newtype(f.type), (ir.StructLikeT, ir.StackT))]
        s.line("def _emit(self, out):")
        s.indent()
        for f in comp:
            s.line(f"self.{f.name}._emit(out)")
        if not comp:
            s.line("pass")
        s.dedent()
        s.line("def _nbytes(self):")
        s.indent()
        s.line("return " + (" + ".join(f"self.{f.name}._nbytes()" for f in comp) or "0"))
        s.dedent()

    def _gen_stack(self, name: str, elem_cls: str, size: int) -> None:
        s = self.src
        s.line(f"class {name}(HeaderStack):")
        s.indent()
        s.line("__slots__ = ()")
        s.line(f"size = {size}")
        s.line(f"_oob_code = {self.oob_code}")
        # the elements are made on first use (HeaderStack.__getattr__)
        s.line("def _new_elems(self):")
        s.indent()
        if size <= 64:     # a list display: no comprehension frame
            s.line(f"return [{', '.join([f'{elem_cls}()'] * size)}]")
        else:
            s.line(f"return [{elem_cls}() for _ in range({size})]")
        s.dedent()
        s.line(f"_blank = ({elem_cls}(),) * {size}")
        s.dedent()
        s.blank()

    # ---------------------------------------------------------------- header

    def _gen_header(self, name: str, t: ir.HeaderT) -> None:
        s = self.src
        self._gen_common(name, t.fields, has_valid=True)
        wire = wire_view(t)
        if wire is not t:   # struct fields: the codec works on their leaves
            self._gen_header_codec(name, wire)
            if id(wire) in self._inline:
                self._inline[id(t)] = self._inline.pop(id(wire))
            return
        self._gen_header_codec(name, t)

    def _gen_header_codec(self, name: str, t: ir.HeaderT) -> None:
        """_NBITS, _zero, extract/load/bytes and _emit of a header class;
        `t`'s fields are the wire fields (dotted names reach into structs)."""
        s = self.src
        fixed_bits = t.bit_width()
        varbit = [f for f in t.fields if isinstance(ir.strip_newtype(f.type), ir.VarbitT)]
        if len(varbit) > 1:
            raise P4Unsupported(t.loc, f"header {t.name} with more than one varbit field")
        s.line(f"_NBITS = {fixed_bits}")
        # zero fields (setValid on an invalid header)
        s.line("def _zero(self):")
        s.indent()
        for line in self._field_init(t.fields) or ["pass"]:
            s.line(line)
        s.dedent()
        if varbit:
            self._gen_varbit_header(t, varbit[0])
        else:
            self._gen_fixed_header(t, fixed_bits)
        s.line("def _emit(self, out):")
        s.indent()
        s.line("if self._valid: out.append(self._bytes())")
        s.dedent()
        s.dedent()
        s.blank()

    def _field_read(self, f, shift: str, width: int, var: str = "v", top: bool = False) -> str:
        """`f`'s value from the int `var` holding it at `shift`; `top`: nothing above it."""
        ft = scalar_type(f.type)
        low = hex((1 << width) - 1)
        if top:
            raw = f"{var} >> {shift}" if shift != "0" else var
        else:
            raw = f"({var} >> {shift}) & {low}" if shift != "0" else f"{var} & {low}"
        if isinstance(ft, ir.BoolT):
            return f"({raw}) == 1"
        if isinstance(ft, ir.BitT) and ft.signed:
            half = 1 << (width - 1)
            return f"(({raw}) ^ {hex(half)}) - {hex(half)}"
        if not isinstance(ft, (ir.BitT, ir.EnumT, ir.ErrorT)):
            raise P4Unsupported(f.loc, f"header field of type {f.type}")
        return raw

    def _field_write(self, f, width: int) -> str:
        ft = scalar_type(f.type)
        if isinstance(ft, ir.BitT) and ft.signed:
            return f"(self.{f.name} & {hex((1 << width) - 1)})"
        if isinstance(ft, ir.BoolT):
            return f"(1 if self.{f.name} else 0)"
        return f"self.{f.name}"

    def _gen_fixed_header(self, t: ir.HeaderT, bits: int) -> None:
        s = self.src
        nbytes = (bits + 7) // 8
        pad = nbytes * 8 - bits   # p4c refuses non-byte headers for bmv2; be lenient
        s.line(f"_NB = {nbytes}")
        s.line("def _nbytes(self):")
        s.indent()
        s.line(f"return {nbytes} if self._valid else 0")
        s.dedent()
        runs = byte_runs([(f, width_of(f.type)) for f in t.fields]) if not pad and bits else None
        if runs is not None:
            self._gen_struct_codec(t, runs, nbytes)
            return
        s.line("def _extract(self, cur):")
        s.indent()
        s.line("o = cur.off")
        s.line(f"e = o + {nbytes}")
        s.line(f"if e > cur.end: raise ParseError({self.too_short_code})")
        s.line("v = int.from_bytes(cur.data[o:e], 'big')" + (f" >> {pad}" if pad else ""))
        s.line("cur.off = e")
        self._gen_unpack(t.fields, bits)
        s.line("self._valid = True")
        s.dedent()
        # lookahead helper: a header value built from bytes without consuming
        s.line("def _load(self, data):")
        s.indent()
        s.line("v = int.from_bytes(data, 'big')" + (f" >> {pad}" if pad else ""))
        self._gen_unpack(t.fields, bits)
        s.line("self._valid = True")
        s.dedent()
        s.line("def _bytes(self):")
        s.indent()
        parts = []
        shift = bits
        for f in t.fields:
            w = width_of(f.type)
            shift -= w
            val = self._field_write(f, w)
            parts.append(f"({val} << {shift + pad})" if shift + pad else val)
        expr = " | ".join(parts) or "0"
        s.line(f"return ({expr}).to_bytes({nbytes}, 'big')")
        s.dedent()

    def _gen_struct_codec(self, t: ir.HeaderT, runs: list, nbytes: int) -> None:
        """_extract/_load/_bytes through one precompiled struct.Struct (see
        structcodec); the Struct's bound methods are module globals."""
        s = self.src
        stem = t.name if t.name.isidentifier() else "hdr"
        codec_name = self.names.new(f"_S_{stem}")
        unpack, pack = self.names.new(f"_U_{stem}"), self.names.new(f"_P_{stem}")
        s.lines.insert(self._class_line, f"{codec_name} = _Struct({struct_format(runs)!r}); "
                                         f"{unpack} = {codec_name}.unpack_from; {pack} = {codec_name}.pack")
        targets, after = [], []
        for i, run in enumerate(runs):
            f0 = run.fields[0][0]
            if len(run.fields) == 1 and self._plain(f0):
                if run.one_int_item:     # unpacked straight into the field
                    targets.append(f"self.{f0.name}")
                    continue
                names = [f"__c{i}_{k}" for k in range(len(run.pieces))]
                targets += names
                after.append(f"self.{f0.name} = {join_pieces(names, run.pieces)}")
                continue
            if run.one_int_item:
                targets.append(f"__c{i}")
            else:
                names = [f"__c{i}_{k}" for k in range(len(run.pieces))]
                targets += names
                after.append(f"__c{i} = {join_pieces(names, run.pieces)}")
            shift = run.bits
            for n, (f, w) in enumerate(run.fields):
                shift -= w
                after.append(f"self.{f.name} = {self._field_read(f, str(shift), w, f'__c{i}', top=n == 0)}")
        zero = [f"self.{f.name} = 0" for f in t.fields if width_of(f.type) == 0]
        unpacked = ", ".join(targets) + ("," if len(targets) == 1 else "")
        for name, source in (("_extract", "cur.data, o"), ("_load", "data")):
            s.line(f"def {name}(self, {'cur' if name == '_extract' else 'data'}):")
            s.indent()
            if name == "_extract":
                s.line("o = cur.off")
                s.line(f"e = o + {nbytes}")
                s.line(f"if e > cur.end: raise ParseError({self.too_short_code})")
            s.line(f"{unpacked} = {unpack}({source})")
            if name == "_extract":
                s.line("cur.off = e")
            for line in after + zero:
                s.line(line)
            s.line("self._valid = True")
            s.dedent()
        items, pre = [], []
        for i, run in enumerate(runs):
            value = combine([(self._field_write(f, w), w) for f, w in run.fields])
            if run.one_int_item:
                items.append(value)
                continue
            pre.append(f"__c{i} = {value}")
            items += split_pieces(f"__c{i}", run.pieces)
        pack_expr = f"{pack}({', '.join(items)})"
        s.line("def _bytes(self):")
        s.indent()
        for line in pre:
            s.line(line)
        s.line(f"return {pack_expr}")
        s.dedent()
        self._inline[id(t)] = _InlineCodec(nbytes, f"{unpacked} = {unpack}(pk.data, __o)", after + zero,
                                           pre, pack_expr)

    def inline_extract(self, t: ir.HeaderT, h: str) -> list[str] | None:
        """Lines that extract header `h` (an expression of type `t`) from the
        parser's cursor `pk` without a method call; None: call _extract."""
        self.class_of(t)  # its codec is made with the class
        codec = self._inline.get(id(ir.strip_newtype(t)))
        if codec is None:
            return None
        return ["__o = pk.off", f"__e = __o + {codec.nbytes}",
                f"if __e > pk.end: raise ParseError({self.too_short_code})",
                _on(codec.unpack, h), "pk.off = __e"] + [_on(line, h) for line in codec.after] + [f"{h}._valid = True"]

    def inline_bytes(self, t: ir.HeaderT, h: str) -> tuple[list[str], str] | None:
        """(lines, expression) giving the bytes of valid header `h` without a
        method call; None: call _bytes."""
        self.class_of(t)
        codec = self._inline.get(id(ir.strip_newtype(t)))
        if codec is None:
            return None
        return [_on(line, h) for line in codec.pre], _on(codec.pack, h)

    def _plain(self, f) -> bool:
        """A field whose header bits are its value (no sign or bool conversion)."""
        ft = scalar_type(f.type)
        return isinstance(ft, (ir.EnumT, ir.ErrorT)) or (isinstance(ft, ir.BitT) and not ft.signed)

    def _gen_unpack(self, fields, bits: int) -> None:
        shift = bits
        for f in fields:
            w = width_of(f.type)
            shift -= w
            if w == 0:
                self.src.line(f"self.{f.name} = 0")
                continue
            self.src.line(f"self.{f.name} = {self._field_read(f, str(shift), w)}")

    def _gen_varbit_header(self, t: ir.HeaderT, vb_field) -> None:
        s = self.src
        idx = t.fields.index(vb_field)
        before, after = t.fields[:idx], t.fields[idx + 1:]
        bits_after = sum(width_of(f.type) for f in after)
        bits_before = sum(width_of(f.type) for f in before)
        max_w = ir.strip_newtype(vb_field.type).max_width
        s.line("def _nbytes(self):")
        s.indent()
        s.line(f"return ({bits_before + bits_after} + self.{vb_field.name}[0]) // 8 if self._valid else 0")
        s.dedent()
        s.line("def _extract(self, cur):")
        s.indent()
        s.line("self._extract_vb(cur, 0)")
        s.dedent()
        s.line("def _extract_vb(self, cur, vb):")
        s.indent()
        s.line(f"if vb > {max_w} or vb < 0: raise ParseError({self.header_too_short_code})")
        # bmv2 extracts varbits in whole bytes only
        s.line(f"if vb % 8: raise ParseError({self.invalid_argument_code})")
        s.line(f"total = {bits_before + bits_after} + vb")
        s.line("o = cur.off")
        s.line("e = o + (total + 7) // 8")
        s.line(f"if e > cur.end: raise ParseError({self.too_short_code})")
        s.line("v = int.from_bytes(cur.data[o:e], 'big') >> ((8 - total % 8) % 8)")
        s.line("cur.off = e")
        shift = bits_after
        for f in after:
            w = width_of(f.type)
            shift -= w
            s.line(f"self.{f.name} = {self._field_read(f, str(shift), w)}")
        s.line(f"self.{vb_field.name} = (vb, (v >> {bits_after}) & ((1 << vb) - 1))")
        shift = bits_before
        for f in before:
            w = width_of(f.type)
            shift -= w
            s.line(f"self.{f.name} = {self._field_read(f, f'({shift + bits_after} + vb)', w)}")
        s.line("self._valid = True")
        s.dedent()
        s.line("def _bytes(self):")
        s.indent()
        s.line(f"vw, vv = self.{vb_field.name}")
        s.line("acc = 0")
        for f in before:
            w = width_of(f.type)
            s.line(f"acc = (acc << {w}) | {self._field_write(f, w)}")
        s.line("acc = (acc << vw) | vv")
        for f in after:
            w = width_of(f.type)
            s.line(f"acc = (acc << {w}) | {self._field_write(f, w)}")
        s.line(f"total = {bits_before + bits_after} + vw")
        s.line("pad = (8 - total % 8) % 8")
        s.line("return (acc << pad).to_bytes((total + pad) // 8, 'big')")
        s.dedent()


class _InlineCodec(NamedTuple):
    """A struct-codec header's extract/emit code, written on `self`."""

    nbytes: int
    unpack: str
    after: list
    pre: list
    pack: str


_SELF = re.compile(r"\bself\.")


def _on(line: str, h: str) -> str:
    """`line` with the header `self` replaced by the expression `h`."""
    return _SELF.sub(f"{h}.", line)


def wire_view(t: ir.HeaderT) -> ir.HeaderT:
    """t itself, or (when a field is a struct or an array) a HeaderT of its leaf fields
    in wire order, named by path (`row.e`, `arr[3]`): what extract and emit see."""
    if not any(isinstance(ir.strip_newtype(f.type), (ir.StructT, ir.ArrayT)) for f in t.fields):
        return t

    def leaves(fields, prefix):
        for f in fields:
            ft = ir.strip_newtype(f.type)
            if isinstance(ft, ir.StructT):
                yield from leaves(ft.fields, f"{prefix}{f.name}.")
            elif isinstance(ft, ir.ArrayT):   # arr[0], arr[1], ...: element 0 first on the wire
                yield from leaves([ir.Field(f"{f.name}[{i}]", ft.element, [], f.loc) for i in range(ft.size)],
                                  prefix)
            else:
                yield ir.Field(prefix + f.name, f.type, f.annotations, f.loc)

    return ir.HeaderT(t.name, list(leaves(t.fields, "")), t.annotations, t.loc)
