"""The Mininet realisation of a topology: interfaces, addresses, pacing, teardown."""

from pathlib import Path

import pytest

from testbed.emulation.network import FabricNetwork, Pacing, interface_names
from testbed.topo.build import build_topology

pytestmark = pytest.mark.integration


def test_leaf_spine_network_is_built_and_torn_down_completely():
    topology = build_topology({"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2})
    network = FabricNetwork(topology, Pacing(rate_mbps=20))
    names = interface_names(topology)
    try:
        network.build()
        switch_side = [n for n in names if not n.startswith("h")]
        assert switch_side and all(Path(f"/sys/class/net/{n}").exists() for n in switch_side)
        h1 = network.host("h1")
        assert "10.1.0.1/32" in h1.cmd("ip -4 addr show dev h1-eth0")
        neighbours = h1.cmd("ip neigh show dev h1-eth0")
        assert "10.2.0.1" in neighbours and topology.port("leaf1", 1).mac in neighbours
        assert "tbf" in h1.cmd("tc qdisc show dev h1-eth0") and "20Mbit" in h1.cmd("tc qdisc show dev h1-eth0")
    finally:
        network.stop()
    assert not any(Path(f"/sys/class/net/{n}").exists() for n in names)


def test_gpus_of_a_server_reach_each_other_over_their_local_veth_only():
    topology = build_topology({"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                               "gpus_per_server": 2, "rail_optimised": True})
    network = FabricNetwork(topology, Pacing(rate_mbps=20), local_pacing=Pacing(rate_mbps=80))
    names = interface_names(topology)
    a, b = topology.servers[1]  # h1 on leaf1, h3 on leaf2
    try:
        network.build()
        h1 = network.host(a)
        local = f"{a}-nv{topology.node(b).gpu}"
        assert local in names
        assert "80Mbit" in h1.cmd(f"tc qdisc show dev {local}")
        route = h1.cmd(f"ip route get {topology.node(b).ip}")
        assert f"dev {local}" in route, route  # the /32 wins over the fabric's /8
        other = topology.servers[2][0]
        assert f"dev {a}-eth0" in h1.cmd(f"ip route get {topology.node(other).ip}")
        # no switch process runs here: a ping between the GPUs can only cross the local veth
        out = h1.cmd(f"ping -c 2 -W 1 {topology.node(b).ip}")
        assert " 0% packet loss" in out, out
        assert "100% packet loss" in h1.cmd(f"ping -c 1 -W 1 {topology.node(other).ip}")
    finally:
        network.stop()
    assert not any(Path(f"/sys/class/net/{n}").exists() for n in names)
