"""A NIC port that obeys its ToR's PFC pause frames (IEEE 802.1Qbb), sans-IO.

Why: a fabric with PFC is lossless only if the hosts stop too; a RoCE NIC
holds a paused priority's frames in its own queue and sends them, in order,
when the pause ends.  `PortPause` is one port's pause state from the frames
it received; `PauseGate` adds the queue of held cells.  Times are passed
in, so the agent and the tests drive the same code.

A cell's priority is the one the fabric program gives it
(p4src/include/ingress.p4): CREDIT and CNP cells 1, every other cell 0.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

from testbed.cells.wire import CNP, CREDIT
from testbed.cells.pfc import PauseFrameError, parse, quanta_s

PRIORITIES = 8
DATA_PRIORITY = 0
_HIGH_PRIORITY_TYPES = frozenset((CREDIT, CNP))

Item = TypeVar("Item")


def priority_of(cell_type: int) -> int:
    """The switch's priority for a cell type: credits and CNPs jump the data."""
    return 1 if cell_type in _HIGH_PRIORITY_TYPES else DATA_PRIORITY


class PortPause:
    """One port's pause state per priority.

    Each priority's latest pause is the interval [since, until): an XOFF
    sets until to now + its guard (or extends a running pause), an XON ends
    it now, and a guard that passes ends it by itself (a lost XON must not
    stop a port for ever).  So `until` is also when the port resumed."""

    def __init__(self, port_rate_bps: float) -> None:
        self.port_rate_bps = port_rate_bps
        self._since = [0.0] * PRIORITIES
        self._until = [0.0] * PRIORITIES
        self._closed_s = [0.0] * PRIORITIES  # pauses that have ended, except the latest
        self.xoff_frames = 0
        self.xon_frames = 0
        self.malformed_frames = 0

    def on_frame(self, frame: bytes, now: float) -> None:
        """A frame that arrived at `now`; one that is not PFC is counted, never raised."""
        try:
            named = parse(frame)
        except PauseFrameError:
            self.malformed_frames += 1
            return
        if any(quanta for _prio, quanta in named):
            self.xoff_frames += 1
        else:
            self.xon_frames += 1
        for prio, quanta in named:
            paused = self.paused(prio, now)
            if quanta:
                if not paused:  # a new pause: the latest one is over
                    self._closed_s[prio] += self._until[prio] - self._since[prio]
                    self._since[prio] = now
                self._until[prio] = now + quanta_s(quanta, self.port_rate_bps)
            elif paused:
                self._until[prio] = now

    def paused(self, priority: int, now: float) -> bool:
        return now < self._until[priority]

    def resumes_at(self, priority: int) -> float:
        """When the latest pause of `priority` ends (or ended): its guard, or its XON's time."""
        return self._until[priority]

    def paused_s(self, now: float, priority: int | None = None) -> float:
        """Seconds paused up to `now`, the running pause included; summed over priorities if None."""
        prios = range(PRIORITIES) if priority is None else (priority,)
        return sum(self._closed_s[p] + max(0.0, min(now, self._until[p]) - self._since[p]) for p in prios)


class PauseGate(Generic[Item]):
    """One NIC port's PFC: its pause state and the priority-0 cells it holds.

    A priority-0 cell is held while the port is paused, and also while
    earlier ones are still held, so a port never reorders its data; CREDIT
    and CNP cells always pass.  Once the pause is over the held cells leave
    one at a time as the port's wire frees up (`next_start`, `pop`): a cell
    whose serialisation has not begun is still in the NIC, and a new pause
    holds it again.  (Handing them all to the wire at the resume let a NIC
    that had held hundreds of cells send them all through the next pause,
    and a switch's pooled buffer overflowed.)"""

    def __init__(self, port_rate_bps: float) -> None:
        self.pause = PortPause(port_rate_bps)
        self.held: deque[tuple[float, Item]] = deque()  # (pacer release time, cell), in order
        self.held_max = 0

    def admit(self, cell_type: int, released_s: float, item: Item, now: float) -> bool:
        """True: the cell goes now.  False: the gate holds it."""
        if priority_of(cell_type) != DATA_PRIORITY or not (self.held or self.pause.paused(DATA_PRIORITY, now)):
            return True
        self.held.append((released_s, item))
        if len(self.held) > self.held_max:
            self.held_max = len(self.held)
        return False

    def _start(self, wire_free_at: float) -> float:
        """When the first held cell may begin: not before the port resumed, the pacer released it,
        or the wire finished the cell before it."""
        return max(self.pause.resumes_at(DATA_PRIORITY), self.held[0][0], wire_free_at)

    def next_start(self, now: float, wire_free_at: float) -> float | None:
        """The serialisation start of the first held cell if it begins by `now`, else None."""
        if not self.held or self.pause.paused(DATA_PRIORITY, now):
            return None
        start = self._start(wire_free_at)
        return start if start <= now else None

    def pop(self) -> Item:
        """The first held cell, leaving the NIC (after next_start said it may)."""
        return self.held.popleft()[1]

    def wake_at(self, wire_free_at: float) -> float | None:
        """When the loop must look again without a frame: when the first held cell may begin (the
        guard's end while paused), None when nothing is held."""
        return self._start(wire_free_at) if self.held else None

    def stats(self, now: float) -> dict:
        p = self.pause
        return {"xoff_frames": p.xoff_frames, "xon_frames": p.xon_frames, "malformed_frames": p.malformed_frames,
                "paused_s": round(p.paused_s(now), 6), "held_cells_max": self.held_max,
                "held_cells_now": len(self.held)}


def summed(per_port: dict[str, dict]) -> dict:
    """The ports' PFC stats added up, with each port's under "ports"."""
    total: dict = {}
    for stats in per_port.values():
        for key, value in stats.items():
            total[key] = total.get(key, 0) + value
    if "paused_s" in total:
        total["paused_s"] = round(total["paused_s"], 6)
    return dict(total, ports=per_port)
