"""Each channel of a collective is a transport flow of its own: its own flow id (the simulator's
and the switches' spraying hash it), its own UDP source port (fabric.p4's 5-tuple ECMP hash), and,
on a NIC with several ports, its own port in turn; so under ECMP a 4-channel collective between
the same two ranks spreads over several spines instead of all hashing onto one."""

from __future__ import annotations

import json

import pytest
from conftest import run_agents

from testbed.control.plan import plan_fabric
from testbed.control.trace import FabricModel, Flow
from testbed.host import collectives as c
from testbed.simulation import sim
from testbed.cells import wire
from testbed.host.agent import Agent
from testbed.host.config import TransportConfig
from testbed.host.endpoint import (MAX_FLOWS_PER_CHANNEL, Endpoint, EndpointError, channel_of,
                                   channel_of_datagram)
from testbed.cells.flowports import flow_source_port
from testbed.host.nic import NicPorts
from testbed.scenario import parse_scenario


def test_schedule_messages_name_their_channel():
    for op, algorithm in (("all_reduce", "ring"), ("all_reduce", "tree"), ("all_gather", "ring"),
                          ("reduce_scatter", "ring"), ("all_to_all", "direct")):
        msgs = c.schedule("x", [f"h{i}" for i in range(4)], c.Params(op, algorithm, 64_000, 4, 4096))
        assert {m.channel for m in msgs} == {0, 1, 2, 3}, (op, algorithm)
    one = c.schedule("x", ["a", "b"], c.Params("all_reduce", "ring", 8000, 1))
    assert {m.channel for m in one} == {0}
    # a spec round-trips with its channel; plain messages keep their compact form
    m = c.schedule("x", ["a", "b"], c.Params("all_reduce", "ring", 8000, 4))[-1]
    assert m.channel and type(m).from_json(json.loads(json.dumps(m.to_json()))) == m


def test_each_channel_to_one_peer_is_its_own_flow():
    ep = Endpoint("h1", TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16))
    for ch in range(4):
        ep.send_message(0.0, "h2", ch, b"x" * 3000, channel=ch)
    ep.send_message(0.0, "h3", 9, b"y" * 100)
    flows = [ep.senders["h2"]] + [ep.senders[("h2", ch)] for ch in (1, 2, 3)]
    assert len({f.flow_id for f in flows}) == 4
    assert [channel_of(f.flow_id) for f in flows] == [0, 1, 2, 3]
    # the channel-0 flows number as they always did: the host's salt, then 1, 2, ...
    assert ep.senders["h2"].flow_id & 0xFFFF == 1 and ep.senders["h3"].flow_id & 0xFFFF == 2
    sent = [tx for ms in range(40) for tx in ep.poll(ms * 1e-3)]
    per_channel = {channel_of_datagram(tx.data) for tx in sent if tx.dst == "h2"}
    assert per_channel == {0, 1, 2, 3}
    # the receiver's answers carry the flow id, so they name the channel too
    rx = Endpoint("h2", TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16))
    for tx in sent:
        if tx.dst == "h2":
            rx.receive(0.02, "h1", tx.data)
    answers = [tx for tx in rx.poll(0.03) + rx.poll(0.1) if tx.data[0] & 0x0F == wire.ACK]
    assert {channel_of_datagram(tx.data) for tx in answers} == {0, 1, 2, 3}


def test_channel_out_of_range_or_too_many_flows_is_one_line():
    ep = Endpoint("h1", TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16))
    with pytest.raises(EndpointError, match="channel 64 is out of range"):
        ep.send_message(0.0, "h2", 0, b"x", channel=64)
    for i in range(MAX_FLOWS_PER_CHANNEL):
        ep.send_message(0.0, f"p{i}", 0, b"x", channel=3)
    with pytest.raises(EndpointError, match="more than 1023 flows on channel 3"):
        ep.send_message(0.0, "one-too-many", 0, b"x", channel=3)


def test_channels_get_distinct_source_ports_and_take_the_nic_ports_in_turn():
    sports = [flow_source_port(5, "10.0.1.2", "10.0.2.2", ch) for ch in range(4)]
    assert sports[0] == flow_source_port(5, "10.0.1.2", "10.0.2.2") and len(set(sports)) == 4
    nic = NicPorts(["a", "b"], 10e6, "flow")
    cell = wire.encode(wire.CellPacket(type=wire.DATA, flow_id=1))
    first = nic.choose(cell, sports[0])[0]
    assert [nic.choose(cell, sports[0], ch)[0] for ch in range(4)] == [first, 1 - first] * 2
    nic.ports[1 - first].carrier = False  # a dead port's channels take the live one
    assert {nic.choose(cell, sports[0], ch)[0] for ch in range(4)} == {first}


