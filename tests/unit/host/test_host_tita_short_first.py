"""TiTa's receiver credits short demands first (Homa's order) and long ones round robin.

The receiver is driven alone: every credit is answered at once by the DATA cell
echoing it, so only the receiver's choice of flow decides who gets each credit.
"""

from __future__ import annotations

from testbed.host.cc.tita import TitaReceiver
from testbed.host.config import TitaParams, TransportConfig

from tita_drive import CELL, drive, request  # noqa: E402 (tests/unit/host is on sys.path)

BDP = 16


def receiver() -> TitaReceiver:
    return TitaReceiver(TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=BDP, cell_size=CELL,
                                        tita=TitaParams(jitter=0.0)))


def test_a_short_message_beside_long_flows_takes_the_next_credits():
    rx = receiver()
    for src in ("h2", "h3", "h4", "h5"):
        request(rx, 0.0, src, 1000)
    before, now = drive(rx, 0.2)
    assert set(before) == {"h2", "h3", "h4", "h5"}
    after, _ = drive(rx, 0.4, now, arrivals=[(now, "h6", 8)])
    assert after[:8] == ["h6"] * 8  # its whole message, back to back, before any long flow's next
    assert "h6" not in after[8:]


def test_equal_long_demands_share_round_robin_to_the_end():
    rx = receiver()
    for src in ("h2", "h3", "h4"):
        request(rx, 0.0, src, 40)  # each more than one BDP: none goes first
    order, _ = drive(rx, 5.0)
    assert len(order) == 120
    for k in range(0, 120, 3):
        assert sorted(order[k:k + 3]) == ["h2", "h3", "h4"], (k, order[k:k + 3])


def test_a_flow_announcing_more_than_a_bdp_on_the_way_loses_its_place():
    rx = receiver()
    request(rx, 0.0, "h2", 1000)
    _, now = drive(rx, 0.2)
    request(rx, now, "h3", 4)
    request(rx, now, "h3", 4 + BDP)  # more queued behind the short message: no longer short
    order, _ = drive(rx, 0.3, now)
    assert order[:6].count("h3") == 3 and order[:6].count("h2") == 3, order[:6]  # shared, not first
