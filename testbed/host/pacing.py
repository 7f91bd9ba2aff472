"""Release-time pacing: at most `rate` bits per second, no bursts.

One pacer models the host NIC (never faster than the host's link) and the
same arithmetic paces a flow at its congestion-controlled rate. The next
release is fixed when a packet leaves, like the bmv2 queue rate:
next = max(now, previous next) + size / rate.
"""

from __future__ import annotations


class Pacer:
    def __init__(self, rate_bps: float) -> None:
        if rate_bps <= 0:
            raise ValueError(f"pacing rate {rate_bps} bit/s must be positive")
        self.rate_bps = rate_bps
        self.next_free = 0.0

    def ready(self, now: float) -> bool:
        return now >= self.next_free

    def consume(self, now: float, nbytes: int) -> None:
        self.next_free = max(self.next_free, now) + nbytes * 8 / self.rate_bps
