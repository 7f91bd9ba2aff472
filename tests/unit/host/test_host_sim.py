"""Each transport claim, measured in the deterministic simulated network."""

import pytest
from conftest import BDP, make_cfg, star_link

from testbed.host import records, workloads
from testbed.simulation.sim import LinkSpec, leaf_spine, star


def run_incast(cc: str, n: int = 8, size: int = 64 * 1024):
    cfg = make_cfg(cc)
    net = star(n + 1, cfg, star_link(cfg, buffer_bdp=2.0))
    wl = workloads.incast([f"h{i}" for i in range(1, n + 1)], f"h{n + 1}", size)
    net.load(wl, seed=3)
    net.run(5.0)
    return net, wl


def delivered_ok(net, wl):
    got = [r for r in net.records() if r["kind"] == "message_delivered"]
    return len(got) == len(wl) and all(r["verified"] for r in got)


def test_tita_incast_8_to_1_loses_nothing_and_keeps_queues_short():
    net, wl = run_incast("tita")
    assert net.finished() and delivered_ok(net, wl)
    assert net.drops() == 0
    assert net.max_queue_cells() <= 2  # "a couple of cells", far below 2 BDP = 32
    rx = net.hosts["h9"].ep.stats()
    # the budget follows the measured credit round trip, up to two base BDPs
    assert rx["retransmissions"] == 0 and rx["peak_outstanding_credits"] <= 2 * BDP
    # Receiver link busy most of the time: 8 x 64 KiB at 100 Mbit/s is 45.6 ms of data.
    fct = max(r["delivered_us"] for r in net.records() if r["kind"] == "message_delivered")
    assert fct < 1.25 * 8 * 65 * make_cfg("tita").cell_time_s * 1e6


def test_none_incast_overflows_the_buffer_but_still_delivers():
    net, wl = run_incast("none")
    assert net.drops() > 0
    assert net.max_queue_cells() >= 2 * BDP  # the 2-BDP buffer filled up
    assert sum(h.ep.stats()["retransmissions"] for h in net.hosts.values()) > 0
    assert net.finished() and delivered_ok(net, wl)  # reliability repairs the losses


def test_dcqcn_two_flows_converge_to_fair_shares():
    cfg = make_cfg("dcqcn")
    net = star(3, cfg, star_link(cfg, buffer_bdp=8.0))
    late = 20_000  # second flow joins after 20 ms
    wl = workloads.combine([workloads.MessageSpec("h1", "h3", 0, 3_000_000)],
                           [workloads.MessageSpec("h2", "h3", 0, 3_000_000, start_us=late)])
    net.load(wl)
    h3 = net.hosts["h3"]
    snaps = {}
    for t in (0.15, 0.35):
        net.sim.at(t, lambda t=t: snaps.__setitem__(t, dict(h3.rx_data_bytes)))
    net.run(3.0)
    rates = {h: (snaps[0.35][h] - snaps[0.15][h]) * 8 / 0.2 for h in ("h1", "h2")}
    assert min(rates.values()) / max(rates.values()) > 0.8, rates
    assert sum(rates.values()) > 0.7 * cfg.link_rate_bps  # converged, not collapsed
    senders = [net.hosts[h].ep.senders["h3"].cc for h in ("h1", "h2")]
    assert all(cc.cnps > 0 for cc in senders)
    assert h3.ep.rcc.cnps_sent == sum(cc.cnps for cc in senders)
    assert net.drops() == 0 and net.finished()


def test_tita_credit_limiting_protects_a_congested_core_link():
    # 4 flows cross one leaf-spine link (4:1 oversubscribed core), no last-hop conflict.
    results = {}
    for cc in ("tita", "none"):
        cfg = make_cfg(cc)
        spec = LinkSpec(rate_bps=cfg.link_rate_bps, delay_s=cfg.rtt_s / 8, buffer_cells=2 * BDP,
                        ecn=None)
        net = leaf_spine(2, 1, 4, cfg, spec)
        wl = [workloads.MessageSpec(f"h{i}", f"h{i + 4}", 0, 96 * 1024) for i in range(1, 5)]
        net.load(wl)
        net.run(5.0)
        assert net.finished() and delivered_ok(net, wl)
        core = [p for p in net.ports if p.name == "leaf1->spine1"][0]
        results[cc] = (net.drops(), core.stats.max_queue_bytes / cfg.data_wire_bytes,
                       sum(p.stats.credit_drops for p in net.ports))
    drops, core_queue, credit_drops = results["tita"]
    assert drops == 0 and core_queue <= 4 and credit_drops > 0  # switches dropped credits, not data
    assert results["none"][0] > 0


