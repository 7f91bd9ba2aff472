"""P4 types as P4Runtime P4DataTypeSpec, filling P4Info.type_info as p4c does.

A named type met while describing a register, digest, action parameter,
match field or packet-metadata field is recorded once in `type_info`
(structs, headers, header unions, enums, serializable enums, new types,
error).  Typedefs are transparent (the front end has already replaced
them); `type` declarations (NewT) stay named, with their
@p4runtime_translation or their original type.
"""

from __future__ import annotations

import re

from typing import Optional

from p4.config.v1 import p4info_pb2, p4types_pb2

from testbed.p4model.errors import P4Unsupported
from testbed.p4model.frontend import ir
from testbed.p4model.p4info import annots as anno


def type_cp_name(t) -> str:
    """Control-plane name of a named type: its @name (leading dot dropped)
    or its declared name."""
    a = anno.find(getattr(t, "annotations", []) or [], "name")
    if a is not None:
        name = anno.string_arg(a)
        if name:
            return name[1:] if name.startswith(".") else name
    return t.name


def translation(t: ir.Type) -> Optional[tuple[str, Optional[int]]]:
    """(uri, sdn bitwidth or None for sdn_string) when `t` is a NewT with
    @p4runtime_translation, else None."""
    if not isinstance(t, ir.NewT):
        return None
    a = anno.find(t.annotations, "p4runtime_translation")
    if a is None:
        return None
    if a.args and len(a.args) >= 2:
        uri, sdn = a.args[0], a.args[1]
    else:
        parts = [p for p in anno.tokens(a.body or "") if p != ","]
        if len(parts) < 2:
            return None
        uri = anno.string_arg(ir.Annotation("x", parts[0])) or ""
        sdn = anno.parse_int(parts[1])
        if sdn is None and parts[1] == "string":
            sdn = "string"
        if sdn is None:   # the SDN type written as bit<W> (p4c takes W)
            m = re.search(r"\bbit\s*<\s*(\d+)\s*>", a.body or "")
            sdn = int(m.group(1)) if m else None
    if isinstance(sdn, str) and re.fullmatch(r"bit\s*<\s*\d+\s*>", sdn):
        sdn = int(re.search(r"\d+", sdn).group(0))
    if isinstance(sdn, str) or sdn is None:
        return (uri, None)
    return (uri, int(sdn))


def width(t: ir.Type) -> int:
    """Bit width P4Info reports for a match field / param / metadata field:
    the SDN width for translated types (0 for sdn_string), 0 for error,
    else the type's width."""
    tr = translation(t)
    if tr is not None:
        return tr[1] or 0
    if isinstance(t, ir.ErrorT):
        return 0
    return t.bit_width() or 0


def newtype_name(t: ir.Type) -> Optional[str]:
    return type_cp_name(t) if isinstance(t, ir.NewT) else None


