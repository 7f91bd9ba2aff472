"""Byte-aligned runs of bit fields, read and written as `struct` items.

Why: building one big int from a header's fields (shift/or per field, then
to_bytes) costs about three times what one precompiled `struct.Struct`
pack/unpack does.  Fields are grouped into *runs*: the shortest sequences of
consecutive fields that fill whole bytes (IPv4's version+ihl is one run,
its ttl another).  A run of 1, 2, 4 or 8 bytes is one struct item; other
sizes up to 16 bytes are several items (a 48-bit MAC is I + H), most
significant first; wider runs are one bytes item.  Used by the generated
header classes (types.py) and by hash/checksum field-list packing
(externs.py); both generate code from these helpers.
"""

from __future__ import annotations

_CODES = ((8, "Q"), (4, "I"), (2, "H"), (1, "B"))
_WIDE_RUN_BYTES = 16  # wider runs are one bytes item and int.from_bytes


class Run:
    """Consecutive items (anything, with a width in bits) filling whole bytes;
    `pieces`: the run's struct items as (bytes, code), most significant first."""

    __slots__ = ("fields", "bits", "pieces")

    def __init__(self, fields: list) -> None:
        self.fields = fields
        self.bits = sum(w for _, w in fields)
        self.pieces = _pieces(self.bits // 8)

    @property
    def one_int_item(self) -> bool:
        """The run is a single integer struct item (B/H/I/Q)."""
        return len(self.pieces) == 1 and not self.pieces[0][1].endswith("s")


def _pieces(nbytes: int) -> list[tuple[int, str]]:
    if nbytes > _WIDE_RUN_BYTES:
        return [(nbytes, f"{nbytes}s")]
    out = []
    while nbytes:
        size, code = next(sc for sc in _CODES if sc[0] <= nbytes)
        out.append((size, code))
        nbytes -= size
    return out


def byte_runs(fields) -> list[Run] | None:
    """Split (item, width) pairs into byte-aligned runs (zero widths are
    left out); None when the total is not whole bytes."""
    runs, current, bits = [], [], 0
    for item, w in fields:
        if w == 0:
            continue
        current.append((item, w))
        bits += w
        if bits % 8 == 0:
            runs.append(Run(current))
            current, bits = [], 0
    return None if current else runs


def struct_format(runs: list[Run]) -> str:
    return "!" + "".join(code for run in runs for _, code in run.pieces)


def combine(values: list[tuple[str, int]]) -> str:
    """Code of one int from (value code, width) pairs, first most significant."""
    shift, parts = sum(w for _, w in values), []
    for code, w in values:
        shift -= w
        parts.append(f"({code} << {shift})" if shift else code)
    return " | ".join(parts)


def join_pieces(names: list[str], pieces: list) -> str:
    """Code of a run's int from the names its struct items were unpacked into."""
    if len(pieces) == 1:
        return f"int.from_bytes({names[0]}, 'big')" if pieces[0][1].endswith("s") else names[0]
    return "(" + combine([(name, size * 8) for name, (size, _) in zip(names, pieces)]) + ")"


def split_pieces(value: str, pieces: list) -> list[str]:
    """Code of the struct items of a run whose int is the name/path `value`
    (evaluated once per item, so it must be side-effect free)."""
    if len(pieces) == 1:
        if pieces[0][1].endswith("s"):
            return [f"{value}.to_bytes({pieces[0][0]}, 'big')"]
        return [value]
    shift, items = sum(size for size, _ in pieces) * 8, []
    for n, (size, _) in enumerate(pieces):
        shift -= size * 8
        mask = hex((1 << (size * 8)) - 1)
        if n == 0:
            items.append(f"{value} >> {shift}")
        else:
            items.append(f"({value} >> {shift}) & {mask}" if shift else f"{value} & {mask}")
    return items
