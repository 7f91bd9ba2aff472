"""Scapy layer for the cell header, built from wire.CELL_FIELDS.

Used by tests and pcap inspection; bound to UDP port 4793 in both
directions so that captured cells dissect automatically.
"""

from __future__ import annotations

from scapy.fields import BitField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from testbed.cells.wire import CELL_FIELDS, CELL_UDP_PORT, VERSION


def _field(name: str, width: int):
    default = VERSION if name == "version" else 0
    return BitField(name, default, width)


class Cell(Packet):
    """The 24-byte cell header; what follows it is the body (payload or SACK)."""

    name = "Cell"
    fields_desc = [_field(name, width) for name, width in CELL_FIELDS]


bind_layers(UDP, Cell, dport=CELL_UDP_PORT)
bind_layers(UDP, Cell, sport=CELL_UDP_PORT)
