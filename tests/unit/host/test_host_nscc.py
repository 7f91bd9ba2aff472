"""NSCC's window rules (testbed/host/cc/nscc.py against UEC's htsim model), one by one, on the
sans-IO sender; then the same sender in the transport and in the simulator."""

from __future__ import annotations

import pytest

from testbed.simulation import simexp

from testbed.host import workloads

from testbed.cells import wire
from testbed.host.cc import make_sender_cc
from testbed.host.cc.nscc import NsccSender
from testbed.host.config import NsccParams, TransportConfig

RTT = 0.027
BDP = 16


def cfg(**nscc) -> TransportConfig:
    return TransportConfig(cc="nscc", link_rate_bps=5e6, bdp_cells=BDP, base_rtt_s=RTT,
                           nscc=NsccParams(**nscc))


def sender(**nscc) -> NsccSender:
    cc = NsccSender(cfg(**nscc), 0.0)
    assert cc.target == pytest.approx(RTT)  # 1.0 base RTT: no trimming
    return cc


def ack(cc: NsccSender, now: float, qdelay: float, ece: bool, cells: int = 1, sent: float | None = None) -> None:
    """An ACK of `cells` whose newest cell saw `qdelay` of queueing (round trip RTT + qdelay)."""
    rtt = RTT + qdelay
    cc.on_ack(now, cells, now - rtt if sent is None else sent, rtt, ece)


def test_registered_and_defaults_from_reference():
    cc = make_sender_cc(cfg(), 0.0)
    assert isinstance(cc, NsccSender)
    assert cc.max_wnd == pytest.approx(1.5 * BDP)
    assert cc.window_cells == pytest.approx(BDP)  # starts at 1 BDP
    assert cc.ewma == 0.0125 and cc.md_gain == 0.8 and cc.md_floor == 0.5
    assert cc.qa_threshold == pytest.approx(4 * RTT)
    p = NsccParams()
    assert p.target_qdelay_rtt == 1.0 and p.max_wnd_bdp == 1.5 and p.quick_adapt_x_target == 4.0


def test_low_delay_with_ecn_changes_nothing():
    cc = sender(initial_wnd_bdp=0.5)
    for i in range(50):
        ack(cc, 1.0 + i * 1e-3, 0.5 * RTT, ece=True)
    assert cc.cwnd == pytest.approx(8.0)
    assert cc.unchanged_ecn == 50 and cc.decreases == 0


def test_low_delay_without_ecn_grows_in_proportion_to_the_headroom():
    grown = {}
    for frac in (0.0, 0.5, 0.9):
        cc = sender(initial_wnd_bdp=0.5)
        ack(cc, 1.0, frac * RTT, ece=False, cells=4)
        grown[frac] = cc.cwnd - 8.0
    # pi_bdp 0.1 x BDP 16 = 1.6 cells per RTT at zero delay; 4 of the window's 8 cells
    # acknowledged is half an RTT's worth
    assert grown[0.0] == pytest.approx(1.6 * 4 / 8)
    assert grown[0.5] == pytest.approx(grown[0.0] * 0.5)
    assert grown[0.9] == pytest.approx(grown[0.0] * 0.1)


def test_increase_is_additive_per_rtt_whatever_the_window():
    per_rtt = []
    for w in (0.25, 1.0):
        cc = sender(initial_wnd_bdp=w)
        start = cc.cwnd
        for i in range(int(start)):  # one window of ACKs, one cell each
            ack(cc, 1.0 + i * 1e-4, 0.0, ece=False)
        per_rtt.append(cc.cwnd - start)
    assert per_rtt[0] == pytest.approx(per_rtt[1], rel=0.1)  # AIMD: equal steps converge


