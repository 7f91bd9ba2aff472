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


def test_host_down_takes_a_gpus_local_veths_down_and_teardown_brings_them_back(tmp_path):
    """faults.host_down on a GPU: its fabric cable's switch end and both ends of its local channel,
    the latter from inside the GPUs' namespaces; the server's other GPU sees its end lose carrier."""
    import time

    from testbed.emulation import faults
    from testbed.scenario import parse_scenario

    scenario = parse_scenario("""
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2, gpus_per_server: 2, rail_optimised: true}
workload: [{kind: pingall}]
faults: [{at_s: 0, kind: host_down, target: h1}]
""", "g.yaml")
    topology = scenario.topo
    network = FabricNetwork(topology, Pacing(rate_mbps=20), local_pacing=Pacing(rate_mbps=80))
    a, b = topology.servers[1]
    mine, theirs = f"{a}-nv{topology.node(b).gpu}", f"{b}-nv{topology.node(a).gpu}"

    def state(host, interface):
        return network.host(host).cmd(f"cat /sys/class/net/{interface}/operstate").strip()

    def settled(want, *ends, within_s=3.0):
        """The ends' operstates once they read `want` (the kernel's linkwatch reports a change up
        to a second late), or as they are at the deadline."""
        deadline = time.time() + within_s
        while True:
            now = tuple(state(h, i) for h, i in ends)
            if all(x == want for x in now) or time.time() > deadline:
                return now
            time.sleep(0.1)

    try:
        network.build()
        assert (state(a, mine), state(b, theirs)) == ("up", "up")
        runner = faults.FaultRunner(faults.plan_faults(scenario), time.time(), tmp_path / "faults.jsonl",
                                    namespaces={h: network.host(h).pid for h in topology.hosts}).start()
        assert settled("down", (a, mine), (b, theirs)) == ("down", "down")
        (cable,) = [p for p in topology.ports(a)]
        peer_end = topology.link(cable.link)
        switch_end = next(faults.switch_interface(n, p) for n, p in ((peer_end.a, peer_end.a_port),
                                                                     (peer_end.b, peer_end.b_port))
                          if not topology.node(n).is_host)
        assert Path(f"/sys/class/net/{switch_end}/operstate").read_text().strip() == "down"
        assert runner.finish() == []
        assert settled("up", (a, mine), (b, theirs)) == ("up", "up")
    finally:
        network.stop()
