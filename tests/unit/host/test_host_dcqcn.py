"""DCQCN as a baseline at its best: the pacer rules every other sender
has, and the paper's byte counter."""

from __future__ import annotations

import pytest

from testbed.simulation import simexp

from testbed.host import workloads
from testbed.host.cc.dcqcn import DcqcnSender
from testbed.host.cc.none import NoneSender
from testbed.host.config import TransportConfig


@pytest.mark.parametrize("sender", [DcqcnSender, NoneSender])
def test_a_late_driver_still_sends_at_the_flow_rate(sender):
    cfg = TransportConfig(cc="dcqcn", link_rate_bps=5e6, bdp_cells=16)
    cc = sender(cfg, 0.0)
    frame = cfg.data_wire_bytes
    late = 0.6 * cfg.cell_time_s  # every wake-up 0.6 cell times after the release it slept for
    now, sent = 0.0, 0
    while now < 2.0:
        while cc.next_send_time() <= now:
            cc.on_sent(now, frame)
            sent += 1
        now = cc.next_send_time() + late
    # Before: a strict pacer lost every late wake-up (one cell per 1.6 cell times).
    assert sent * frame * 8 / 2.0 == pytest.approx(cc.rate_bps, rel=0.01)


def test_dcqcn_alone_fills_its_link_in_the_simulator_with_late_wakeups():
    cfg = simexp.config("dcqcn")
    net = simexp.network(cfg, 2, wake_late_s=1e-3)
    net.load([workloads.MessageSpec("h2", "h1", 0, 512 * 1024)])
    net.run(30)
    (r,) = [x for x in net.records() if x["kind"] == "message_delivered"]
    goodput = r["bytes"] * 8 / ((r["delivered_us"] - r["first_cell_us"]) / 1e6)
    assert goodput >= 0.98 * simexp.RATE_BPS * cfg.cell_size / cfg.data_wire_bytes  # was 0.80


def test_byte_counter_is_the_papers_ratio_to_the_increase_timer():
    cfg = TransportConfig(cc="dcqcn", link_rate_bps=5e6, bdp_cells=16)
    cc = DcqcnSender(cfg, 0.0)
    timer_bytes = cfg.link_rate_bps / 8 * cc.t  # one increase-timer period at line rate
    # Zhu et al.: B = 10 MB at 40 Gbit/s, T = 55 us -> B is 36.4 timer periods at line rate.
    assert cc.b / timer_bytes == pytest.approx(10e6 * 8 / 40e9 / 55e-6, rel=0.01)


def test_a_cnp_overtakes_the_congested_data_queue_in_the_simulated_switch():
    from testbed.cells import wire
    from testbed.simulation.sim import SimPacket

    cfg = simexp.config("dcqcn")
    net = simexp.network(cfg, 2)
    port = next(p for p in net.ports if p.name == "leaf1->h1")
    order = []
    net.hosts["h1"].receive = lambda pkt: order.append(pkt.header()[0])
    data = wire.encode(wire.CellPacket(type=wire.DATA, flow_id=1, body=bytes(cfg.cell_size)))
    for _ in range(10):
        port.enqueue(SimPacket("h2", "h1", data, True), wire.DATA)
    cnp = wire.encode(wire.CellPacket(type=wire.CNP, flow_id=1))
    port.enqueue(SimPacket("h2", "h1", cnp, False), wire.CNP)
    net.sim.run(1.0)
    assert order[:2] == [wire.DATA, wire.CNP]  # the cell already on the wire, then the CNP
    assert len(order) == 11 and port.stats.drops == 0