def test_high_delay_with_ecn_decreases_by_the_formula():
    cc = sender()
    cc.avg_delay = 2.0 * RTT  # the average, not the sample, sets the depth of the cut
    ack(cc, 1.0, 1.2 * RTT, ece=True)
    avg = cc.avg_delay
    assert avg == pytest.approx(2.0 * RTT + 0.0125 * (1.2 - 2.0) * RTT)  # the sample is in it
    assert cc.cwnd == pytest.approx(16 * (1 - 0.8 * (avg - RTT) / avg))  # 16 x 0.6
    assert cc.cwnd == pytest.approx(9.63, abs=0.01)  # the sample's own factor would give 13.9
    assert cc.decreases == 1


def test_decrease_never_below_half():
    cc = sender()
    cc.avg_delay = 3.5 * RTT  # 1 - 0.8 x 2.5/3.5 = 0.43 -> floored at 0.5
    ack(cc, 1.0, 3.5 * RTT, ece=True)
    assert cc.cwnd == pytest.approx(8.0)


def test_decrease_at_most_once_per_rtt():
    cc = sender()
    cc.avg_delay = 2.0 * RTT
    ack(cc, 1.0, 2.0 * RTT, ece=True)
    after_first = cc.cwnd
    # ACKs of cells sent before the cut: they cannot show its effect
    for i in range(20):
        ack(cc, 1.0 + i * 1e-3, 2.0 * RTT, ece=True, sent=0.99)
    assert cc.cwnd == after_first and cc.decreases == 1
    # the first ACK of a cell sent after the cut may cut again
    ack(cc, 1.1, 2.0 * RTT, ece=True, sent=1.001)
    assert cc.decreases == 2 and cc.cwnd < after_first


def test_no_decrease_while_the_average_is_under_the_target():
    cc = sender()
    cc.avg_delay = 0.2 * RTT
    ack(cc, 1.0, 1.5 * RTT, ece=True)
    assert cc.cwnd == pytest.approx(16.0) and cc.decreases == 0


def test_high_delay_without_ecn_is_a_small_fair_increase():
    cc = sender(initial_wnd_bdp=0.5)
    for i in range(8):  # one window
        ack(cc, 1.0 + i * 1e-3, 2.0 * RTT, ece=False)
    assert cc.fair == 8 and cc.decreases == 0
    # fi_bdp 0.02 x 16 = 0.32 cells per RTT, about (8 ACKs x 0.32/W with W growing from 8)
    assert 0.3 < cc.cwnd - 8.0 < 0.33


def test_window_never_above_maxwnd_nor_below_minimum():
    cc = sender()
    for i in range(2000):
        ack(cc, 1.0 + i * 1e-4, 0.0, ece=False, cells=4)
    assert cc.cwnd == pytest.approx(24.0)  # 1.5 BDP
    cc.avg_delay = 10 * RTT
    t = 2.0
    for _ in range(30):
        t += 0.1
        ack(cc, t, 2.0 * RTT, ece=True, sent=t - 3 * RTT)
    assert cc.cwnd == pytest.approx(1.0)


def test_delay_average_is_an_ewma_of_gain_0_0125():
    cc = sender()
    ack(cc, 1.0, 0.0, ece=False)
    assert cc.avg_delay == pytest.approx(0.0)
    ack(cc, 1.001, 0.8 * RTT, ece=False)
    assert cc.avg_delay == pytest.approx(0.0125 * 0.8 * RTT)
    for i in range(400):
        ack(cc, 1.01 + i * 1e-4, 0.8 * RTT, ece=False)
    assert cc.avg_delay == pytest.approx(0.8 * RTT * (1 - 0.9875 ** 401), rel=1e-6)


def test_delay_is_measured_from_the_smallest_round_trip():
    cc = sender()
    cc.on_ack(1.0, 1, 1.0 - 0.02, 0.02, False)  # shorter than the configured base RTT
    assert cc.base_rtt == pytest.approx(0.02)
    cc.on_ack(1.1, 1, 1.1 - 0.03, 0.03, False)
    assert cc.avg_delay == pytest.approx(0.0125 * 0.01)


