"""PacketIn/PacketOut <-> bytes on the CPU port, as simple_switch_grpc does it.

The program declares its controller headers with
`@controller_header("packet_in")` / `@controller_header("packet_out")`;
the P4Info lists their fields (id, name, bitwidth) in header order.

* PacketOut: the server packs the metadata values into a packet_out
  header (fields MSB-first, in P4Info order; missing fields are 0) and
  prepends it to the payload; the result enters the pipeline on the CPU
  port, where the program's parser strips it.  Without a packet_out
  header the payload enters unchanged.
* PacketIn: a packet the pipeline sends to the CPU port starts with the
  packet_in header the program emitted: its fields become PacketIn.metadata
  (full-width big-endian byte strings, as PI sends them) and the rest is the
  payload.  A packet shorter than the header is sent without metadata.

Layouts are computed once per pipeline; packing is integer arithmetic.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.p4runtime.status import RpcError


class ControllerHeader:
    """One controller header: field ids and widths in order."""

    def __init__(self, metadata: p4info_pb2.ControllerPacketMetadata) -> None:
        self.name = metadata.preamble.name
        self.fields = [(m.id, m.name, m.bitwidth) for m in metadata.metadata]
        self.bits = sum(w for _, _, w in self.fields)
        self.nbytes = (self.bits + 7) // 8
        self.widths = {i: w for i, _, w in self.fields}

    def pack(self, metadata) -> bytes:
        """PacketMetadata list -> header bytes (INVALID_ARGUMENT on bad ids or values)."""
        values = {}
        for m in metadata:
            width = self.widths.get(m.metadata_id)
            if width is None:
                raise RpcError("INVALID_ARGUMENT", f"{self.name} has no metadata field with id {m.metadata_id}")
            value = int.from_bytes(m.value, "big")
            if value >> width:
                raise RpcError("INVALID_ARGUMENT",
                               f"{self.name} metadata id {m.metadata_id}: value 0x{m.value.hex()} does not fit "
                               f"in {width} bits")
            values[m.metadata_id] = value
        acc = 0
        for fid, _, width in self.fields:
            acc = (acc << width) | values.get(fid, 0)
        pad = self.nbytes * 8 - self.bits
        return (acc << pad).to_bytes(self.nbytes, "big")

    def unpack(self, data: bytes) -> tuple[list[p4runtime_pb2.PacketMetadata], bytes]:
        if len(data) < self.nbytes:
            return [], data
        acc = int.from_bytes(data[:self.nbytes], "big") >> (self.nbytes * 8 - self.bits)
        out = []
        shift = self.bits
        for fid, _, width in self.fields:
            shift -= width
            value = (acc >> shift) & ((1 << width) - 1)
            out.append(p4runtime_pb2.PacketMetadata(metadata_id=fid,
                                                    value=value.to_bytes((width + 7) // 8, "big")))
        return out, data[self.nbytes:]


class PacketIO:
    """The packet_in / packet_out headers of one P4Info (either may be absent)."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.packet_in = self.packet_out = None
        for cpm in p4info.controller_packet_metadata:
            if cpm.preamble.name == "packet_in":
                self.packet_in = ControllerHeader(cpm)
            elif cpm.preamble.name == "packet_out":
                self.packet_out = ControllerHeader(cpm)

    def encode_packet_out(self, packet: p4runtime_pb2.PacketOut) -> bytes:
        if self.packet_out is None:
            if len(packet.metadata):
                raise RpcError("INVALID_ARGUMENT", "the program has no @controller_header(\"packet_out\")")
            return packet.payload
        return self.packet_out.pack(packet.metadata) + packet.payload

    def decode_packet_in(self, data: bytes) -> p4runtime_pb2.PacketIn:
        if self.packet_in is None:
            return p4runtime_pb2.PacketIn(payload=data)
        metadata, payload = self.packet_in.unpack(data)
        return p4runtime_pb2.PacketIn(payload=payload, metadata=metadata)
