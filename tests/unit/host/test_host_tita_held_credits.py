"""A TiTa sender keeps a credit that came while its send window was full and spends it on the
ACK that opens the window (a dropped one was re-issued only after the receiver's credit timeout,
3 base RTTs, and a message's last cell waited that long)."""

from __future__ import annotations

from testbed.cells import wire
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint

PEER = "10.2.0.5"


def credit(flow_id: int, seq: int) -> bytes:
    return wire.encode(wire.CellPacket(type=wire.CREDIT, flow_id=flow_id, credit_seq=seq, entropy=seq))


def data_cells(ep: Endpoint, now: float) -> list[wire.CellPacket]:
    return [c for c in (wire.decode(tx.data) for tx in ep.poll(now)) if c.type == wire.DATA]


def test_credits_beyond_the_window_wait_for_the_ack_that_opens_it():
    # a base RTT of 1 s: no retransmission timer fires in the few ms this takes
    cfg = TransportConfig(cc="tita", link_rate_bps=100e6, bdp_cells=4, reorder_window_cells=4, base_rtt_s=1.0)
    ep = Endpoint("10.1.0.2", cfg)
    ep.send_message(0.0, PEER, 1, b"x" * 20 * cfg.cell_size)  # 21 cells: more than the window
    ep.poll(0.0)
    flow = ep.senders[PEER]
    now, sent = 0.001, []
    for seq in range(1, 7):  # six credits, a window of four
        ep.receive(now, PEER, credit(flow.flow_id, seq), 0)
        sent += data_cells(ep, now)
        now += 0.001
    assert [c.credit_seq for c in sent] == [1, 2, 3, 4]
    assert flow.cc.credits_held == 2 and flow.cc.credits_wasted == 0
    ack = wire.CellPacket(type=wire.ACK, flow_id=flow.flow_id, psn=2, body=wire.sack_encode(0))  # cells 0, 1
    ep.receive(now, PEER, wire.encode(ack), 0)
    later = data_cells(ep, now + 0.001)
    assert [(c.credit_seq, c.psn, c.entropy) for c in later] == [(5, 4, 5), (6, 5, 6)]
    assert not flow.cc.held_credits
    assert ep.stats()["credits_held"] == 2 and ep.stats()["credits_wasted"] == 0


def test_held_credits_carry_the_retransmissions_of_a_timeout_when_no_ack_comes():
    """The window's first cell lost: no ACK opens it, the retransmission timer requeues the
    cells, and the held credits send them (before, they waited for an ACK that never came)."""
    cfg = TransportConfig(cc="tita", link_rate_bps=100e6, bdp_cells=4, reorder_window_cells=4, base_rtt_s=1.0)
    ep = Endpoint("10.1.0.2", cfg)
    ep.send_message(0.0, PEER, 1, b"x" * 20 * cfg.cell_size)
    ep.poll(0.0)
    flow = ep.senders[PEER]
    for seq in range(1, 7):
        ep.receive(0.001 * seq, PEER, credit(flow.flow_id, seq), 0)
        data_cells(ep, 0.001 * seq)
    assert len(flow.cc.held_credits) == 2
    timeout = flow.window.deadline()
    resent = data_cells(ep, timeout + 0.001) + data_cells(ep, timeout + 0.002)  # the NIC sends one at a time
    assert [(c.credit_seq, c.has(wire.FLAG_RETX)) for c in resent][:2] == [(5, True), (6, True)]
    assert not flow.cc.held_credits
