"""ACK coalescing at the receiver, the sender's RTT sample under it, and NIC pacer catch-up."""

import pytest
from conftest import BDP, make_cfg

from testbed.cells import segment, wire

from testbed.host import workloads
from testbed.host.config import ConfigError
from testbed.host.endpoint import Endpoint
from testbed.host.pacing import Pacer
from testbed.host.receiver import ReceiverFlow
from testbed.host.reliability import SendWindow
from testbed.simulation.sim import LinkSpec, star

CELL = 64


def data(psn, *, flags=0, entropy=0, msg_id=0, ncells=100):
    return wire.CellPacket(type=wire.DATA, flow_id=7, msg_id=msg_id, psn=psn, flags=flags, entropy=entropy,
                           aux=ncells * CELL, body=bytes(CELL))


def flow(n=4, **kw):
    cfg = make_cfg("none", cell_size=CELL, ack_every=n, **kw)
    return cfg, ReceiverFlow(cfg, "h1", 7)


def test_every_nth_in_order_cell_is_acknowledged():
    _, rf = flow(4)
    acks = [rf.on_data(0.001 * i, data(i, entropy=i), False)[0] for i in range(12)]
    sent = [(i, a) for i, a in enumerate(acks) if a is not None]
    assert [i for i, _ in sent] == [3, 7, 11]  # one ACK per 4 cells
    assert [a.psn for _, a in sent] == [4, 8, 12]  # cumulative: covers the cells before it
    assert [a.entropy for _, a in sent] == [3, 7, 11]  # retraces the triggering cell's path
    assert rf.acks_sent == 3 and rf.data_cells == 12 and rf.ack_deadline() is None


def test_ack_every_1_acknowledges_every_cell():
    _, rf = flow(1)
    assert all(rf.on_data(0.0, data(i), False)[0] is not None for i in range(5))


@pytest.mark.parametrize("case", ["out_of_order", "hole_filled", "ce", "last", "duplicate", "stale", "retx"])
def test_immediate_acks(case):
    _, rf = flow(4)
    assert rf.on_data(0.0, data(0), False)[0] is None  # 1 of 4: coalesced
    ce = False
    if case == "out_of_order":
        cell = data(2)
    elif case == "hole_filled":
        assert rf.on_data(0.0, data(2), False)[0] is not None  # the hole appears: immediate too
        cell = data(1)
    elif case == "ce":
        cell, ce = data(1), True
    elif case == "last":
        cell = data(1, flags=wire.FLAG_LAST, ncells=2)
    elif case == "duplicate":
        rf.on_data(0.0, data(3), False)
        cell = data(3)
    elif case == "stale":
        cell = data(0)
    else:
        cell = data(1, flags=wire.FLAG_RETX)
    ack, _ = rf.on_data(0.001, cell, ce)
    assert ack is not None and ack.type == wire.ACK
    assert ack.has(wire.FLAG_ECE) == (case == "ce")
    sack = wire.sack_decode(ack.body)
    if case == "out_of_order":
        assert (ack.psn, sack) == (1, 0b1)  # base 1, psn 2 held
    elif case == "hole_filled":
        assert (ack.psn, sack) == (3, 0)
    assert rf.ack_deadline() is None  # an immediate ACK also covers the coalesced cell


def test_delayed_ack_timer_sends_the_pending_ack():
    cfg, rf = flow(4)
    assert cfg.ack_delay_s == min(0.25 * cfg.rtt_s, 4 * cfg.cell_time_s)
    rf.on_data(1.0, data(0, entropy=5), False)
    rf.on_data(1.0 + 1e-4, data(1, entropy=6), False)
    due = rf.ack_deadline()
    assert due == pytest.approx(1.0 + cfg.ack_delay_s)  # the first unacknowledged cell's arrival + delay
    assert rf.ack_due_now(due - 1e-6) is None
    ack = rf.ack_due_now(due)
    assert (ack.psn, ack.entropy) == (2, 6) and rf.acks_delayed == 1
    assert rf.ack_deadline() is None and rf.ack_due_now(due + 1) is None
    # the count starts over after the timer's ACK
    assert [rf.on_data(2.0, data(p), False)[0] is None for p in range(2, 6)] == [True, True, True, False]


