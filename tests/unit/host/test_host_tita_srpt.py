"""TiTa's `credit_order: srpt` (Homa's shortest-remaining-first) and requests that cross credits.

The receiver is driven alone, as in test_host_tita_short_first: every credit is answered at once,
so only its choice of flow decides who gets each credit.
"""

from __future__ import annotations

import pytest

from testbed.simulation import simexp

from testbed.cells import wire
from testbed.host.cc.tita import TitaReceiver
from testbed.host.config import ConfigError, TitaParams, TransportConfig

from tita_drive import CELL, drive, request  # noqa: E402 (tests/unit/host is on sys.path)

BDP = 16


def receiver(order: str = "srpt") -> TitaReceiver:
    return TitaReceiver(TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=BDP, cell_size=CELL,
                                        tita=TitaParams(jitter=0.0, credit_order=order)))


def test_equal_demands_are_served_one_after_another_in_arrival_order_at_the_same_rate():
    fair_order, fair_end = drive(_three(receiver("fair")), 5.0)
    order, end = drive(_three(receiver()), 5.0)
    assert order == ["h2"] * 40 + ["h3"] * 40 + ["h4"] * 40
    assert sorted(fair_order) == sorted(order)
    assert end == pytest.approx(fair_end, rel=1e-6)  # the link as full as with equal shares


def _three(rx: TitaReceiver) -> TitaReceiver:
    for src in ("h2", "h3", "h4"):
        request(rx, 0.0, src, 40)
    return rx


def test_a_smaller_demand_that_arrives_later_takes_the_lead():
    rx = receiver()
    request(rx, 0.0, "h2", 100)
    first, now = drive(rx, 0.05)
    order, _ = drive(rx, 2.0, now, arrivals=[(now, "h3", 30)])
    assert set(first) == {"h2"}
    assert order[:30] == ["h3"] * 30 and set(order[30:]) == {"h2"}


def test_an_unknown_credit_order_is_refused():
    with pytest.raises(ConfigError, match="credit order 'lifo'"):
        TransportConfig(cc="tita", tita=TitaParams(credit_order="lifo"))


def test_a_request_that_crossed_credits_does_not_credit_their_cells_again():
    for order in ("fair", "srpt"):
        rx = receiver(order)
        request(rx, 0.0, "h2", 20)
        issued, now = [], 0.0
        while len(issued) < 6:  # six credits on their way, none answered yet
            issued += [c for _, c in rx.poll(now)]
            now = rx.deadline()
        # sent before any credit came (last seen 0), announcing all 20 cells: every outstanding
        # credit will bring one of them
        request(rx, now, "h2", 20)
        assert rx.flows[("h2", 1)].demand == 14
        # sent after the third credit came: the three after it crossed it
        request(rx, now, "h2", 20 - 3, last_seen=issued[2].credit_seq)
        assert rx.flows[("h2", 1)].demand == 14


def test_an_srpt_incast_halves_the_median_fct_and_keeps_the_link_full_without_loss():
    """Simulator, 7:1 into one 5 Mbit/s link: senders finish one after another, so the median is
    about 4/7 of the last (fluid: 0.57) where equal shares finish everyone together."""
    fair = simexp.incast("tita", 7)
    srpt = simexp.incast("tita", 7, tita=TitaParams(credit_order="srpt"))
    assert srpt["finished"] and srpt["data_drops"] == 0
    assert srpt["fct_p50_ms"] <= 0.65 * fair["fct_p50_ms"]
    assert srpt["fct_p99_ms"] <= 1.03 * fair["fct_p99_ms"]
    assert srpt["goodput_over_payload_rate"] >= 0.95 and srpt["last_over_ideal"] <= 1.05
    assert srpt["jain"] < 0.8  # the equal shares it gives up


def overcommitted(k: int) -> TitaReceiver:
    return TitaReceiver(TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=BDP, cell_size=CELL,
                                        tita=TitaParams(jitter=0.0, credit_order="srpt", overcommit=k)))


