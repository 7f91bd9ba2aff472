"""Time sources for the switch model.

Timestamps, meters and queue departure times all read one Clock so that
tests can drive time by hand (ManualClock) while a running switch uses the
monotonic clock. Time is integer nanoseconds since the clock's start, so
arithmetic is exact; P4 metadata wants microseconds (now_us).
"""

from __future__ import annotations

import time
from typing import Callable


class Clock:
    """Interface: nanoseconds since this clock started."""

    def now_ns(self) -> int:
        raise NotImplementedError

    def now_us(self) -> int:
        return self.now_ns() // 1000

    def reading(self) -> tuple[Callable[[], int], int]:
        """(read, offset) with now_ns() == read() - offset, so a per-packet
        loop can read the time without a Python-level call when `read` is a
        builtin."""
        return self.now_ns, 0


class MonotonicClock(Clock):
    """Wall time for a running switch, zero at construction."""

    def __init__(self) -> None:
        self._start = time.monotonic_ns()

    def now_ns(self) -> int:
        return time.monotonic_ns() - self._start

    def now_us(self) -> int:  # once per packet: one call, not two
        return (time.monotonic_ns() - self._start) // 1000

    def reading(self) -> tuple[Callable[[], int], int]:
        return time.monotonic_ns, self._start


class ManualClock(Clock):
    """A clock that only moves when told to; for tests and STF runs."""

    def __init__(self, start_ns: int = 0) -> None:
        self._now = start_ns

    def now_ns(self) -> int:
        return self._now

    def advance_ns(self, delta_ns: int) -> None:
        if delta_ns < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += delta_ns

    def advance_us(self, delta_us: float) -> None:
        self.advance_ns(int(delta_us * 1000))

    def set_ns(self, now_ns: int) -> None:
        if now_ns < self._now:
            raise ValueError("a clock cannot go backwards")
        self._now = now_ns
