"""A credit TiTa's receiver declared lost whose DATA comes later was late, not lost.

The receiver is driven alone: every credit but one is answered at once, and the one is answered
after the credit timeout has declared it lost, or never.
"""

from __future__ import annotations

import pytest

from testbed.cells import wire
from testbed.host.cc.tita import TitaReceiver
from testbed.host.config import TitaParams, TransportConfig

LATE_SEQ = 3


def answer(rx: TitaReceiver, now: float, seq: int) -> None:
    rx.on_data(now, "h2", wire.CellPacket(type=wire.DATA, flow_id=1, credit_seq=seq), False)


def run(late_answer: bool) -> tuple[TitaReceiver, float, int]:
    """Credit a long flow, holding back credit LATE_SEQ's answer until past the credit timeout
    (then answering it, if `late_answer`) and to the end of that feedback round. Returns the
    receiver, the flow's rate over the maximum, and its demand left."""
    cfg = TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=16, tita=TitaParams(jitter=0.0))
    rx = TitaReceiver(cfg)
    rx.on_control(0.0, "h2", wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=1, aux=10_000 * 1024))
    flow = rx.flows[("h2", 1)]
    now, declared_at = 0.0, None
    while declared_at is None or now < flow.period_end:
        for _dst, credit in rx.poll(now):
            if credit.credit_seq != LATE_SEQ:
                answer(rx, now, credit.credit_seq)
        if declared_at is None and rx.credits_lost:
            declared_at = now
            if late_answer:
                answer(rx, now + 1e-3, LATE_SEQ)
        now = max(rx.deadline(), now + 1e-7)
    rx.poll(now)  # the round's feedback
    return rx, flow.rate / rx.max_rate, flow.demand


def test_a_late_credit_is_taken_back_from_the_loss_and_the_rate_is_kept():
    rx, rate, demand = run(late_answer=True)
    assert rx.credits_lost == 0
    assert rate == pytest.approx(1.0)
    _, _, lost_demand = run(late_answer=False)
    assert demand == lost_demand - 1  # the cell the late credit paid for is not credited again


def test_a_credit_never_answered_stays_lost_and_lowers_the_rate():
    rx, rate, _ = run(late_answer=False)
    assert rx.credits_lost == 1
    assert rate < 1.0


@pytest.mark.parametrize("answered, lost, cut", [(0, 1, False), (0, 2, True), (1, 1, True)])
def test_one_credit_declared_lost_with_none_answered_is_no_measured_rate(answered, lost, cut):
    """A round whose only sample is one credit declared lost keeps the flow's rate: cut to the
    floor on it, a flow of one credit per round waited 0.2 s for its next credit, and the last
    message of a 3-tier all-to-all ended 3.8 base RTTs after all the others (simulator)."""
    cfg = TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=16, tita=TitaParams(jitter=0.0))
    rx = TitaReceiver(cfg)
    rx.on_control(0.0, "h2", wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=1, aux=100 * 1024))
    flow = rx.flows[("h2", 1)]
    flow.used, flow.lost = answered, lost  # what the round counted
    rx.poll(flow.period_end)
    assert (flow.rate < rx.max_rate) == cut
    assert flow.round == 1


def test_credits_issued_out_of_time_order_still_expire_each_at_its_own_time():
    """poll looks past the first outstanding credit only when it has expired, which is exact while
    credits are issued in time order; a driver whose clock went back makes it scan them all."""
    cfg = TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=16, tita=TitaParams(jitter=0.0))
    rx = TitaReceiver(cfg)
    rx.on_control(0.0, "h2", wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=1, aux=100 * 1024))
    flow = rx.flows[("h2", 1)]
    later = rx._issue(flow, 0.010).credit_seq
    assert flow.issued_in_order
    earlier = rx._issue(flow, 0.005).credit_seq  # the clock went back
    assert not flow.issued_in_order
    rx.poll(0.005 + rx.timeout)  # the second credit has expired, the first (issued later) has not
    assert rx.credits_lost == 1
    assert later in flow.outstanding and earlier not in flow.outstanding