def test_overcommit_shares_the_credits_among_the_k_least_remaining_in_turn():
    order, end = drive(_three(overcommitted(2)), 5.0)
    _, srpt_end = drive(_three(receiver()), 5.0)
    assert order[:78:2] == ["h2"] * 39 and order[1:78:2] == ["h3"] * 39  # round robin, the first two to ask
    # h4 is held back until h2, the first to ask, is done; then it takes h2's place (and its turn)
    assert order[78] == "h2" and order.index("h4") == 79 and order[80:] == ["h3"] + ["h4"] * 39
    assert end == pytest.approx(srpt_end, rel=1e-6)  # the link as full as srpt's


def test_overcommit_of_every_flow_is_round_robin_and_one_is_srpt():
    order, _ = drive(_three(overcommitted(3)), 5.0)
    assert order == ["h2", "h3", "h4"] * 40
    assert drive(_three(overcommitted(1)), 5.0)[0] == drive(_three(receiver()), 5.0)[0]


def test_a_shorter_demand_enters_the_overcommitted_set_and_the_longest_leaves_it():
    rx = overcommitted(2)
    for src in ("h2", "h3"):
        request(rx, 0.0, src, 100)
    first, now = drive(rx, 0.05)
    order, _ = drive(rx, 5.0, now, arrivals=[(now, "h4", 10)])
    assert set(first) == {"h2", "h3"}
    # h4 takes one of the two places at once; h2 and h3 are within a cell of each other, so the one
    # with more left waits: each credit goes to h4 or to whichever of them has less left
    assert order[:20].count("h4") == 10 and set(order[:20]) == {"h2", "h3", "h4"}
    assert order[20:].count("h2") + order[20:].count("h3") == len(order) - 20


def test_overcommit_needs_srpt_and_at_least_one_flow():
    with pytest.raises(ConfigError, match="overcommit 2 needs credit_order srpt"):
        TransportConfig(cc="tita", tita=TitaParams(overcommit=2))
    with pytest.raises(ConfigError, match="overcommit 0 must be at least 1"):
        TransportConfig(cc="tita", tita=TitaParams(credit_order="srpt", overcommit=0))


def test_an_overcommitted_incast_keeps_equal_shares_and_lowers_the_median():
    """Simulator, 7:1: K = 6 flows share the link while the seventh waits, so six finish at about
    6/7 of the ideal last delivery (fluid: median 0.86 of fair order's, Jain 0.997)."""
    fair = simexp.incast("tita", 7)
    k6 = simexp.incast("tita", 7, tita=TitaParams(credit_order="srpt", overcommit=6))
    assert k6["finished"] and k6["data_drops"] == 0
    assert k6["fct_p50_ms"] <= 0.9 * fair["fct_p50_ms"]
    assert k6["jain"] >= 0.99
    assert k6["goodput_over_payload_rate"] >= 0.95 and k6["last_over_ideal"] <= 1.05


def test_srpt_wakes_when_its_flow_is_due_not_before():
    """srpt credits a flow at its unjittered grid point, so its deadline is that point: at the
    jittered one (up to 10% of an interval earlier) the loop woke to nothing, and the simulator,
    waking again 1 ns later, spun through the offset (245 s of wall time for the mixed workload)."""
    for k in (1, 2):
        rx = TitaReceiver(TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=BDP, cell_size=CELL,
                                          tita=TitaParams(jitter=0.1, credit_order="srpt", overcommit=k)))
        for src in ("h2", "h3"):
            request(rx, 0.0, src, 40)
            rx.flows[(src, 1)].rate = rx.max_rate / 4  # below the link's, as after a credit loss
        now, polls, credits = 0.0, 0, 0
        while (due := rx.deadline()) is not None and credits < 80 and polls < 1000:
            now = max(now, due)
            polls += 1
            for src, credit in rx.poll(now):
                credits += 1
                rx.on_data(now, src, wire.CellPacket(type=wire.DATA, flow_id=1, credit_seq=credit.credit_seq), False)
        assert credits == 80 and polls <= credits + 1, (k, polls)
