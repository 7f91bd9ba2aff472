"""Data-carrying collectives: schedules are proved, bytes are checked, corruption is caught."""

import numpy as np
import pytest

from testbed.host import collectives as c
from testbed.simulation import sim
from testbed.host.config import TransportConfig
from testbed.topo import build_topology

HOSTS = [f"h{i}" for i in range(1, 9)]
CASES = [("all_reduce", "ring"), ("all_reduce", "tree"), ("all_gather", "ring"),
         ("reduce_scatter", "ring"), ("all_to_all", "direct")]


@pytest.mark.parametrize("op, algorithm", CASES)
@pytest.mark.parametrize("channels, chunk", [(1, 0), (2, 96), (3, 40)])
def test_every_schedule_leaves_every_rank_with_its_data(op, algorithm, channels, chunk):
    msgs = c.schedule("x", HOSTS, c.Params(op, algorithm, 1000, channels, chunk))
    c.check_result(msgs, op, len(HOSTS), 1000)


def test_hierarchical_schedule_and_its_traffic_split():
    servers = [[0, 1, 2, 3], [4, 5, 6, 7]]
    msgs = c.schedule("x", HOSTS, c.Params("all_reduce", "hierarchical", 4096, 2, 256), servers=servers)
    c.check_result(msgs, "all_reduce", 8, 4096)
    cross = [m for m in msgs if (m.src_rank < 4) != (m.dst_rank < 4)]
    # cross-server traffic only between GPUs of one rail
    assert cross and all(m.src_rank % 4 == m.dst_rank % 4 for m in cross)


def test_the_proof_catches_a_broken_schedule():
    msgs = c.schedule("x", HOSTS, c.Params("all_reduce", "ring", 1000))
    with pytest.raises(c.CollectiveError):
        c.check_result(msgs[:-1], "all_reduce", 8, 1000)  # one all-gather step missing
    with pytest.raises(c.CollectiveError):
        c.check_result([m for m in msgs if m.op == "reduce"], "all_reduce", 8, 1000)


def test_inputs_are_deterministic_sliceable_and_distinct():
    whole = c.input_bytes(1, "x", 3, 0, 1000)
    assert np.array_equal(c.input_bytes(1, "x", 3, 13, 101), whole[13:114])
    assert not np.array_equal(c.input_bytes(1, "x", 4, 0, 1000), whole)
    assert not np.array_equal(c.input_bytes(2, "x", 3, 0, 1000), whole)


def _net():
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    return sim.leaf_spine(2, 2, 4, cfg, sim.LinkSpec(20e6, 1000e-6, 46))


@pytest.mark.parametrize("op, algorithm", CASES)
def test_collectives_complete_and_verify_on_the_simulator(op, algorithm):
    net = _net()
    msgs = c.sequence("x", HOSTS, [c.Params(op, algorithm, 40_000, 2, 4096), c.Params(op, algorithm, 9_000)])
    net.load(msgs)
    net.run(60)
    assert net.finished()
    recs = net.records()
    done = [r for r in recs if r["kind"] == "collective_done"]
    assert len(done) == 2 * len(HOSTS) and all(r["verified"] for r in done)
    assert all(r["verified"] for r in recs if r["kind"] == "message_delivered")
    assert {r["collective"] for r in done} == {"x@40000B#0", "x@9000B#0"}


class _Corrupting:
    """A runner's transport that flips the first byte of the first copy message handed to it (the
    runner takes any transport; its class may be compiled, so its methods are not patched)."""

    def __init__(self, runner, hit: list) -> None:
        self.runner, self.ep, self.hit = runner, runner.ep, hit

    def __getattr__(self, name):
        return getattr(self.ep, name)

    def send_message(self, now, dst, msg_id, payload, channel=0):
        spec = self.runner.by_key[(dst, msg_id)]
        if not self.hit and spec.op == "copy":
            self.hit.append(spec)
            payload = bytes([payload[0] ^ 1]) + payload[1:]
        return self.ep.send_message(now, dst, msg_id, payload, channel)


