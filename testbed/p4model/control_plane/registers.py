"""Registers (beyond PI, which answers UNIMPLEMENTED; the P4Runtime specification defines them).

Only MODIFY exists (INSERT and DELETE are INVALID_ARGUMENT).  Data is one
bitstring that must fit the register's bit<W>/int<W> width; other register
types cannot be accessed.  A write or read without an index covers every cell.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.context import Context, cells
from testbed.p4model.control_plane.p4info_index import (
    MODIFY, Index, decode_value, encode_value, error, kind_name)


def register_width(register: p4info_pb2.Register) -> int:
    spec = register.type_spec
    if spec.HasField("bitstring"):
        bits = spec.bitstring
        for kind in ("bit", "int", "varbit"):
            if bits.HasField(kind):
                return getattr(bits, kind).bitwidth if kind != "varbit" else bits.varbit.max_bitwidth
    raise error("UNIMPLEMENTED", f"register {register.preamble.name}: only bit<W>/int<W> registers "
                                 f"can be accessed over P4Runtime")


class Registers:
    """RegisterEntry writes and reads."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def write(self, kind: int, entry: p4runtime_pb2.RegisterEntry) -> None:
        register = Index.get(self.ctx.info.registers, entry.register_id, "register")
        name = register.preamble.name
        if kind != MODIFY:
            raise error("INVALID_ARGUMENT", f"register {name}: {kind_name(kind)} update "
                                            f"type not supported for registers")
        width = register_width(register)
        selected = cells(entry, register.size, f"register {name}")
        if entry.data.WhichOneof("data") != "bitstring":
            raise error("INVALID_ARGUMENT", f"register {name}: data must be a bitstring")
        value = decode_value(entry.data.bitstring, width, f"register {name}")
        runtime = self.ctx.runtime("registers", name)
        for i in selected:
            runtime.write(i, value)

    def read(self, request: p4runtime_pb2.RegisterEntry) -> list:
        return self.encode(self.values(request))

    def values(self, request: p4runtime_pb2.RegisterEntry) -> list[tuple[int, int, int]]:
        """(register id, index, value) of every cell the request selects."""
        out = []
        for register in self.ctx.info.selected(self.ctx.info.registers, request.register_id,
                                               "register"):
            runtime = self.ctx.runtime("registers", register.preamble.name)
            mask = (1 << register_width(register)) - 1
            rid = register.preamble.id
            for i in cells(request, register.size, f"register {register.preamble.name}"):
                out.append((rid, i, runtime.values[i] & mask))
        return out

    @staticmethod
    def encode(values) -> list:
        """The entities of values() (apart from it, so a caller can build them later)."""
        out = []
        for rid, i, value in values:
            entity = p4runtime_pb2.Entity()
            re_ = entity.register_entry
            re_.register_id = rid
            re_.index.index = i
            re_.data.bitstring = encode_value(value)
            out.append(entity)
        return out
