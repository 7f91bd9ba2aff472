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