def test_quick_adapt_at_four_targets_sets_the_window_to_what_was_acknowledged():
    cc = sender()
    for i in range(5):  # 5 cells acknowledged over the last base RTT
        ack(cc, 1.0 + i * 0.004, 0.5 * RTT, ece=False)
    before = cc.cwnd
    ack(cc, 1.02, 3.9 * RTT, ece=True)  # below 4x target: an ordinary decrease at most
    assert cc.quick_adapts == 0
    ack(cc, 1.021, 4.1 * RTT, ece=False)
    assert cc.quick_adapts == 1
    assert cc.cwnd == pytest.approx(7.0)  # the 5 + 1 + 1 cells acknowledged in the last RTT
    assert cc.cwnd < before
    # once per RTT: another sample as high does nothing
    ack(cc, 1.03, 4.5 * RTT, ece=False)
    assert cc.quick_adapts == 1


def test_quick_adapt_on_loss():
    cc = sender()
    ack(cc, 1.0, 0.0, ece=False, cells=3)
    ack(cc, 1.0 + 2 * RTT, 0.0, ece=False, cells=2)  # the 3 are older than a base RTT now
    cc.on_loss(1.0 + 2 * RTT + 0.001)
    assert cc.quick_adapts == 1 and cc.cwnd == pytest.approx(2.0)
    cc.on_loss(1.0 + 2 * RTT + 0.002)  # the same round: no second one
    assert cc.quick_adapts == 1


def test_a_timeout_is_no_quick_adapt():
    cc = sender()
    ack(cc, 1.0, 0.0, ece=False, cells=3)
    cc.on_loss(1.0 + 6 * RTT, timeout=True)  # nothing acknowledged for an RTO: no measure of the path
    assert cc.quick_adapts == 0 and cc.cwnd > 16


def test_an_ack_without_a_sample_only_counts_cells():
    cc = sender()
    cc.on_ack(1.0, 4, None, None, True)
    assert cc.cwnd == pytest.approx(16.0) and cc.avg_delay is None


def test_the_flow_never_has_more_cells_in_flight_than_its_window():
    from testbed.host.sender import SenderFlow

    c = cfg(initial_wnd_bdp=0.25)  # 4 cells
    flow = SenderFlow(c, "h2", 1, 0.0)
    flow.enqueue(0.0, 0, bytes(64 * c.cell_size))
    sent = 0
    while flow.sendable():
        assert flow.build(0.0) is not None
        sent += 1
    assert sent == 4
    ackc = wire.CellPacket(type=wire.ACK, flow_id=1, psn=2, body=wire.sack_encode(0))
    flow.on_ack(RTT, ackc)  # 2 cells acknowledged, zero queueing: the window grows a little
    assert flow.window.inflight() == 2 and flow.cc.cwnd > 4
    n = 0
    while flow.sendable():
        flow.build(RTT)
        n += 1
    assert n == 3  # 2 freed + the growth rounded down to whole cells (4.2 -> 5 in flight)


def test_the_acks_ece_reaches_the_window():
    from testbed.host.sender import SenderFlow

    c = cfg()
    flow = SenderFlow(c, "h2", 1, 0.0)
    flow.enqueue(0.0, 0, bytes(8 * c.cell_size))
    while flow.sendable():
        flow.build(0.0)
    flow.cc.avg_delay = 2 * RTT
    marked = wire.CellPacket(type=wire.ACK, flow_id=1, psn=1, flags=wire.FLAG_ECE, body=wire.sack_encode(0))
    flow.on_ack(3 * RTT, marked)  # 2 RTT of queueing, CE echoed: cut
    assert flow.cc.decreases == 1


def test_nscc_incast_in_the_simulator_keeps_the_queue_and_the_link():
    """7:1 incast of scenarios/incast.yaml: a broken window (no cut, no cap, no quick adapt)
    overflows the 2-BDP buffers all the time (cc none: 1,877 drops) or starves the link."""
    r = simexp.incast("nscc", 7, count=3)
    assert r["finished"] and r["delivered_verified"] == 21
    assert r["goodput_over_payload_rate"] >= 0.93, r
    # the initial windows (1 BDP each, 7 BDP into a 2-BDP buffer) lose cells in the first
    # RTTs; none after that
    assert r["data_drops"] <= 100, r
    assert r["jain"] >= 0.98, r
    assert r["last_over_ideal"] <= 1.05, r