def test_sprayed_cells_over_skewed_paths_are_reordered_then_delivered_in_order():
    cfg = make_cfg("none")
    spec = LinkSpec(rate_bps=cfg.link_rate_bps, delay_s=50e-6, buffer_cells=4 * BDP)
    net = leaf_spine(2, 4, 1, cfg, spec, spine_delays_s=[50e-6, 150e-6, 250e-6, 350e-6])
    wl = workloads.combine([workloads.MessageSpec("h1", "h2", 0, 200 * 1024)],
                           [workloads.MessageSpec("h1", "h2", 0, 50 * 1024)])
    net.load(wl)
    net.run(5.0)
    got = [r for r in net.records() if r["kind"] == "message_delivered"]
    assert [r["msg_id"] for r in got] == [0, 1] and all(r["verified"] for r in got)
    first = got[0]
    assert first["cells_out_of_order"] > 0 and first["max_ooo_distance_cells"] >= 2
    assert first["peak_reorder_buffer_cells"] >= 2 and first["window_overflows"] == 0
    assert net.hosts["h1"].ep.stats()["retransmissions"] == 0  # reordering is not loss


def test_flow_hash_ecmp_does_not_reorder():
    cfg = make_cfg("none")
    spec = LinkSpec(rate_bps=cfg.link_rate_bps, delay_s=50e-6, buffer_cells=4 * BDP)
    net = leaf_spine(2, 4, 1, cfg, spec, spine_delays_s=[50e-6, 150e-6, 250e-6, 350e-6],
                     load_balancing="ecmp")
    net.load([workloads.MessageSpec("h1", "h2", 0, 200 * 1024)])
    net.run(5.0)
    (rec,) = [r for r in net.records() if r["kind"] == "message_delivered"]
    assert rec["verified"] and rec["cells_out_of_order"] == 0


@pytest.mark.parametrize("cc", ["tita", "dcqcn", "none"])
def test_ring_allreduce_completes_with_dependent_steps(cc):
    cfg = make_cfg(cc)
    net = star(4, cfg, star_link(cfg, buffer_bdp=2.0))
    hosts = [f"h{i}" for i in range(1, 5)]
    size = 256 * 1024
    wl = workloads.ring_allreduce(hosts, size)
    net.load(wl)
    net.run(10.0)
    recs = net.records()
    summary = records.summarize(wl, recs)["allreduce"]
    assert summary["delivered"] == summary["messages"] == 4 * 6
    # Steps are dependent: each rank's step s starts after it received step s-1.
    delivered = {(r["src"], r["dst"], r["msg_id"]): r["delivered_us"] for r in recs
                 if r["kind"] == "message_delivered"}
    started = {(r["src"], r["dst"], r["msg_id"]): r["start_us"] for r in recs if r["kind"] == "message_sent"}
    for i, h in enumerate(hosts):
        prev, nxt = hosts[i - 1], hosts[(i + 1) % 4]
        for step in range(1, 6):
            assert started[(h, nxt, step)] >= delivered[(prev, h, step - 1)]
    # Bus bandwidth cannot exceed the link; ring all-reduce on a star should reach a good share.
    assert 0.3 * cfg.link_rate_bps < summary["busbw_bps"] <= cfg.link_rate_bps


@pytest.mark.parametrize("ecn, never_up_to, always_from", [((10, 10, 1.0), 9, 10),   # step K=10: q >= K
                                                          ((10, 30, 0.0), 29, 30),   # RED, Pmax 0: from Kmax
                                                          ((10, 30, 1.0), 10, 30)])  # RED: never up to Kmin
def test_the_simulators_ecn_thresholds_are_fabric_p4s(ecn, never_up_to, always_from):
    """q = cells queued ahead of the arriving one, as enq_qdepth in fabric.p4's egress (and its
    test_red_extremes_with_driven_queue_depth): step marks from K on, RED always from Kmax on and
    never up to Kmin."""
    from testbed.cells import wire
    from testbed.simulation.sim import Network, SimPacket

    cfg = make_cfg("dcqcn")
    net = Network(cfg, seed=1)
    sw, h = net.switch("s1"), net.host("h1")
    port, _ = net.link(sw, h, LinkSpec(rate_bps=1e6, delay_s=1e-3, buffer_cells=100, ecn=ecn))
    packets = [SimPacket("h0", "h1", bytes(64), ect=True) for _ in range(45)]
    for pkt in packets:
        port.enqueue(pkt, wire.DATA)
    # the first starts on the wire at once; the k-th after it finds k - 1 queued ahead
    ce = [packets[q + 1].ce for q in range(44)]
    assert not any(ce[:never_up_to + 1]) and all(ce[always_from:])
