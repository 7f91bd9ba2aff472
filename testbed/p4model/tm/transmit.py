"""The link's far end: hold packets until their transmit_at time.

After the traffic manager dequeues a packet (and egress has run on it), the
modelled link still has to serialise and propagate it; the switch writes it
to the wire at Departure.transmit_at_ns.  Those times never decrease per
port, so one FIFO per port is enough (no heap), and the event loop only
needs the earliest head across ports to compute its select() timeout.  The
lag between transmit_at and the real write is recorded as the second half
of the fidelity measure.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from testbed.p4model.tm.lag import LagStats


class TransmitSchedule:
    """Per-port FIFOs of (transmit_at_ns, item); not thread-safe (event loop only)."""

    def __init__(self) -> None:
        self._lines: dict[int, deque] = {}
        self.held = 0  # items waiting, all ports (read by the packet path: no call)
        self.transmit_lag = LagStats()

    def __len__(self) -> int:
        return self.held

    def push(self, port: int, transmit_at_ns: int, item: Any) -> None:
        """Schedule `item` on `port`; an earlier time than the port's last is raised to it."""
        line = self._lines.get(port)
        if line is None:
            line = self._lines[port] = deque()
        elif line and transmit_at_ns < line[-1][0]:
            transmit_at_ns = line[-1][0]  # never reorder a port's packets
        line.append((transmit_at_ns, item))
        self.held += 1

    def holds(self, port: int) -> bool:
        """True when `port` has packets waiting (a due packet may then not jump them)."""
        line = self._lines.get(port)
        return bool(line)

    def next_ns(self) -> int | None:
        """Earliest scheduled transmit time, or None when nothing is held."""
        best = None
        for line in self._lines.values():
            if line and (best is None or line[0][0] < best):
                best = line[0][0]
        return best

    def pop_due(self, now_ns: int) -> list[tuple[int, Any]]:
        """(port, item) for everything due at or before now, in order per port."""
        out = []
        record = self.transmit_lag.record
        for port, line in self._lines.items():
            while line and line[0][0] <= now_ns:
                at, item = line.popleft()
                record(now_ns - at)
                out.append((port, item))
        self.held -= len(out)
        return out