def test_endpoint_sends_the_delayed_ack_at_its_deadline():
    cfg = make_cfg("none", cell_size=CELL)
    ep = Endpoint("h2", cfg)
    framed = segment.frame(b"x" * (10 * CELL))
    cells = [wire.encode(wire.CellPacket(type=wire.DATA, flow_id=7, msg_id=0, psn=i, aux=len(framed),
                                         body=segment.cell_body(framed, i, CELL))) for i in range(6)]
    out = []
    for i, c in enumerate(cells):
        ep.receive(0.01 + i * 1e-5, "h1", c)
        out += ep.poll(0.01 + i * 1e-5)
    assert len(out) == 1  # one ACK for cells 0..3, cells 4 and 5 pending
    due = ep.next_deadline()
    assert due == pytest.approx(0.01 + 4e-5 + cfg.ack_delay_s)
    assert ep.poll(due - 1e-6) == []
    (tx,) = ep.poll(due)
    ack = wire.decode(tx.data)
    assert ack.type == wire.ACK and ack.psn == 6 and not tx.ect
    s = ep.stats()
    assert (s["data_cells_received"], s["acks_sent"], s["acks_delayed"]) == (6, 2, 1)


def test_ce_echo_and_dcqcn_cnp_are_separate():
    cfg = make_cfg("dcqcn", cell_size=CELL)
    ep = Endpoint("h2", cfg)
    framed = segment.frame(b"y" * (20 * CELL))

    def cell(i):
        return wire.encode(wire.CellPacket(type=wire.DATA, flow_id=7, msg_id=0, psn=i, aux=len(framed),
                                           body=segment.cell_body(framed, i, CELL)))

    kinds = []
    for i in range(3):  # all CE-marked: every one echoed at once, one CNP per interval
        ep.receive(1e-4 * i, "h1", cell(i), tos=0x03)
        out = ep.poll(1e-4 * i) + ep.poll(1e-4 * i + 5e-5)  # the NIC paces the second packet
        kinds.append([(wire.decode(t.data).type, wire.decode(t.data).flags) for t in out])
    assert kinds[0] == [(wire.CNP, 0), (wire.ACK, wire.FLAG_ECE)]
    assert kinds[1] == kinds[2] == [(wire.ACK, wire.FLAG_ECE)]
    assert 3e-4 < ep.rcc.interval
    ep.receive(4e-4, "h1", cell(3), tos=0x02)  # not marked: coalesced, no ECE
    assert ep.poll(4e-4) == [] and ep.receivers[("h1", 7)].ack_deadline() is not None
    assert ep.rcc.cnps_sent == 1


def test_config_rejects_bad_coalescing_values():
    with pytest.raises(ConfigError, match="ack_every"):
        make_cfg("none", ack_every=0)
    with pytest.raises(ConfigError, match="ack_every"):
        make_cfg("none", ack_every=65)
    with pytest.raises(ConfigError, match="nic_catchup"):
        make_cfg("none", nic_catchup_cells=-1)


# -- the sender's RTT sample under coalesced ACKs --------------------------------------------------