def test_nscc_drops_only_in_the_first_rtts_of_an_incast():
    from testbed.simulation.sim import Port

    cfg_ = simexp.config("nscc")
    net = simexp.network(cfg_, 8)
    names = [f"h{i}" for i in range(2, 9)]
    net.load(workloads.incast(names[1:] + names[:1], "h1", 128 * 1024, messages_per_sender=3), seed=1)
    times: list[float] = []
    ports = [p for p in net.ports if isinstance(p, Port)]
    seen = {id(p): 0 for p in ports}
    t = 0.0
    while t < 6 and not net.finished():
        t += 0.05
        net.run(t)
        for p in ports:
            if p.stats.drops > seen[id(p)]:
                times.append(t)
                seen[id(p)] = p.stats.drops
    assert net.finished()
    assert times and max(times) <= 10 * cfg_.rtt_s, times  # after the first ten RTTs, no loss
    windows = [f.cc for h in names for f in net.hosts[h].ep.senders.values()]
    assert all(c.quick_adapts >= 1 for c in windows)  # the start's losses cut every window
    assert max(c.max_cwnd for c in windows) <= 1.5 * BDP + 1e-9


def _deep_buffer_incast(**nscc):
    """7:1 incast of 512 KiB per sender into buffers of 12 BDPs (nothing is lost), every
    window starting at maxwnd: 7 x 24 cells against a 16-cell path, a standing queue of
    about 150 cells (9 RTTs of delay). Returns the receiver port's queue every 0.25 s
    and the senders' CCs."""
    from testbed.simulation.sim import LinkSpec, leaf_spine

    c = simexp.config("nscc", nscc=NsccParams(initial_wnd_bdp=1.5, **nscc))
    spec = LinkSpec(rate_bps=simexp.RATE_BPS, delay_s=simexp.DELAY_S, buffer_cells=12 * BDP,
                    ecn=(0.2 * BDP, 1.0 * BDP, 0.2), credit_limit=False)
    net = leaf_spine(4, 2, 2, c, spec, seed=1)
    names = [f"h{i}" for i in range(2, 9)]
    net.load(workloads.incast(names[1:] + names[:1], "h1", 512 * 1024), seed=1)
    port = next(p for p in net.ports if p.name == "leaf1->h1")
    queue, t = [], 0.0
    while t < 20 and not net.finished():
        t += 0.25
        net.run(t)
        queue.append((t, len(port.data_q)))
    assert net.finished() and net.drops() == 0
    return queue, [f.cc for h in names for f in net.hosts[h].ep.senders.values()]


def test_the_decrease_alone_brings_a_standing_queue_back_to_the_target():
    # quick adapt out of reach: only the multiplicative decrease can drain the queue
    queue, ccs = _deep_buffer_incast(quick_adapt_x_target=1000.0)
    assert queue[0][1] > 8 * BDP  # the start's standing queue
    after = [q for t, q in queue if t >= 1.5]
    assert after and max(after) <= 1.25 * BDP, queue  # held near the 1-RTT target (without cuts: 153)
    assert all(c.decreases >= 10 for c in ccs) and all(c.quick_adapts == 0 for c in ccs)


def test_quick_adapt_drains_a_queue_of_more_than_four_targets_at_once():
    queue, ccs = _deep_buffer_incast()
    assert all(c.quick_adapts >= 1 for c in ccs)
    assert queue[1][1] <= 0.5 * BDP, queue  # 0.5 s (18 RTTs) in; the decrease alone needs about 1 s
    assert max(q for t, q in queue if t >= 0.5) <= 1.25 * BDP, queue
