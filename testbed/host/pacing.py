"""Release-time pacing: at most `rate` bits per second on average.

One pacer models the host NIC (never faster than the host's link) and the
same arithmetic paces a flow at its congestion-controlled rate. The next
release is fixed when a packet leaves, like the bmv2 queue rate:
next = max(now - catchup, previous next, ready) + size / rate, where
`ready` (optional) is when the packet came to be or was due.

`catchup` (seconds, default 0 = strict) lets a driver that wakes late make
up for part of the time it lost while it had packets waiting (`idle` tells
the pacer when it had none, so an idle NIC saves up no burst): the schedule may lag `now` by at most
`catchup`, so a late wake-up sends the packet that was due plus at most
`catchup * rate` bits more back to back, and over any interval T the pacer
releases at most rate * T + catchup * rate + one packet. It is a token
bucket of depth `catchup * rate` (plus the packet in hand): with a strict
pacer, every late wake-up of an event loop is bandwidth lost for good.
"""

from __future__ import annotations


class Pacer:
    __slots__ = ("rate_bps", "catchup_s", "next_free", "_s_per_byte")

    def __init__(self, rate_bps: float, catchup_s: float = 0.0) -> None:
        if rate_bps <= 0:
            raise ValueError(f"pacing rate {rate_bps} bit/s must be positive")
        if catchup_s < 0:
            raise ValueError(f"pacing catch-up {catchup_s} s must not be negative")
        self.rate_bps = rate_bps
        self.catchup_s = catchup_s
        self._s_per_byte = 8 / rate_bps
        self.next_free = 0.0

    def set_rate(self, rate_bps: float) -> None:
        """A new rate from the next packet on (a congestion control's decision);
        the release already scheduled stays."""
        if rate_bps <= 0:
            raise ValueError(f"pacing rate {rate_bps} bit/s must be positive")
        self.rate_bps = rate_bps
        self._s_per_byte = 8 / rate_bps

    def ready(self, now: float) -> bool:
        return now >= self.next_free

    def start_at(self, now: float, ready: float | None = None) -> float:
        """When a packet sent at `now` starts on the wire: at most `catchup` ago, never before
        the wire is free, and never before `ready`, the time the packet came to be (a cell an
        arrival triggered cannot have left before that arrival) or was due."""
        start = now - self.catchup_s
        if self.next_free > start:
            start = self.next_free
        if ready is not None and ready > start:
            start = ready if ready < now else now
        return start

    def consume(self, now: float, nbytes: int, ready: float | None = None) -> float:
        """Charge one packet; returns when it starts on the wire (`start_at`)."""
        start = self.start_at(now, ready)
        self.next_free = start + nbytes * self._s_per_byte
        return start

    def idle(self, now: float) -> None:
        """Nothing to send at `now`: the wire is free from now on, with no catch-up before it."""
        if self.next_free < now:
            self.next_free = now