def test_rtt_sample_uses_the_newest_cell_an_ack_covers_and_never_a_resent_one():
    w = SendWindow(window=16, rto_low=5.0, rto_high=15.0, low_max_inflight=3, min_retx_gap=0.5)
    for t in (0.0, 1.0, 2.0, 3.0):
        w.take(t, 10)
    w.on_ack(4, 0, 64, now=3.5)  # one coalesced ACK for 4 cells: sample from the one sent at 3.0
    assert w.rtt_samples == 1 and w.srtt == pytest.approx(0.5)
    for t in (4.0, 4.1, 4.2):
        w.take(t, 10)  # psns 4, 5, 6
    assert w.on_nack(5.0, 6)
    assert w.take(5.0, 10) == (6, True)
    w.on_ack(7, 0, 64, now=5.2)  # covers 4, 5 and resent 6: 6 gives no sample (Karn), 5 does
    assert w.rtt_samples == 2 and w.srtt == pytest.approx(0.875 * 0.5 + 0.125 * 1.1)


# -- a whole transfer in the simulator -----------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 4])
def test_single_stream_gets_one_ack_per_n_cells(n):
    cfg = make_cfg("none", ack_every=n)
    spec = LinkSpec(rate_bps=cfg.link_rate_bps, delay_s=cfg.rtt_s / 4, buffer_cells=2 * BDP)
    net = star(2, cfg, spec)
    size = 200 * 1024
    net.load([workloads.MessageSpec("h1", "h2", 0, size)])
    net.run(5.0)
    assert net.finished()
    (rec,) = [r for r in net.records() if r["kind"] == "message_delivered"]
    assert rec["verified"]
    rx = net.hosts["h2"].ep.stats()
    cells = rx["data_cells_received"]
    assert cells == segment.cell_count(size + 4, cfg.cell_size)
    # one per n cells, plus the LAST cell's; the timer never fires in a line-rate stream
    assert rx["acks_sent"] == cells // n + (cells % n != 0) and rx["acks_delayed"] == 0
    tx = net.hosts["h1"].ep.stats()
    assert tx["retransmissions"] == 0 and tx["timeouts"] == 0
    # coalescing does not inflate the RTT estimate (the NIC's ACK queueing adds ~2 cell times)
    assert tx["srtt_ms_max"] / 1e3 < cfg.rtt_s + 3 * cfg.cell_time_s


# -- NIC pacer catch-up ---------------------------------------------------------------------------

def drive(pacer, wakes, size):
    """Wake at each time in `wakes` and send everything the pacer allows; returns send times."""
    sent = []
    for now in wakes:
        while pacer.ready(now):
            pacer.consume(now, size)
            sent.append(now)
    return sent


def test_pacer_on_time_is_strict():
    for catchup in (0.0, 2.0):
        p = Pacer(8e6, catchup_s=catchup)  # 1 byte per microsecond
        p.next_free = 10.0  # busy: no idle credit
        sent = drive(p, [10.0 + 1e-3 * i for i in range(10)], 1000)
        assert sent == pytest.approx([10.0 + 1e-3 * i for i in range(10)])


def test_pacer_catches_up_a_late_wake_within_its_bound():
    cell = 1e-3
    strict, catch = Pacer(8e6), Pacer(8e6, catchup_s=1 * cell)
    for p in (strict, catch):
        p.consume(0.0, 1000)  # sent at 0, next due at 1 ms
    late = 5.3e-3  # the loop wakes 4.3 cells late
    assert drive(strict, [late], 1000) == [late]  # strict: the lost time is gone for good
    assert drive(catch, [late], 1000) == [late, late]  # catch-up: one extra cell back to back, no more
    assert catch.next_free == pytest.approx(late + cell)  # and the schedule is not ahead of real time


def test_pacer_never_exceeds_the_rate_on_average():
    import random

    rng = random.Random(4)
    rate, size, catchup = 8e6, 1000, 2e-3  # 1 ms per packet, up to 2 ms catch-up
    p = Pacer(rate, catchup_s=catchup)
    now, wakes = 0.0, []
    while now < 2.0:
        now += rng.choice([0.2e-3, 1e-3, 3e-3, 7e-3])  # jittery, often late wake-ups
        wakes.append(now)
    sent = drive(p, wakes, size)
    per_packet = size * 8 / rate
    for i in range(len(sent)):  # any window: at most rate * T + catch-up + one packet
        for j in range(i + 1, min(len(sent), i + 50)):
            assert (j - i + 1) * per_packet <= sent[j] - sent[i] + catchup + per_packet + 1e-12
    strict = drive(Pacer(rate), wakes, size)
    assert len(sent) > 1.1 * len(strict)  # and it recovers bandwidth a strict pacer loses
    assert len(sent) * per_packet <= wakes[-1] + catchup + per_packet


