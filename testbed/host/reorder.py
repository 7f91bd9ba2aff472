"""Bounded reorder buffer: cumulative base plus the cells held above it.

Sprayed cells arrive out of order; this buffer holds them until the gap at
`base` fills, never more than `window` cells beyond base (anything further
is a window overflow and is dropped, so memory is bounded whatever a peer
sends). It also measures the reordering the fabric produced, which
the report shows as first-class metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Verdict(Enum):
    ACCEPTED = "accepted"
    STALE = "stale"  # below base: already delivered
    DUPLICATE = "duplicate"  # already held
    OVERFLOW = "overflow"  # beyond the window


@dataclass
class ReorderStats:
    cells_in_order: int = 0
    cells_out_of_order: int = 0
    max_ooo_distance_cells: int = 0
    peak_occupancy_cells: int = 0
    window_overflows: int = 0
    duplicates: int = 0
    stale: int = 0


class ReorderBuffer:
    """Holds items keyed by sequence number; pops them in order."""

    def __init__(self, window: int, base: int = 0) -> None:
        self.window = window
        self.base = base
        self._held: dict[int, object] = {}
        self.stats = ReorderStats()

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, seq: int) -> bool:
        return seq in self._held

    def offer(self, seq: int, item: object) -> tuple[Verdict, int]:
        """Store item; returns the verdict and its out-of-order distance (seq - base)."""
        distance = seq - self.base
        if distance < 0:
            self.stats.stale += 1
            return Verdict.STALE, distance
        if distance >= self.window:
            self.stats.window_overflows += 1
            return Verdict.OVERFLOW, distance
        if seq in self._held:
            self.stats.duplicates += 1
            return Verdict.DUPLICATE, distance
        self._held[seq] = item
        if distance == 0:
            self.stats.cells_in_order += 1
        else:
            self.stats.cells_out_of_order += 1
            self.stats.max_ooo_distance_cells = max(self.stats.max_ooo_distance_cells, distance)
        self.stats.peak_occupancy_cells = max(self.stats.peak_occupancy_cells, len(self._held))
        return Verdict.ACCEPTED, distance

    def pop_ready(self) -> list[tuple[int, object]]:
        """Remove and return the in-order run starting at base."""
        out = []
        while self.base in self._held:
            out.append((self.base, self._held.pop(self.base)))
            self.base += 1
        return out

    def sack_bits(self, width: int) -> int:
        """Bit i set = seq base+1+i is held."""
        bits = 0
        for seq in self._held:
            i = seq - self.base - 1
            if 0 <= i < width:
                bits |= 1 << i
        return bits

    def holes(self, limit: int) -> list[int]:
        """Missing sequence numbers below the highest held one, at most `limit`."""
        if not self._held:
            return []
        top = max(self._held)
        return [s for s in range(self.base, top) if s not in self._held][:limit]
