"""Reorder buffer and sender reliability in isolation (explicit `now`)."""

import pytest

from testbed.host.reliability import SendWindow
from testbed.host.reorder import ReorderBuffer, Verdict


def test_reorder_buffer_orders_and_measures():
    buf = ReorderBuffer(window=8)
    assert buf.offer(2, "c")[0] is Verdict.ACCEPTED
    assert buf.offer(1, "b") == (Verdict.ACCEPTED, 1)
    assert buf.pop_ready() == []
    assert buf.sack_bits(64) == 0b11  # psn 1 and 2 held above base 0
    buf.offer(0, "a")
    assert [x for _, x in buf.pop_ready()] == ["a", "b", "c"]
    assert buf.offer(1, "b")[0] is Verdict.STALE
    assert buf.offer(3 + 8, "far")[0] is Verdict.OVERFLOW
    buf.offer(5, "f")
    assert buf.offer(5, "f")[0] is Verdict.DUPLICATE
    assert buf.holes(10) == [3, 4]
    s = buf.stats
    assert (s.cells_out_of_order, s.max_ooo_distance_cells, s.peak_occupancy_cells) == (3, 2, 3)
    assert (s.window_overflows, s.duplicates, s.stale) == (1, 1, 1)


def _window():
    return SendWindow(window=8, rto_low=5.0, rto_high=15.0, low_max_inflight=3, min_retx_gap=0.5)


def test_cumulative_and_selective_acks():
    w = _window()
    sent = [w.take(0.0, end_psn=10) for _ in range(10)]
    assert [s[0] for s in sent[:8]] == list(range(8)) and sent[8] is None  # window of 8
    assert sorted(w.on_ack(2, 0b101, 64)) == [0, 1, 3, 5]
    assert w.base == 2 and w.inflight() == 4
    assert w.on_ack(99, 0, 64) is None and w.bogus_acks == 1  # acks beyond what was sent


def test_nack_and_two_level_rto():
    w = _window()
    for _ in range(6):
        w.take(0.0, 6)
    assert w.rto() == 15.0  # many cells in flight: high RTO
    assert w.deadline() == 15.0
    assert w.on_nack(1.0, 2) and not w.on_nack(1.0, 2)  # queued once
    assert w.take(1.0, 6) == (2, True)
    assert not w.on_nack(1.2, 2)  # just resent: a NACK within min_retx_gap is ignored
    w.on_ack(4, 0b1, 64)  # 0..3 and 5 acked: only psn 4 in flight
    assert w.inflight() == 1 and w.rto() == 5.0
    assert w.on_timer(4.9) == 0
    assert w.on_timer(5.0) == 1 and w.take(5.0, 6) == (4, True)
    assert w.retransmissions == 2 and w.timeouts == 1


def test_rto_floored_by_measured_rtt():
    w = _window()
    for _ in range(3):
        w.take(0.0, 8)
    assert w.rto() == 5.0  # no sample yet: the configured low level
    w.on_ack(1, 0, 64, now=4.0)  # psn 0 acked 4 s after it was sent: srtt 4, rttvar 2
    assert (w.srtt, w.rttvar) == (4.0, 2.0)
    assert w.rto() == 12.0  # 2 in flight: low level 5 < srtt + 4 rttvar
    assert not w.on_nack(3.5, 1)  # sent less than one srtt ago: not yet known lost
    assert w.on_nack(4.5, 1)
    assert w.take(4.5, 8) == (1, True)
    w.on_ack(3, 0, 64, now=9.0)  # psn 1 was resent (Karn): psn 2 gives the sample, 9 s
    assert w.rtt_samples == 2 and w.srtt == 0.875 * 4.0 + 0.125 * 9.0


def test_dcqcn_counts_rate_cuts():
    from testbed.host.cc.dcqcn import DcqcnSender
    from testbed.host.config import TransportConfig

    cc = DcqcnSender(TransportConfig(cc="dcqcn", link_rate_bps=10e6), 0.0)
    cc.on_cnp(0.001)
    assert cc.rate_cuts == 1 and cc.min_rc == cc.rc == 5e6  # alpha 1: Rc halves
    cc.rc = cc.min_rate
    cc.on_cnp(0.002)
    assert cc.cnps == 2 and cc.rate_cuts == 1  # at the floor a CNP cuts nothing


def test_scenario_transport_section_reaches_the_agent_config():
    from testbed.host.config import ConfigError, TransportConfig

    cfg = TransportConfig(cc="dcqcn", bdp_cells=16).with_scenario({
        "rto_low_rtt": 4, "rto_high_rtt": 12,
        "tita": {"max_outstanding_bdp": 1.5, "initial_w": 0.125, "target_loss_factor": 0.1},
        "dcqcn": {"g": 0.5, "r_ai_fraction": 0.01, "hyper_factor": 5, "timer_rtt": 3,
                  "byte_counter_bytes": 16 * cfg_bytes(), "cnp_interval_rtt": 2, "fast_recovery_steps": 3}})
    assert (cfg.rto_low_rtt, cfg.rto_high_rtt) == (4.0, 12.0)
    assert (cfg.tita.outstanding_bdp, cfg.tita.initial_w, cfg.tita.target_loss_factor) == (1.5, 0.125, 0.1)
    d = cfg.dcqcn
    assert (d.g, d.rate_ai_fraction, d.hai_factor, d.alpha_timer_rtt, d.increase_timer_rtt) == (0.5, 0.01, 5, 3, 3)
    assert (d.byte_counter_bdp, d.cnp_interval_rtt, d.fast_recovery_steps) == (1.0, 2, 3)
    with pytest.raises(ConfigError):
        TransportConfig().with_scenario({"rto_low_rtt": 9, "rto_high_rtt": 3})


def cfg_bytes():
    from testbed.host.config import TransportConfig

    return TransportConfig().data_wire_bytes
