"""TiTa's receiver credits short demands first (Homa's order) and long ones round robin.

The receiver is driven alone: every credit is answered at once by the DATA cell
echoing it, so only the receiver's choice of flow decides who gets each credit.
"""

from __future__ import annotations

from testbed.host import wire
from testbed.host.cc.tita import TitaReceiver
from testbed.host.config import TitaParams, TransportConfig

CELL = 1024
BDP = 16


def receiver() -> TitaReceiver:
    return TitaReceiver(TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=BDP, cell_size=CELL,
                                        tita=TitaParams(jitter=0.0)))


def request(rx: TitaReceiver, now: float, src: str, cells: int) -> None:
    rx.on_control(now, src, wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=1, aux=cells * CELL))


def drive(rx: TitaReceiver, until: float, now: float = 0.0, arrivals=()) -> tuple[list[str], float]:
    """Poll at each deadline up to `until`, answering each credit at once; `arrivals`: (time, src,
    cells) requests made on the way. Returns who got each credit, in order, and the time reached."""
    order, pending = [], sorted(arrivals)
    while now < until:
        while pending and pending[0][0] <= now:
            _, src, cells = pending.pop(0)
            request(rx, now, src, cells)
        for src, credit in rx.poll(now):
            order.append(src)
            rx.on_data(now, src, wire.CellPacket(type=wire.DATA, flow_id=1, credit_seq=credit.credit_seq), False)
        due = rx.deadline()
        if pending and (due is None or pending[0][0] < due):
            due = pending[0][0]
        if due is None:
            break
        now = max(due, now + 1e-7)
    return order, now


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
