"""Which class of packet a frame is, for the traffic manager's per-class counts.

The testbed's cells (p4src/README.md) are UDP datagrams to port 4793 whose
first payload byte holds the cell type in its low nibble; the class of a
cell is its type (0 DATA, 1 CREDIT, ... 6 CREDIT_STOP).  Any other frame is
OTHER (pings, ARP).  Read from the frame as received: the fabric program
never rewrites the cell header, so the class of every copy is the class of
the frame it came from.  A handful of byte reads per frame.
"""

from __future__ import annotations

from testbed.p4model.tm.model import CLASSES, UNCLASSIFIED

OTHER = CLASSES - 2
_CELL_PORT = (4793 >> 8, 4793 & 0xFF)
_MIN_CELL_FRAME = 14 + 20 + 8 + 1

CELL_CLASS_NAMES = {0: "DATA", 1: "CREDIT", 2: "CREDIT_REQUEST", 3: "ACK", 4: "NACK", 5: "CNP",
                    6: "CREDIT_STOP", OTHER: "other", UNCLASSIFIED: "unclassified"}


def cell_class(frame: bytes) -> int:
    """The cell type of an IPv4 (no options) UDP frame to port 4793, else OTHER."""
    if (len(frame) >= _MIN_CELL_FRAME and frame[12] == 0x08 and frame[13] == 0x00 and frame[14] == 0x45
            and frame[23] == 17 and frame[36] == _CELL_PORT[0] and frame[37] == _CELL_PORT[1]):
        return frame[42] & 0x0F
    return OTHER