class TypeInfoBuilder:
    """Converts types to P4DataTypeSpec and records named types in a
    P4TypeInfo (which is only marked present when `touch()` is called, as
    p4c's output has `type_info {}` exactly when it asked for it)."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self._info = info

    @property
    def type_info(self) -> p4types_pb2.P4TypeInfo:
        return self._info.type_info

    def touch(self) -> None:
        self._info.type_info.SetInParent()

    def spec(self, t: ir.Type) -> p4types_pb2.P4DataTypeSpec:
        """P4DataTypeSpec of `t`, recording named types on the way."""
        self.touch()
        out = p4types_pb2.P4DataTypeSpec()
        if isinstance(t, ir.ArrayT):
            raise P4Unsupported(None, f"the array type {t} where P4Info needs a type spec (a digest, "
                                      "value set or packet-io header)")
        if isinstance(t, ir.BitT):
            (out.bitstring.int if t.signed else out.bitstring.bit).bitwidth = t.width
        elif isinstance(t, ir.VarbitT):
            out.bitstring.varbit.max_bitwidth = t.max_width
        elif isinstance(t, ir.BoolT):
            out.bool.SetInParent()
        elif isinstance(t, ir.ErrorT):
            out.error.SetInParent()
            self._error(t)
        elif isinstance(t, ir.EnumT):
            if t.underlying is not None:
                out.serializable_enum.name = type_cp_name(t)
                self._ser_enum(t)
            else:
                out.enum.name = type_cp_name(t)
                self._enum(t)
        elif isinstance(t, ir.HeaderT):
            out.header.name = type_cp_name(t)
            self._header(t)
        elif isinstance(t, ir.UnionT):
            out.header_union.name = type_cp_name(t)
            self._union(t)
        elif isinstance(t, ir.StructT):
            out.struct.name = type_cp_name(t)
            self._struct(t)
        elif isinstance(t, ir.NewT):
            out.new_type.name = type_cp_name(t)
            self._newtype(t)
        elif isinstance(t, ir.StackT):
            element = t.element
            if isinstance(element, ir.UnionT):
                out.header_union_stack.header_union.name = type_cp_name(element)
                out.header_union_stack.size = t.size
                self._union(element)
            else:
                out.header_stack.header.name = type_cp_name(element)
                out.header_stack.size = t.size
                self._header(element)
        elif isinstance(t, ir.TupleT):
            out.tuple.SetInParent()
            for element in t.elements:
                out.tuple.members.add().CopyFrom(self.spec(element))
        else:
            raise TypeError(f"type {t} has no P4Runtime representation")
        return out

    def record(self, t: ir.Type) -> None:
        """Record `t`'s named types (p4c converts match-field and parameter
        types only for this side effect)."""
        self.spec(t)

    # ---- named types, each recorded once

    def _struct(self, t: ir.StructT) -> None:
        name = type_cp_name(t)
        if name in self.type_info.structs:
            return
        spec = p4types_pb2.P4StructTypeSpec()
        _refuse_arrays(t)
        for f in t.fields:
            member = spec.members.add()
            member.name = f.name
            member.type_spec.CopyFrom(self.spec(f.type))
        self.type_info.structs[name].CopyFrom(spec)

    def _header(self, t: ir.HeaderT) -> None:
        name = type_cp_name(t)
        if name in self.type_info.headers:
            return
        spec = p4types_pb2.P4HeaderTypeSpec()
        _refuse_arrays(t)
        for fname, ftype in _flatten(t.fields):
            member = spec.members.add()
            member.name = fname
            field_spec = self.spec(ftype)
            if field_spec.HasField("bitstring"):
                member.type_spec.CopyFrom(field_spec.bitstring)
            else:
                member.type_spec.bit.bitwidth = ftype.bit_width() or 0
        self.type_info.headers[name].CopyFrom(spec)

    def _union(self, t: ir.UnionT) -> None:
        name = type_cp_name(t)
        if name in self.type_info.header_unions:
            return
        spec = p4types_pb2.P4HeaderUnionTypeSpec()
        for f in t.fields:
            member = spec.members.add()
            member.name = f.name
            member.header.name = type_cp_name(f.type)
            self._header(f.type)
        self.type_info.header_unions[name].CopyFrom(spec)

    def _enum(self, t: ir.EnumT) -> None:
        name = type_cp_name(t)
        if name in self.type_info.enums:
            return
        spec = p4types_pb2.P4EnumTypeSpec()
        for m in t.members:
            spec.members.add().name = m
        self.type_info.enums[name].CopyFrom(spec)

    def _ser_enum(self, t: ir.EnumT) -> None:
        name = type_cp_name(t)
        if name in self.type_info.serializable_enums:
            return
        spec = p4types_pb2.P4SerializableEnumTypeSpec()
        w = t.underlying.width
        spec.underlying_type.bitwidth = w
        for m in t.members:
            member = spec.members.add()
            member.name = m
            member.value = bytestring(t.values.get(m, 0), w)
        self.type_info.serializable_enums[name].CopyFrom(spec)

    def _error(self, t: ir.ErrorT) -> None:
        if self.type_info.HasField("error"):
            return
        self.type_info.error.members.extend(t.members)

    def _newtype(self, t: ir.NewT) -> None:
        name = type_cp_name(t)
        if name in self.type_info.new_types:
            return
        spec = p4types_pb2.P4NewTypeSpec()
        underlying = ir.strip_newtype(t)
        spec.annotations.extend(anno.strings(t.annotations, skip=("p4runtime_translation",)))
        tr = translation(t)
        if tr is not None:
            spec.translated_type.uri = tr[0]
            if tr[1] is None:
                spec.translated_type.sdn_string.SetInParent()
            else:
                spec.translated_type.sdn_bitwidth = tr[1]
        else:
            spec.original_type.CopyFrom(self.spec(underlying))
        self.type_info.new_types[name].CopyFrom(spec)


def _refuse_arrays(t: ir.StructLikeT) -> None:
    """P4Runtime's type specs have no array type: a header or struct with an
    array field (ir.ArrayT) cannot be described in P4Info's type_info."""
    for f in t.fields:
        if isinstance(f.type, ir.ArrayT):
            raise P4Unsupported(f.loc, f"field '{f.name}' of {t.name} has the array type {f.type}, which "
                                       "P4Runtime's type specs (digests, value sets, packet-io headers) "
                                       "cannot describe")


def _flatten(fields, prefix: str = ""):
    """Header fields with nested structs flattened to 'outer.inner' names."""
    for f in fields:
        if isinstance(f.type, ir.StructT):
            yield from _flatten(f.type.fields, prefix + f.name + ".")
        else:
            yield prefix + f.name, f.type


def bytestring(value: int, bitwidth: int) -> bytes:
    """Big-endian bytes of `value` over ceil(bitwidth/8) bytes (two's
    complement for negative values), as p4c's stringRepr writes them."""
    nbytes = max(1, (bitwidth + 7) // 8)
    return (value & ((1 << (nbytes * 8)) - 1)).to_bytes(nbytes, "big")
