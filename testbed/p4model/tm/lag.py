"""How far the switch fell behind its own schedule (the fidelity measure).

The traffic manager computes, in model time, when every packet should leave
a queue and when it should be written to the wire.  A Python event loop can
only act when it gets the CPU, so the real moment is later by some lag.
Small lags are harmless; lags comparable to a packet time mean the numbers
of the run were produced by the CPU, not by the modelled network, and the
report must say so.  LagStats keeps that evidence cheaply: one call per
packet, an exact maximum, and a histogram from which percentiles are read.
A packet that was exactly on time costs only ``lag.on_time += 1`` (the
packet path's common case; no call).

Histogram: one bucket per microsecond below FINE_US (exact percentiles
there, 16 ms: beyond a few cell times at the emulation's link rates), then
one bucket per power of two (a percentile above FINE_US is reported as its
bucket's upper bound, capped at the observed maximum, so it never
understates the lag).
"""

from __future__ import annotations

FINE_US = 16384  # exact up to 16 ms: the range where fidelity verdicts are made


class LagStats:
    """Lag samples in nanoseconds; summary in microseconds."""

    __slots__ = ("recorded", "on_time", "total_ns", "max_ns", "_fine", "_coarse")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.recorded = 0  # samples given to record()
        self.on_time = 0  # samples of exactly 0 lag, counted by the caller directly
        self.total_ns = 0
        self.max_ns = 0
        self._fine = [0] * FINE_US
        self._coarse = [0] * 64

    def record(self, lag_ns: int) -> None:
        """Add one sample; negative lags (early) count as zero."""
        if lag_ns < 0:
            lag_ns = 0
        self.recorded += 1
        self.total_ns += lag_ns
        if lag_ns > self.max_ns:
            self.max_ns = lag_ns
        lag_us = lag_ns // 1000
        if lag_us < FINE_US:
            self._fine[lag_us] += 1
        else:
            self._coarse[lag_us.bit_length()] += 1

    @property
    def count(self) -> int:
        """All samples: recorded ones and on-time ones."""
        return self.recorded + self.on_time

    def percentile_us(self, fraction: float) -> int:
        """Smallest lag (µs) that at least `fraction` of the samples do not exceed."""
        count = self.count
        if count == 0:
            return 0
        rank = max(1, -int(-fraction * count // 1))  # ceil, at least the first sample
        seen = self.on_time  # lag 0: the first fine bucket
        for lag_us, n in enumerate(self._fine):
            seen += n
            if seen >= rank:
                return lag_us
        max_us = self.max_ns // 1000
        for bits, n in enumerate(self._coarse):
            seen += n
            if seen >= rank:
                return min((1 << bits) - 1, max_us)
        return max_us

    def summary(self) -> dict:
        count = self.count
        return {
            "samples": count,
            "max_lag_us": self.max_ns // 1000,
            "p99_lag_us": self.percentile_us(0.99),
            "mean_lag_us": round(self.total_ns / count / 1000, 3) if count else 0.0,
        }
