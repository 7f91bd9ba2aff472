"""A degraded link's random loss in the traffic manager: at the probability set, counted per
class, reproducible, never on the idle-link fast path, and refused outside [0, 1)."""

from __future__ import annotations

import pytest

from testbed.p4model.clock import ManualClock
from testbed.p4model.tm.model import LINK_LOST, TMConfigError, TrafficManager


def lossy_tm(probability: float) -> TrafficManager:
    tm = TrafficManager(ManualClock(), depth=100_000, ports=[1, 2])
    tm.set_port_loss(probability, 1)
    return tm


def test_loss_happens_at_its_probability_on_its_port_only():
    tm = lossy_tm(0.25)
    codes = [tm.offer(1, 0, b"x" * 100, now_ns=i, cls=0) for i in range(4000)]
    lost = sum(1 for c in codes if c == LINK_LOST)
    assert 850 <= lost <= 1150  # 1000 expected; binomial sd about 27
    assert all(c >= 0 for c in codes if c != LINK_LOST)
    ports = {p["port"]: p for p in tm.port_stats()}
    assert ports[1]["loss"] == 0.25 and ports[1]["lost_link_by_class"] == {"0": lost}
    assert ports[2]["lost_link_by_class"] == {}
    assert all(tm.offer(2, 0, b"x" * 100, now_ns=5000 + i) >= 0 for i in range(200))
    # the same settings lose the same packets
    again = lossy_tm(0.25)
    assert [again.offer(1, 0, b"x" * 100, now_ns=i, cls=0) == LINK_LOST for i in range(4000)] == \
        [c == LINK_LOST for c in codes]


def test_a_lossy_port_never_takes_the_fast_path_and_healing_restores_it():
    tm = lossy_tm(0.5)
    assert tm.depart_now(1, 0, 10, 100) is None  # the caller offer()s it, which may lose it
    tm.set_port_loss(0, 1)
    assert tm.depart_now(1, 0, 20, 100) is not None


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2, "half", None])
def test_a_loss_outside_zero_to_one_is_refused(bad):
    with pytest.raises(TMConfigError):
        TrafficManager(ManualClock()).set_port_loss(bad, 1)
