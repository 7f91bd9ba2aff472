"""Which class of packet a frame is, for per-class counts (the traffic manager's).

The testbed's cells (p4src/README.md) are UDP datagrams to CELL_UDP_PORT whose
first payload byte holds the cell type in its low nibble; the class of a
cell is its type (0 DATA, 1 CREDIT, ... 6 CREDIT_STOP).  Any other frame is
OTHER (pings, ARP); UNCLASSIFIED is a packet nobody classified.  Read from
the frame as received: the fabric program never rewrites the cell header,
so the class of every copy is the class of the frame it came from.  A
handful of byte reads per frame.
"""

from __future__ import annotations

from testbed.cells.wire import CELL_UDP_PORT, FRAME_OVERHEAD, TYPE_NAMES

CLASSES = 16  # packet classes counted separately: the cell types, OTHER and UNCLASSIFIED
UNCLASSIFIED = CLASSES - 1
OTHER = CLASSES - 2
_CELL_PORT = (CELL_UDP_PORT >> 8, CELL_UDP_PORT & 0xFF)
_MIN_CELL_FRAME = FRAME_OVERHEAD + 1

CELL_CLASS_NAMES = {**TYPE_NAMES, OTHER: "other", UNCLASSIFIED: "unclassified"}


def cell_class(frame: bytes) -> int:
    """The cell type of an IPv4 (no options) UDP frame to CELL_UDP_PORT, else OTHER."""
    if (len(frame) >= _MIN_CELL_FRAME and frame[12] == 0x08 and frame[13] == 0x00 and frame[14] == 0x45
            and frame[23] == 17 and frame[36] == _CELL_PORT[0] and frame[37] == _CELL_PORT[1]):
        return frame[42] & 0x0F
    return OTHER
