"""Small run-time helpers the generated code calls (kept out of the
generated text so it stays readable); everything here is program-
independent and injected into every generated module's namespace."""

from __future__ import annotations

import logging
import struct

from testbed.p4model.runtime.hashing import pack_fields, reduce as _hash_reduce_raw
from testbed.p4model.runtime.packet import (Cursor, ExitControl, HeaderStack, PacketAbort,
                                    ParseError)

log = logging.getLogger("testbed.p4model.program")


class RuntimeState:
    """Mutable per-pipeline state visible to generated code: `pkt` is the
    PacketContext of the packet being processed."""

    __slots__ = ("pkt", "too_short")

    def __init__(self) -> None:
        self.pkt = None
        self.too_short = 0


def _copy_list(values):
    return [v._copy() if hasattr(v, "_copy") else (_copy_list(v) if isinstance(v, list) else v)
            for v in values]


def _list_eq(a, b):
    """Equality of two arrays (Python lists): element by element, composites by their _eq."""
    return len(a) == len(b) and all(x._eq(y) if hasattr(x, "_eq") else (
        _list_eq(x, y) if isinstance(x, list) else x == y) for x, y in zip(a, b))


def _array_get(values, index, zero):
    """An array element read at a run-time index; out of bounds (undefined in P4) reads `zero`."""
    return values[index] if index < len(values) else zero


def _build(obj, valid, names, values):
    for name, value in zip(names, values):
        setattr(obj, name, value)
    if valid:
        obj._valid = True
    return obj


def _build_stack(stack, elems):
    for mine, theirs in zip(stack.elems, elems):
        mine._set(theirs)
    return stack


def _div(a, b):
    return a // b if b else 0


def _mod(a, b):
    return a % b if b else 0


def make_helpers(rt: RuntimeState, too_short_code: int) -> dict:
    """The helper namespace for one program (lookahead/advance need the
    program's PacketTooShort error code)."""

    def _lookahead(pk, width):
        nb = (width + 7) // 8
        if pk.off + nb > pk.end:
            raise ParseError(too_short_code)
        return int.from_bytes(pk.data[pk.off:pk.off + nb], "big") >> (nb * 8 - width)

    def _lookahead_hdr(pk, hdr, nb):
        if pk.off + nb > pk.end:
            raise ParseError(too_short_code)
        hdr._load(pk.data[pk.off:pk.off + nb])
        return hdr

    def _advance(pk, bits):
        nb = bits // 8
        if bits < 0 or pk.off + nb > pk.end:
            raise ParseError(too_short_code)
        pk.off += nb

    def _log_msg(msg, values):
        text = str(msg)
        for v in values:
            text = text.replace("{}", str(v), 1)
        log.info("log_msg: %s", text)

    return {
        "RT": rt, "Cursor": Cursor, "HeaderStack": HeaderStack, "ParseError": ParseError,
        "ExitControl": ExitControl, "PacketAbort": PacketAbort, "pack_fields": pack_fields,
        "_copy_list": _copy_list, "_list_eq": _list_eq, "_array_get": _array_get, "_build": _build, "_build_stack": _build_stack,
        "_div": _div, "_mod": _mod, "_hash_reduce": _hash_reduce_raw,
        "_lookahead": _lookahead, "_lookahead_hdr": _lookahead_hdr, "_advance": _advance,
        "_log_msg": _log_msg, "_Struct": struct.Struct,
    }
