"""Clock.reading(): the (read, offset) pair a per-packet loop uses instead
of now_ns() must tell the same time, for both clocks."""

from __future__ import annotations

import time

from testbed.p4model.clock import ManualClock, MonotonicClock


def test_monotonic_reading_tells_now_ns():
    clock = MonotonicClock()
    read, offset = clock.reading()
    assert read is time.monotonic_ns  # a builtin: no Python-level call per packet
    before = clock.now_ns()
    value = read() - offset
    after = clock.now_ns()
    assert before <= value <= after
    assert 0 <= value < 10**9 * 60  # time since the clock started, not since boot


def test_manual_reading_follows_the_hand():
    clock = ManualClock(5_000)
    read, offset = clock.reading()
    assert read() - offset == 5_000
    clock.advance_us(3)
    assert read() - offset == clock.now_ns() == 8_000
