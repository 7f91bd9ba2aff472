"""The simulator sprays a 3-tier fat-tree the way fabric.p4 does: each tier reads its own digit
of the entropy value, so every core link carries traffic (one digit for every tier left half
the core idle) and DATA retraces its credit's path."""

from collections import Counter

from testbed.simulation import sim

from testbed.host import workloads

from testbed.cells import wire
from testbed.scenario import parse_scenario
from testbed.simulation.run import simulate

SCENARIO = """
name: sim-paths
duration_s: 60
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: 5, delay_us: 1000}
fabric: {load_balancing: spray, cell_size: 1024}
transport: {cc: %s}
workload: [{kind: pingall}]
"""


def run(cc: str, monkeypatch):
    """Run the cross-pod traffic; returns Counter of (port name, cell type) enqueued."""
    kinds = Counter()
    enqueue = sim.Port.enqueue

    def counting(port, pkt, kind):
        kinds[(port.name, kind)] += 1
        enqueue(port, pkt, kind)
    monkeypatch.setattr(sim.Port, "enqueue", counting)
    scenario = parse_scenario(SCENARIO % cc, "sim-paths.yaml")
    hosts = list(scenario.topo.hosts)
    # every host to the host of the same position in the next pod: all of it crosses the core
    messages = [workloads.MessageSpec(h, hosts[(i + 4) % 16], 0, 64 * 1024) for i, h in enumerate(hosts)]
    _, info = simulate(scenario, messages, until_s=60.0)
    assert info["finished"], info
    return kinds


def links(kinds, kind, up: bool):
    return {name: n for (name, k), n in kinds.items() if k == kind
            and (name.startswith("agg") and "->core" in name if up else name.startswith("core"))}


def test_every_core_link_carries_an_even_share_of_sprayed_data(monkeypatch):
    kinds = run("none", monkeypatch)
    for up in (True, False):
        data = links(kinds, wire.DATA, up)
        assert len(data) == 16, data
        assert min(data.values()) >= 0.9 * max(data.values()), data


def test_data_retraces_its_credits_path_on_three_tiers(monkeypatch):
    """Each agg->core link carries exactly as many DATA cells as its reverse link carried credits:
    a credit and the DATA cell it pays for cross one core link, in opposite directions."""
    kinds = run("tita", monkeypatch)
    data = links(kinds, wire.DATA, True)
    assert len(data) == 16
    for name, n in data.items():
        agg, core = name.split("->")
        assert n == kinds[(f"{core}->{agg}", wire.CREDIT)] > 0, name
