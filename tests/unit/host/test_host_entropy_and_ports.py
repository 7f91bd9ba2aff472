"""Entropy choice per sender, mirrored echoes, per-flow UDP source ports,
and the host->ToR delay line of the agent."""

from __future__ import annotations

import socket

import pytest
from conftest import run_agents

from testbed.cells import wire

from testbed.host import workloads
from testbed.host.agent import Agent
from testbed.host.cc.tita import TitaReceiver
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint
from testbed.host.entropy import EntropySource, echo
from testbed.cells.flowports import FLOW_PORT_BASE, FLOW_PORTS, FlowSocket, flow_source_port
from testbed.topo.entropy import EntropyLayout


def test_round_robin_cycles_and_random_draws_cover_the_values():
    rr = EntropySource(8, "rr", start=5, seed=1)
    assert [rr.next() for _ in range(10)] == [5, 6, 7, 0, 1, 2, 3, 4, 5, 6]
    draws = EntropySource(8, "random", start=0, seed=1)
    values = [draws.next() for _ in range(800)]
    assert set(values) == set(range(8)) and values[:8] != sorted(values[:8])
    with pytest.raises(ValueError):
        EntropySource(8, "adaptive", 0, 1)


def test_echo_mirrors_between_tor_groups_and_not_within_one():
    layout = EntropyLayout(nic=2, dtor=2, parallel=3, tier1=2)
    entropy = layout.compose({"nic": 1, "dtor": 0, "pdown": 2, "pup": 0, "tier1": 1})
    mirrored = layout.digits(echo(layout, entropy, "10.1.0.2", "10.2.0.3"))
    assert mirrored == {"nic": 0, "dtor": 1, "pdown": 0, "pup": 2, "tier1": 1, "tier2": 0}
    assert echo(layout, entropy, "10.1.0.2", "10.1.0.3") == entropy  # same ToR group: no middle
    assert layout.mirror(layout.mirror(entropy)) == entropy
    big = entropy + 5 * layout.paths  # digits above the layout are kept
    assert layout.mirror(big) - layout.mirror(entropy) == 5 * layout.paths


def test_a_credited_data_cell_carries_the_mirrored_entropy():
    layout = EntropyLayout(nic=2, dtor=2, tier1=2)
    cfg = TransportConfig(cc="tita", link_rate_bps=10e6, entropy_layout=layout.radices_in_order)
    ep = Endpoint("10.1.0.2", cfg)
    ep.send_message(0.0, "10.2.0.5", 1, b"x" * 3000)
    ep.poll(0.0)
    flow = ep.senders["10.2.0.5"]
    credit = wire.CellPacket(type=wire.CREDIT, flow_id=flow.flow_id, credit_seq=1,
                             entropy=layout.compose({"nic": 1, "tier1": 1}))
    ep.receive(0.01, "10.2.0.5", wire.encode(credit), 0)
    sent = [wire.decode(tx.data) for tx in ep.poll(0.02)]
    data = [c for c in sent if c.type == wire.DATA]
    assert data and data[0].entropy == layout.compose({"dtor": 1, "tier1": 1})


def test_source_ports_depend_on_seed_and_flow_and_stay_in_range():
    ports = {flow_source_port(seed, "10.1.0.2", f"10.2.0.{i}") for seed in (1, 2) for i in range(50)}
    assert len(ports) > 90 and all(FLOW_PORT_BASE <= p < FLOW_PORT_BASE + FLOW_PORTS for p in ports)
    assert flow_source_port(1, "a", "b") != flow_source_port(1, "b", "a")


def test_a_taken_port_moves_the_flow_to_the_next_free_one():
    first = flow_source_port(7, "127.0.0.5", "127.0.0.6")
    blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    blocker.bind(("127.0.0.5", first))
    try:
        flow = FlowSocket.open("127.0.0.5", "127.0.0.6", 7, taken=set())
        assert flow.sport != first
        flow.sock.close()
    finally:
        blocker.close()


def test_agents_send_each_flow_from_its_own_port_and_delay_by_the_link(tmp_path):
    hosts = {"h1": "127.0.0.21", "h2": "127.0.0.22", "h3": "127.0.0.23"}
    wl = workloads.incast(["h1", "h2"], "h3", 20_000)
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16)

    delay = 0.02
    agents = [Agent(n, a, hosts, wl, cfg, tmp_path, seed=3, port=4893, grace_s=0.2, timeout_s=20,
                    link_delay_s=delay) for n, a in hosts.items()]
    seen = run_agents(agents)
    assert all(r.reason == "done" for r in seen.values()), seen
    import json
    stats = {n: json.loads((tmp_path / f"{n}.stats.json").read_text()) for n in hosts}
    for sender in ("h1", "h2"):
        assert stats[sender]["udp_source_ports"]["h3"] == flow_source_port(3, hosts[sender], hosts["h3"])
    # every answer crosses two delay lines: the smallest RTT sample is at least 2 x the delay
    assert stats["h1"]["rtt_min_ms"] >= 2 * delay * 1e3


def test_a_receivers_credit_flows_start_on_different_paths():
    """Each credit flow's round robin starts at a hash of its flow id: from one start for all, the
    first credits of every flow into every receiver took one path up a 3-tier fat-tree together
    (simulator, all-to-all: 250 credits dropped at its uplinks, 0.47 of the payload rate)."""
    cfg = TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=32, entropy_values=32)
    senders = [Endpoint(f"10.{i}.0.2", cfg) for i in range(15)]
    firsts = []
    for receiver in ("10.20.0.2", "10.21.0.3"):
        rx = TitaReceiver(cfg)
        for ep in senders:
            ep.send_message(0.0, receiver, 1, b"x" * 100)
            flow_id = ep.senders[receiver].flow_id
            rx.on_control(0.0, ep.name, wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=flow_id, aux=100))
        first, now = {}, 0.0
        while len(first) < len(senders):  # one credit per DATA frame time, none answered
            first.update((src, credit.entropy) for src, credit in rx.poll(now))
            now = rx.deadline()
        firsts.append([first[ep.name] for ep in senders])
    for values in firsts:
        assert len(set(values)) >= 10, values  # 15 flows over 32 values: one start gave 1
    assert firsts[0] != firsts[1]


def test_a_senders_spraying_flows_start_on_different_paths():
    """A sender's flows start their round robin at a hash of the flow id, as credit flows do: from
    the host's salt, every flow's first cell, to every peer, took the same path."""
    cfg = TransportConfig(cc="none", link_rate_bps=5e6, bdp_cells=32, entropy_values=32)
    starts = []
    for sender in ("10.1.0.2", "10.2.0.3"):
        ep = Endpoint(sender, cfg)
        for i in range(15):
            ep.send_message(0.0, f"10.{20 + i}.0.2", 1, b"x" * 100)
        first = {}
        for t in range(40):
            for tx in ep.poll(t):
                first.setdefault(tx.dst, wire.decode(tx.data, cfg.cell_size).entropy)
        firsts = [first[f"10.{20 + i}.0.2"] for i in range(15)]
        assert len(set(firsts)) >= 8, firsts  # 15 flows over 32 values (12 expected at random): one start gave 1
        starts.append(firsts)
    assert starts[0] != starts[1]
