"""TiTa's credit pacing reaches the receiver's link rate.

The receiver is driven alone here: a driver polls it at its deadline (or
late), and every credit is answered at once by a DATA cell echoing it, so
neither the outstanding budget nor the network decides the rate, only the
pacing. The link is 5 Mbit/s, cells 1024 B (DATA frames 1090 B): one DATA
frame per 1.744 ms, 573.4 frames/s.
"""

from __future__ import annotations

import pytest

from testbed.simulation import simexp

from testbed.cells import wire
from testbed.host.cc.tita import TitaReceiver
from testbed.host.config import TitaParams, TransportConfig

RATE = 5e6


def receiver(**tita) -> tuple[TitaReceiver, TransportConfig]:
    cfg = TransportConfig(cc="tita", link_rate_bps=RATE, bdp_cells=16, tita=TitaParams(**tita))
    rx = TitaReceiver(cfg)
    rx.on_control(0.0, "h2", wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=1, aux=1 << 30))
    return rx, cfg


def drive(rx: TitaReceiver, duration: float, late: float = 0.0, control_every: float | None = None,
          control_bytes: int = 0) -> int:
    """Poll at each deadline (+ `late` seconds), answer each credit at once; returns credits sent.
    With `control_every`, a control frame of `control_bytes` arrives on the downlink that often."""
    now, next_control = 0.0, 0.0
    sent = 0
    while now < duration:
        while control_every is not None and next_control <= now:
            rx.on_downlink(next_control, control_bytes)
            next_control += control_every
        for _dst, credit in rx.poll(now):
            if now < duration:
                sent += 1
            rx.on_data(now, "h2", wire.CellPacket(type=wire.DATA, flow_id=1, credit_seq=credit.credit_seq), False)
        due = rx.deadline()
        assert due is not None
        now = max(due, now + 1e-7) + late
    return sent


def frames_per_s(cfg: TransportConfig) -> float:
    return RATE / 8 / cfg.data_wire_bytes


def test_with_no_control_arriving_credits_fill_the_link_with_data():
    rx, cfg = receiver(jitter=0.0)
    sent = drive(rx, 2.0)
    # One credit per DATA frame time, not per (DATA + credit + ACK) frame time (88.6% of that).
    assert sent == pytest.approx(2.0 * frames_per_s(cfg), rel=0.005)


def test_control_that_arrives_on_the_downlink_is_taken_out_of_the_credit_rate():
    rx, cfg = receiver(jitter=0.0)
    ack = wire.wire_bytes(cfg.cell_size, wire.ACK) + wire.FRAME_OVERHEAD
    every = 4 * cfg.data_wire_bytes * 8 / RATE  # one ACK per four DATA frame times
    sent = drive(rx, 2.0, control_every=every, control_bytes=ack)
    data_share = 1 - ack / (4 * cfg.data_wire_bytes)
    assert sent == pytest.approx(2.0 * frames_per_s(cfg) * data_share, rel=0.005)
    assert rx.stats()["control_bytes_in"] == pytest.approx(2.0 / every * ack, rel=0.01)


def test_jitter_moves_credits_without_lowering_the_rate():
    rx, cfg = receiver(jitter=0.1)
    sent = drive(rx, 4.0)
    # A jitter multiplied into each interval and clipped by the host gate lost ~5%.
    assert sent == pytest.approx(4.0 * frames_per_s(cfg), rel=0.01)


@pytest.mark.parametrize("late_frames", [0.3, 0.9])
def test_late_wakeups_are_caught_up(late_frames):
    rx, cfg = receiver(jitter=0.1)
    late = late_frames * cfg.data_wire_bytes * 8 / RATE
    sent = drive(rx, 4.0, late=late)
    # Every wake-up comes `late` after the deadline; the credits due meanwhile still go out.
    assert sent == pytest.approx(4.0 * frames_per_s(cfg), rel=0.01)


def test_an_idle_receiver_saves_up_no_burst():
    rx, cfg = receiver(jitter=0.0)
    rx.on_control(0.0, "h2", wire.CellPacket(type=wire.CREDIT_STOP, flow_id=1))
    assert rx.poll(0.0) == [] and rx.poll(1.0) == []
    rx.on_control(1.0, "h2", wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=1, aux=1 << 20))
    burst = rx.poll(1.0 + 1e-6)
    assert len(burst) <= 2  # at most the catch-up of one cell time, not a second of credits


def test_feedback_runs_once_per_measured_rtt_and_measures_over_the_round():
    rx, cfg = receiver(jitter=0.0)
    base = cfg.rtt_s
    rx._rtt_sample(3 * base)  # the credit round trip measured at three base RTTs
    flow = rx.flows[("h2", 1)]
    flow.used, flow.lost = 30, 10  # 25% credit loss: well above the target
    flow.period_start, flow.period_end = 0.0, base
    rx._feedback(flow, 3 * base)
    target = (1 - 1.0) * cfg.tita.target_loss_factor  # rate was at the maximum
    # 30 credits used over the three base RTTs the round lasted, not over one.
    assert flow.rate == pytest.approx(max(30 / (3 * base) * (1 + target), rx.min_rate))
    assert flow.period_end == pytest.approx(3 * base + rx.period())
    assert rx.period() == pytest.approx(3 * base)


@pytest.mark.parametrize("senders", [7, 15])
def test_sim_incast_reaches_the_link_payload_rate_with_late_wakeups(senders):
    # The incast acceptance, in the simulator at scenarios/incast.yaml's parameters,
    # with every host's timer wake-ups up to 1 ms late (the agent's loop, loaded).
    r = simexp.incast("tita", senders, 128 * 1024, count=1, wake_late_s=1e-3)
    assert r["finished"] and r["delivered_verified"] == r["messages"]
    assert r["goodput_over_payload_rate"] >= 0.95, r
    assert r["data_drops"] == 0 and r["retransmissions"] == 0, r
    assert r["peak_queue_cells"] <= simexp.BDP, r
    assert r["jain"] >= 0.99, r
    assert r["last_over_ideal"] <= 1.1, r


def test_budget_follows_the_measured_credit_round_trip_up_to_two_base_bdps():
    rx, cfg = receiver()
    base = cfg.rtt_s
    rx._rtt_sample(base)
    assert rx.budget == rx.base_budget
    for _ in range(30):
        rx._rtt_sample(1.25 * base)  # a host that also sends: its credits wait behind DATA frames
    assert rx.budget == round(1.25 * rx.base_budget)
    for _ in range(30):
        rx._rtt_sample(4 * base)  # a queue (or switches running late): the budget stops at two BDPs
    assert rx.budget == 2 * rx.base_budget
    for _ in range(60):
        rx._rtt_sample(0.5 * base)  # never below one base BDP
    assert rx.budget == rx.base_budget