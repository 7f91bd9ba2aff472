"""How late a host agent's event loop sends relative to the schedule it set itself.

The agent computes when it must next act (the NIC pacer's next release, a
timer) and sleeps until then; an operating system that wakes it late makes
its cells leave late, so the host, not the modelled link, decides the
timing.  Each time the loop wakes at or after its deadline and sends, the
lateness (wake time minus deadline) is one sample.  Percentiles are
nearest-rank over the samples.
"""

from __future__ import annotations

import math


class Lateness:
    __slots__ = ("samples_us",)

    def __init__(self) -> None:
        self.samples_us: list[float] = []

    def on_wake(self, due_s: float | None, now_s: float, sent: int) -> None:
        """One loop iteration: `sent` datagrams at `now_s`, the deadline it slept for `due_s`."""
        if sent and due_s is not None and now_s >= due_s:
            self.samples_us.append((now_s - due_s) * 1e6)

    def summary(self) -> dict:
        ordered = sorted(self.samples_us)
        n = len(ordered)

        def rank(q: float) -> float | None:
            return round(ordered[max(1, math.ceil(q * n)) - 1], 1) if n else None

        return {"samples": n, "p50_us": rank(0.50), "p99_us": rank(0.99),
                "max_us": round(ordered[-1], 1) if n else None, "percentile": "nearest-rank"}
