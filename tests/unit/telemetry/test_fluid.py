"""The fluid model against cases worked out by hand."""

import pytest

from testbed.telemetry.fluid import FluidFlow, max_min_rates, simulate, usage_from_paths

MBIT = 1e6


def test_two_flows_on_one_link_get_half_each():
    rates = max_min_rates({"a": {"L": 1.0}, "b": {"L": 1.0}}, {"L": 10 * MBIT})
    assert rates == {"a": pytest.approx(5 * MBIT), "b": pytest.approx(5 * MBIT)}


def test_max_min_three_links_with_a_known_bottleneck():
    # f1 uses L1 and L2, f2 uses L2 only, f3 uses L1 and L3.  L2 (6) is the first to fill: f1 = f2 = 3.
    # Then f3 takes what L1 (10) leaves after f1: 7, but L3 (5) caps it at 5.
    usages = {"f1": {"L1": 1, "L2": 1}, "f2": {"L2": 1}, "f3": {"L1": 1, "L3": 1}}
    rates = max_min_rates(usages, {"L1": 10, "L2": 6, "L3": 5})
    assert rates == {"f1": pytest.approx(3), "f2": pytest.approx(3), "f3": pytest.approx(5)}


def test_split_flow_counts_its_share_on_each_path():
    # One flow over two paths (1/2 on each), one single-path flow on path A: A holds 1/2 r1 + r2 = 10,
    # B holds 1/2 r1 = 10.  Progressive filling: both rise to t; A fills at 1.5 t = 10, t = 6.67; then
    # both freeze (the split flow uses A too).
    rates = max_min_rates({"split": usage_from_paths([["A"], ["B"]]), "single": {"A": 1.0}},
                          {"A": 10, "B": 10})
    assert rates["split"] == pytest.approx(20 / 3) and rates["single"] == pytest.approx(20 / 3)


def test_back_to_back_messages_and_a_late_joiner():
    # Link 10 bit/s.  Flow a: two messages of 50 bits at t=0.  Flow b: one message of 20 bits at t=2.
    # 0-2: a alone at 10 -> 20 bits done.  From 2: both at 5; b done at 6 (20 bits); a has 30-20=10 left
    # of its first message at 6, then alone at 10: first message done at 7; second 50 bits: done at 12.
    result = simulate([FluidFlow("a", [(50, 0.0), (50, 0.0)], {"L": 1.0}),
                       FluidFlow("b", [(20, 2.0)], {"L": 1.0})], {"L": 10})
    assert result.messages["b"] == [pytest.approx((2.0, 6.0))]
    (s1, e1), (s2, e2) = result.messages["a"]
    assert (s1, e1, s2, e2) == pytest.approx((0.0, 7.0, 7.0, 12.0))
    assert result.link_bits["L"] == pytest.approx(120)
    assert result.start_s() == 0.0 and result.end_s() == pytest.approx(12.0)


def test_reverse_usage_costs_capacity():
    # Each flow's ACKs take 10% of the link its peer's data uses: 2 flows in opposite directions.
    usages = {"ab": {"AB": 1.0, "BA": 0.1}, "ba": {"BA": 1.0, "AB": 0.1}}
    rates = max_min_rates(usages, {"AB": 11, "BA": 11})
    assert rates["ab"] == pytest.approx(10) and rates["ba"] == pytest.approx(10)


def test_unknown_link_is_an_error():
    with pytest.raises(ValueError, match="no capacity"):
        simulate([FluidFlow("a", [(1, 0.0)], {"X": 1.0})], {"L": 1})