def _spines_with_data(net, leaf: str, threshold: int) -> set[str]:
    return {p.name.split("->")[1] for p in net.ports
            if p.name.startswith(f"{leaf}->spine") and p.stats.tx_bytes >= threshold}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ecmp_spreads_a_four_channel_collective_over_spines_in_the_simulator(seed):
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    size = 256_000
    spread = {}
    for channels in (1, 4):
        net = sim.leaf_spine(2, 4, 1, cfg, sim.LinkSpec(20e6, 1000e-6, 64), load_balancing="ecmp", seed=seed)
        net.load(c.schedule("x", ["h1", "h2"], c.Params("all_reduce", "ring", size, channels)), seed=seed)
        net.run(60)
        done = [r for r in net.records() if r["kind"] == "collective_done"]
        assert len(done) == 2 and all(r["verified"] for r in done)
        # DATA h1 -> h2 is S/2 bytes in all; a spine that carried a channel's quarter of it, or more
        spread[channels] = _spines_with_data(net, "leaf1", size // 2 // 4)
    assert len(spread[1]) == 1
    assert len(spread[4]) > 1


def test_ecmp_spreads_channels_over_spines_on_the_emulated_fabric_plan():
    """The emulated switches hash the 5-tuple: the channels' source ports, traced through the
    fabric plan by the lead's model of fabric.p4, leave the leaf by more than one spine."""
    scenario = parse_scenario("""
topology: {kind: leaf_spine, leaves: 2, spines: 4, hosts_per_leaf: 1}
fabric: {load_balancing: ecmp}
workload: [{kind: pingall}]
""", "t.yaml")
    topo = scenario.topo
    model = FabricModel(topo, plan_fabric(topo, scenario), seed=scenario.seed)
    a, b = topo.hosts[:2]
    ip = {h: topo.node(h).ip for h in (a, b)}
    spines = set()
    for ch in range(4):
        path = model.path(Flow(a, b, sport=flow_source_port(scenario.seed, ip[a], ip[b], ch)))
        spines |= {n for cable in path for n in (topo.link(cable).a, topo.link(cable).b) if n.startswith("spine")}
    assert len(spines) > 1, spines


def test_agents_send_each_channel_from_its_own_source_port(tmp_path):
    hosts = {"h1": "127.0.0.31", "h2": "127.0.0.32"}
    msgs = c.schedule("x", list(hosts), c.Params("all_reduce", "ring", 16_000, 4))
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16)
    agents = [Agent(n, a, hosts, msgs, cfg, tmp_path, seed=3, port=4895, grace_s=0.2, timeout_s=20)
              for n, a in hosts.items()]
    seen = run_agents(agents)
    assert all(r.reason == "done" for r in seen.values()), seen
    stats = {n: json.loads((tmp_path / f"{n}.stats.json").read_text()) for n in hosts}
    for src, dst in (("h1", "h2"), ("h2", "h1")):
        ports = stats[src]["udp_source_ports_by_channel"][dst]
        assert ports == {str(ch): flow_source_port(3, hosts[src], hosts[dst], ch) for ch in range(4)}
        assert stats[src]["udp_source_ports"][dst] == ports["0"]
    done = [json.loads(line) for n in hosts for line in (tmp_path / f"{n}.jsonl").read_text().splitlines()]
    assert sum(1 for r in done if r["kind"] == "collective_done" and r["verified"]) == 2


@pytest.mark.parametrize("load_balancing", ["ecmp", "spray"])
def test_a_dual_port_nic_in_the_simulator_sends_on_both_ports(load_balancing):
    """The simulator models a dual-homed host's two NIC ports as the agent does: under ECMP (flow
    mode) a pair's channels take the ports in turn, so 1 channel uses one port and 4 use both;
    under spraying every cell's entropy digit picks its port."""
    from testbed.scenario import parse_scenario
    from testbed.simulation.run import build_network

    scenario = parse_scenario(f"""
topology: {{kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2, dual_homed: true}}
links: {{rate_mbps: 20, delay_us: 200}}
fabric: {{load_balancing: {load_balancing}}}
transport: {{cc: none}}
workload: [{{kind: pingall}}]
""", "d.yaml")
    a, b = scenario.topo.hosts[0], scenario.topo.hosts[-1]
    used = {}
    for channels in (1, 4):
        net = build_network(scenario)
        host = net.hosts[a]
        assert len(host.uplinks) == 2 and host.ep.cfg.link_rate_bps == 40e6  # both ports' rate
        net.load(c.schedule("x", [a, b], c.Params("all_reduce", "ring", 128_000, channels)), seed=1)
        net.run(30)
        done = [r for r in net.records() if r["kind"] == "collective_done"]
        assert len(done) == 2 and all(r["verified"] for r in done)
        used[channels] = sum(1 for p in host.uplinks if p.stats.tx_bytes > 128_000 // 2 // 8)
    assert used[4] == 2
    assert used[1] == (1 if load_balancing == "ecmp" else 2)