def test_a_timer_ack_says_how_long_it_waited_and_the_sample_leaves_it_out():
    cfg, rf = flow(4)
    assert rf.on_data(1.0, data(0), False)[0] is None  # coalesced: waits for more cells or the timer
    late = rf.ack_due_now(1.0 + cfg.ack_delay_s)
    assert late is not None and late.aux == round(cfg.ack_delay_s * 1e6)
    assert rf.on_data(2.0, data(1, flags=wire.FLAG_LAST), False)[0].aux == 0  # sent at once: no wait
    w = SendWindow(window=16, rto_low=5.0, rto_high=15.0, low_max_inflight=3, min_retx_gap=0.5)
    w.take(0.0, 1)
    w.on_ack(1, 0, 64, now=0.1 + cfg.ack_delay_s, ack_delay=late.aux / 1e6)
    assert w.min_rtt == pytest.approx(0.1, abs=1e-6)


def test_an_idle_nic_saves_no_burst_and_a_late_cell_starts_on_schedule():
    cell = 1e-3
    p = Pacer(8e6, catchup_s=1 * cell)  # 1 byte per microsecond, 1000-byte cells
    assert p.consume(0.0, 1000) == 0.0
    p.idle(5.0)  # nothing to send for a while
    assert p.ready(5.0) and p.consume(5.0, 1000) == 5.0  # starts now, not a cell in the past
    assert not p.ready(5.0)  # so a second cell waits its turn: no burst above the link rate
    late = 5.0 + 2.5 * cell  # backlogged, the loop wakes 1.5 cells late
    assert p.consume(late, 1000) == pytest.approx(late - cell)  # on the wire as scheduled (within catch-up)


def test_endpoint_hands_out_each_cells_wire_start():
    cfg = make_cfg("none", cell_size=CELL)
    ep = Endpoint("10.1.0.2", cfg)
    ep.send_message(0.0, "10.2.0.3", 1, bytes(10 * CELL))
    first = ep.poll(0.0)
    assert [tx.start for tx in first] == [0.0]
    gap = (CELL + wire.HEADER_LEN + wire.FRAME_OVERHEAD) * 8 / cfg.link_rate_bps
    later = ep.poll(3.5 * gap)
    # 2.5 cell times late: the catch-up (one cell) puts the next cell at 2.5, not 1.0, and the
    # one after it right behind, at 3.5: never more than the link carries
    assert [round(tx.start / gap, 6) for tx in later] == [2.5, 3.5]


def test_round_trips_count_from_wire_starts_and_no_ack_leaves_before_its_cell():
    """A one-way delay of D each way: every sample is exactly 2D, although the sender woke late
    (its cells go on the wire on schedule, before the wake-up) and the receiver's NIC was idle
    for longer than the catch-up when each cell came (its ACK cannot leave before the cell)."""
    cfg = make_cfg("none", cell_size=CELL, ack_every=1)
    a, b = Endpoint("10.1.0.2", cfg), Endpoint("10.2.0.3", cfg)
    gap = (CELL + wire.HEADER_LEN + wire.FRAME_OVERHEAD) * 8 / cfg.link_rate_bps
    one_way = 10 * gap
    a.send_message(0.0, "10.2.0.3", 1, bytes(10 * CELL))
    cells = a.poll(0.0) + a.poll(3.5 * gap)  # the second wake 2.5 cell times late
    assert [round(tx.start / gap, 6) for tx in cells] == [0.0, 2.5, 3.5]
    acks = []
    for tx in cells:
        arrival = tx.start + one_way
        b.receive(arrival, "10.1.0.2", tx.data)
        (ack,) = b.poll(arrival)
        assert ack.start == arrival
        acks.append(ack)
    for ack in acks:
        a.receive(ack.start + one_way, "10.2.0.3", ack.data)
    window = a.senders["10.2.0.3"].window
    assert window.rtt_samples == 3
    assert window.min_rtt == pytest.approx(2 * one_way) and window.srtt == pytest.approx(2 * one_way)


