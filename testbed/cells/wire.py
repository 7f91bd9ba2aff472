"""Encode and decode the cell header defined in p4src/README.md.

The field list is data (CELL_FIELDS) so that the scapy layer, the P4 header
and this codec can be compared field by field by a test instead of by eye.
Decoding is strict: anything that the README does not allow raises
MalformedCell naming the offending field, so the transport can count and
drop it instead of acting on garbage.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from testbed.errors import TestbedError

CELL_UDP_PORT = 4793
HEADER_LEN = 24
VERSION = 1
SACK_BYTES = 8
SACK_BITS = SACK_BYTES * 8

# (name, width in bits), in wire order, exactly as in p4src/README.md.
CELL_FIELDS: list[tuple[str, int]] = [
    ("version", 4),
    ("type", 4),
    ("flags", 8),
    ("entropy", 16),
    ("flow_id", 32),
    ("msg_id", 32),
    ("psn", 32),
    ("credit_seq", 32),
    ("aux", 32),
]

DATA = 0
CREDIT = 1
CREDIT_REQUEST = 2
ACK = 3
NACK = 4
CNP = 5
CREDIT_STOP = 6
TYPE_NAMES = {
    DATA: "DATA",
    CREDIT: "CREDIT",
    CREDIT_REQUEST: "CREDIT_REQUEST",
    ACK: "ACK",
    NACK: "NACK",
    CNP: "CNP",
    CREDIT_STOP: "CREDIT_STOP",
}

FLAG_LAST = 0x01
FLAG_RETX = 0x02
FLAG_ECE = 0x04
FLAG_INT = 0x08
FLAGS_KNOWN = FLAG_LAST | FLAG_RETX | FLAG_ECE | FLAG_INT

# In-band telemetry (p4src/README.md, "In-band telemetry"): a cell with FLAG_INT carries a
# shim and hop records (newest first) between its header and its body. Widths as in the P4
# headers int_shim_t and int_hop_t; a test compares them.
INT_SHIM_FIELDS: list[tuple[str, int]] = [
    ("hop_count", 8), ("max_hops", 8), ("overflow", 8), ("hop_len", 8),
]
INT_HOP_FIELDS: list[tuple[str, int]] = [
    ("switch_id", 16), ("pad0", 7), ("egress_port", 9), ("pad1", 13), ("enq_qdepth", 19),
    ("hop_latency", 32),
]
INT_SHIM_LEN = 4
INT_HOP_LEN = 12
INT_MAX_HOPS = 8          # the P4 header stack's size
_INT_SHIM = struct.Struct("!BBBB")
_INT_HOP = struct.Struct("!HHII")

# Ethernet + IPv4 + UDP bytes around every cell: what a link serialises.
FRAME_OVERHEAD = 14 + 20 + 8

_STRUCT = struct.Struct("!BBHIIIII")
U32 = 0xFFFFFFFF


class MalformedCell(TestbedError):
    """A datagram on the cell port that does not follow p4src/README.md."""


@dataclass(slots=True)
class IntHop:
    """One switch's INT hop record: its id, the egress port, the egress queue's depth in
    packets at enqueue and the microseconds the cell spent in that queue."""

    switch_id: int
    egress_port: int
    enq_qdepth: int
    hop_latency_us: int


@dataclass(slots=True)
class IntStack:
    """The INT shim and records of one cell: hops newest first (the last switch crossed is
    hops[0]); overflow counts the switches that found the stack full (max_hops records)."""

    hops: tuple[IntHop, ...] = ()
    max_hops: int = INT_MAX_HOPS
    overflow: int = 0


def int_encode(stack: IntStack) -> bytes:
    """The shim and hop records as the switches write them."""
    out = [_INT_SHIM.pack(len(stack.hops), stack.max_hops, stack.overflow, INT_HOP_LEN)]
    out += [_INT_HOP.pack(h.switch_id, h.egress_port, h.enq_qdepth, h.hop_latency_us)
            for h in stack.hops]
    return b"".join(out)


def int_decode(data, offset: int) -> tuple[IntStack, int]:
    """(stack, offset of the body) from the shim at `offset`; MalformedCell if it is cut
    short, longer than INT_MAX_HOPS or has another record size."""
    if len(data) < offset + INT_SHIM_LEN:
        raise MalformedCell("cell INT shim truncated")
    count, max_hops, overflow, hop_len = _INT_SHIM.unpack_from(data, offset)
    if hop_len != INT_HOP_LEN or count > INT_MAX_HOPS:
        raise MalformedCell(f"cell INT shim: {count} hops of {hop_len} bytes, expected at most "
                            f"{INT_MAX_HOPS} of {INT_HOP_LEN}")
    offset += INT_SHIM_LEN
    end = offset + count * INT_HOP_LEN
    if len(data) < end:
        raise MalformedCell(f"cell INT records truncated: {count} hops announced")
    hops = []
    for at in range(offset, end, INT_HOP_LEN):
        sid, port, qdepth, latency = _INT_HOP.unpack_from(data, at)
        hops.append(IntHop(sid, port & 0x1FF, qdepth & 0x7FFFF, latency))
    return IntStack(tuple(hops), max_hops, overflow), end


@dataclass(slots=True, init=False)
class CellPacket:
    """One decoded cell: header fields plus body (payload or SACK bitmap); `telemetry` is the
    INT stack of a cell with FLAG_INT (None without)."""

    type: int
    flow_id: int
    msg_id: int
    psn: int
    credit_seq: int
    aux: int
    flags: int
    entropy: int
    body: bytes = field(repr=False)
    version: int
    telemetry: IntStack | None

    # Written out, not generated: compiled (testbed/compiled/), this __init__ is native code, and
    # one is made per cell (a generated one stays Python, called per cell).
    def __init__(self, type: int, flow_id: int = 0, msg_id: int = 0, psn: int = 0, credit_seq: int = 0,
                 aux: int = 0, flags: int = 0, entropy: int = 0, body: bytes = b"", version: int = VERSION,
                 telemetry: IntStack | None = None) -> None:
        self.type = type
        self.flow_id = flow_id
        self.msg_id = msg_id
        self.psn = psn
        self.credit_seq = credit_seq
        self.aux = aux
        self.flags = flags
        self.entropy = entropy
        self.body = body
        self.version = version
        self.telemetry = telemetry

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, str(self.type))

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)


def expected_body_len(cell_type: int, cell_size: int) -> int:
    """Body length the README prescribes for a cell type."""
    if cell_type == DATA:
        return cell_size
    if cell_type == ACK:
        return SACK_BYTES
    return 0


def _field_error(cell: CellPacket) -> MalformedCell:
    for name, width in CELL_FIELDS:
        value = getattr(cell, name)
        if not isinstance(value, int) or value < 0 or value >> width:
            return MalformedCell(f"cell field {name}={value!r} does not fit in {width} bits")
    return MalformedCell(f"cell {cell!r} cannot be encoded")


def encode(cell: CellPacket) -> bytes:
    """Header + body bytes; raises MalformedCell if a field does not fit its width."""
    version, cell_type = cell.version, cell.type
    # struct range-checks the byte/16/32-bit fields; the two nibbles are checked here.
    if not (type(version) is int and type(cell_type) is int and 0 <= version < 16 and 0 <= cell_type < 16):
        raise _field_error(cell)
    try:
        head = _STRUCT.pack(
            (version << 4) | cell_type, cell.flags, cell.entropy, cell.flow_id, cell.msg_id, cell.psn,
            cell.credit_seq, cell.aux,
        )
    except struct.error:
        raise _field_error(cell) from None
    if (cell.telemetry is not None) != bool(cell.flags & FLAG_INT):
        raise MalformedCell("cell field flags: FLAG_INT set iff the cell carries an INT stack")
    if cell.telemetry is not None:
        head += int_encode(cell.telemetry)
    return head + cell.body if cell.body else head


def decode(data: bytes, cell_size: int | None = None) -> CellPacket:
    """Parse one UDP payload; with cell_size, DATA bodies must be exactly that long."""
    if len(data) < HEADER_LEN:
        raise MalformedCell(f"cell header truncated: {len(data)} bytes, need {HEADER_LEN}")
    b0, flags, entropy, flow_id, msg_id, psn, credit_seq, aux = _STRUCT.unpack_from(data)
    version, cell_type = b0 >> 4, b0 & 0x0F
    if version != VERSION:
        raise MalformedCell(f"cell field version={version}, expected {VERSION}")
    if cell_type not in TYPE_NAMES:
        raise MalformedCell(f"cell field type={cell_type} is not a known cell type")
    if flags & ~FLAGS_KNOWN:
        raise MalformedCell(f"cell field flags=0x{flags:02x} sets reserved bits")
    telemetry = None
    if flags & FLAG_INT:
        telemetry, start = int_decode(data, HEADER_LEN)
        body = bytes(data[start:])
    else:
        body = bytes(data[HEADER_LEN:])
    if cell_type == DATA:
        if cell_size is not None and len(body) != cell_size:
            raise MalformedCell(
                f"cell field body: DATA body is {len(body)} bytes, cell size is {cell_size}"
            )
        if aux == 0:
            raise MalformedCell("cell field aux=0: a DATA cell must carry its message length")
    elif len(body) != expected_body_len(cell_type, 0):
        raise MalformedCell(
            f"cell field body: {TYPE_NAMES[cell_type]} body is {len(body)} bytes, "
            f"expected {expected_body_len(cell_type, 0)}"
        )
    return CellPacket(
        type=cell_type,
        flow_id=flow_id,
        msg_id=msg_id,
        psn=psn,
        credit_seq=credit_seq,
        aux=aux,
        flags=flags,
        entropy=entropy,
        body=body,
        version=version,
        telemetry=telemetry,
    )


def sack_encode(bits: int) -> bytes:
    """SACK bitmap body: bit i (LSB first) = psn cum+1+i received."""
    return (bits & ((1 << SACK_BITS) - 1)).to_bytes(SACK_BYTES, "little")


def sack_decode(body: bytes) -> int:
    return int.from_bytes(body, "little")


def wire_bytes(cell_size: int, cell_type: int = DATA) -> int:
    """Bytes a link carries for one cell of this type (Ethernet/IP/UDP included)."""
    return FRAME_OVERHEAD + HEADER_LEN + expected_body_len(cell_type, cell_size)


def credit_link_share(cell_size: int) -> float:
    """The share of a link's bytes a switch's credit meter gives credits: one credit per DATA cell,
    and each cell's ACK, which takes the credits' direction and path (a link direction carries its
    own DATA plus the credits and ACKs of the other direction's DATA)."""
    credit = wire_bytes(cell_size, CREDIT)
    return round(credit / (credit + wire_bytes(cell_size, DATA) + wire_bytes(cell_size, ACK)), 6)


def credit_meter_rate(link_rate_bps: float, share: float, cell_size: int) -> int:
    """Credits per second a switch port's credit meter passes: `share` of the link's bytes in
    credit frames, in whole credits (P4Runtime's meter rates and the traffic manager's queue rates
    are integers). At the clocks the emulation is slowed to the fraction is not small: 20.7
    credits/s at 0.2 Mbit/s are metered at 20."""
    return max(1, int(link_rate_bps * share / (wire_bytes(cell_size, CREDIT) * 8)))