def test_a_corrupted_byte_fails_the_message_and_the_result():
    hit = []
    net = _net()
    net.load(c.schedule("x", HOSTS, c.Params("all_reduce", "ring", 8000)))
    runner = net.hosts["h3"].runner
    runner.ep = _Corrupting(runner, hit)
    net.run(60)
    recs = net.records()
    bad = [r for r in recs if r["kind"] == "message_delivered" and not r["verified"]]
    # the corrupted message fails its check, and so does everything downstream that forwards it
    assert hit and (hit[0].src, hit[0].msg_id) in [(r["src"], r["msg_id"]) for r in bad]
    assert min(bad, key=lambda r: r["delivered_us"])["src"] == "h3"
    failed = [r["host"] for r in recs if r["kind"] == "collective_done" and not r["verified"]]
    assert hit[0].dst in failed


def test_local_channel_carries_same_server_traffic():
    topo = build_topology({"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                           "gpus_per_server": 2, "rail_optimised": True})
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    spec = sim.LinkSpec(20e6, 1000e-6, 46)
    local = sim.LinkSpec(160e6, 100e-6, 1 << 30, None, False)
    net = sim.from_topology(topo, cfg, spec, spec, local, cfg.for_local_channel(160e6, 100e-6))
    ranks = [h for gpus in topo.servers.values() for h in gpus]
    msgs = c.schedule("x", ranks, c.Params("all_reduce", "hierarchical", 64_000),
                      servers=[[0, 1], [2, 3]])
    net.load(msgs)
    net.run(60)
    assert all(r["verified"] for r in net.records() if r["kind"] == "collective_done")
    a, b = topo.servers[1]
    local_port = net.hosts[a].local_ports[b]
    intra = sum(m.size_bytes for m in msgs if (m.src, m.dst) == (a, b))
    assert intra and local_port.stats.tx_bytes >= intra  # the bytes went over the local channel
    cross = sum(m.size_bytes for m in msgs if m.src == a and not topo.same_server(a, m.dst))
    # the NIC carried the cross-server part (with its headers and ACKs), not the intra-server one
    assert cross <= net.hosts[a].uplink.stats.tx_bytes < cross + intra


@pytest.mark.parametrize("topology", [
    {"kind": "fat_tree", "k": 4, "gpus_per_server": 2, "rail_optimised": True},
    {"kind": "leaf_spine", "leaves": 4, "hosts_per_leaf": 2, "dual_homed": True, "gpus_per_server": 2,
     "rail_optimised": True},
])
def test_hierarchical_all_reduce_on_fat_tree_and_dual_homed_servers(topology):
    topo = build_topology(topology)
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    spec = sim.LinkSpec(20e6, 500e-6, 64)
    local = sim.LinkSpec(160e6, 50e-6, 1 << 30, None, False)
    net = sim.from_topology(topo, cfg, spec, spec, local, cfg.for_local_channel(160e6, 50e-6))
    ranks = [h for gpus in topo.servers.values() for h in gpus]
    servers = [[ranks.index(h) for h in gpus] for gpus in topo.servers.values()]
    net.load(c.schedule("x", ranks, c.Params("all_reduce", "hierarchical", 16_384), servers=servers))
    net.run(60)
    done = [r for r in net.records() if r["kind"] == "collective_done"]
    assert len(done) == len(ranks) and all(r["verified"] for r in done)


def test_local_channel_config_keeps_the_fabric_timeouts_in_seconds():
    host = TransportConfig(cc="none", link_rate_bps=20e6, base_rtt_s=10e-3)
    local = host.for_local_channel(160e6, 100e-6)
    assert local.link_rate_bps == 160e6 and local.rtt_s < host.rtt_s / 10
    assert local.rto_low_rtt * local.rtt_s == pytest.approx(host.rto_low_rtt * host.rtt_s)
    assert local.rto_high_rtt * local.rtt_s == pytest.approx(host.rto_high_rtt * host.rtt_s)
    assert local.window == 2 * local.bdp_cells


def test_channels_use_other_rank_pairs():
    one = c.schedule("x", HOSTS, c.Params("all_reduce", "ring", 4000, 1))
    two = c.schedule("x", HOSTS, c.Params("all_reduce", "ring", 4000, 2))
    pairs = lambda msgs: {(m.src_rank, m.dst_rank) for m in msgs}  # noqa: E731
    assert pairs(one) == {(i, (i + 1) % 8) for i in range(8)}
    assert pairs(two) == pairs(one) | {((i + 1) % 8, i) for i in range(8)}  # channel 1 runs backwards
    for op in ("all_gather", "reduce_scatter"):
        assert len(pairs(c.schedule("x", HOSTS, c.Params(op, "ring", 4000, 2)))) == 16