def test_a_cell_its_ack_let_go_does_not_leave_before_that_ack():
    cfg = make_cfg("none", cell_size=CELL, ack_every=1, reorder_window_cells=2)
    a, b = Endpoint("10.1.0.2", cfg), Endpoint("10.2.0.3", cfg)
    a.send_message(0.0, "10.2.0.3", 1, bytes(4 * CELL))
    gap = (CELL + wire.HEADER_LEN + wire.FRAME_OVERHEAD) * 8 / cfg.link_rate_bps
    (first,) = a.poll(0.0)
    assert len(a.poll(gap)) == 1  # the window holds two cells: the third waits for an ACK
    b.receive(2 * gap, "10.1.0.2", first.data)
    (ack,) = b.poll(2 * gap)
    back = 5 * gap  # the sender's NIC idle since its first cell, far longer than the catch-up
    a.receive(back, "10.2.0.3", ack.data)
    (second,) = a.poll(back)
    assert second.start == back


def test_what_a_cell_read_late_triggers_starts_from_its_arrival():
    """The agent passes the kernel's receive time: an ACK may start (within the catch-up) when its
    cell reached the host, not only when the loop read it; without it, when it was read."""
    cfg = make_cfg("none", cell_size=CELL, ack_every=1)
    gap = (CELL + wire.HEADER_LEN + wire.FRAME_OVERHEAD) * 8 / cfg.link_rate_bps
    a = Endpoint("10.1.0.2", cfg)
    a.send_message(0.0, "10.2.0.3", 1, bytes(CELL))
    (cell,) = a.poll(0.0)
    for arrived, start in ((1.0, 1.0), (None, 1.0 + 0.5 * gap)):
        b = Endpoint("10.2.0.3", cfg)
        b.receive(1.0 + 0.5 * gap, "10.1.0.2", cell.data, arrived=arrived)  # read half a cell late
        (ack,) = b.poll(1.0 + 0.5 * gap)
        assert ack.start == pytest.approx(start)


def test_a_credits_data_cell_counts_its_round_trip_from_its_wire_start():
    cfg = make_cfg("tita", cell_size=CELL, ack_every=1)
    gap = (CELL + wire.HEADER_LEN + wire.FRAME_OVERHEAD) * 8 / cfg.link_rate_bps
    a, b = Endpoint("10.1.0.2", cfg), Endpoint("10.2.0.3", cfg)
    a.send_message(0.0, "10.2.0.3", 1, bytes(CELL))
    a.poll(0.0)  # its credit request
    flow = a.senders["10.2.0.3"]
    credit = wire.CellPacket(type=wire.CREDIT, flow_id=flow.flow_id, credit_seq=1)
    a.receive(1.0 + 0.5 * gap, "10.2.0.3", wire.encode(credit), arrived=1.0)
    (data,) = a.poll(1.0 + 0.5 * gap)
    assert data.start == pytest.approx(1.0)  # from the credit's arrival, by the catch-up
    b.receive(1.0 + 5 * gap, "10.1.0.2", data.data)
    (ack,) = b.poll(1.0 + 5 * gap)
    a.receive(1.0 + 10 * gap, "10.2.0.3", ack.data)
    assert flow.window.min_rtt == pytest.approx(10 * gap)  # from its wire start, not its build
