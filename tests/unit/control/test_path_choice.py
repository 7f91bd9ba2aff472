"""Path choice over whole fabrics: every equal-cost path reachable and taken
uniformly in every load-balancing mode, on every tier, and a DATA cell on
its credit's path in reverse (the entropy modes).

Paths come from `testbed.control.trace`, the model of fabric.p4's choice
over the controller's plan (held against the compiled program in
test_trace.py), so these tests fail when either the plan (group order,
divisors, seeds) or the program's choice functions polarise a tier."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from testbed.control.plan import plan_fabric
from testbed.control.trace import FabricModel, Flow
from testbed.scenario import parse_scenario
from testbed.topo.entropy import layout_of

TOPOLOGIES = {
    "leaf-spine 4x3": "{kind: leaf_spine, leaves: 4, spines: 3, hosts_per_leaf: 3}",
    "leaf-spine parallel": "{kind: leaf_spine, leaves: 3, spines: 2, hosts_per_leaf: 4, uplinks_per_spine: 2}",
    "leaf-spine dual-homed": "{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2, dual_homed: true}",
    "leaf-spine dual parallel": ("{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 4, "
                                 "uplinks_per_spine: 2, dual_homed: true}"),
    "fat-tree k=4": "{kind: fat_tree, k: 4}",
    "fat-tree k=6": "{kind: fat_tree, k: 6}",
    "fat-tree k=8": "{kind: fat_tree, k: 8}",
    "fat-tree k=4 dual-homed": "{kind: fat_tree, k: 4, dual_homed: true}",
}

SCENARIO = """
topology: {topology}
fabric: {{load_balancing: {lb}}}
workload: [{{kind: pingall}}]
"""
_CACHE: dict = {}


def fabric(name: str, lb: str):
    key = (name, lb)
    if key not in _CACHE:
        scenario = parse_scenario(SCENARIO.format(topology=TOPOLOGIES[name], lb=lb), "t.yaml")
        _CACHE[key] = (scenario, FabricModel(scenario.topo, plan_fabric(scenario.topo, scenario), seed=3))
    return _CACHE[key]


def pairs(topology, count: int, rng: random.Random):
    """Host pairs in different ToR groups (so every tier has a choice), sampled."""
    hosts = topology.hosts
    out = []
    while len(out) < count:
        a, b = rng.sample(hosts, 2)
        if set(topology.tors_of(a)).isdisjoint(topology.tors_of(b)):
            out.append((a, b))
    return out


def within_bounds(counts: Counter, paths: list, samples: int) -> list[str]:
    """Every path taken, each within 6 standard deviations of an even share."""
    mean = samples / len(paths)
    bad = [f"{p.links}: {counts[p.links]} (mean {mean:.1f})" for p in paths
           if abs(counts[p.links] - mean) > 6 * (mean ** 0.5) + 1]
    return bad


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_entropy_spraying_takes_every_path_equally_and_data_retraces_its_credit(name):
    scenario, model = fabric(name, "spray_rr_entropy")
    topology, layout = scenario.topo, layout_of(scenario.topo)
    values = scenario.fabric.entropy_values
    assert values % layout.paths == 0
    for src, dst in pairs(topology, 6, random.Random(name)):
        paths = topology.paths(src, dst)
        assert layout.paths % len(paths) == 0  # fewer paths within a pod: tier2 is not a choice
        counts = Counter()
        for entropy in range(values):
            nic = layout.digits(entropy)["nic"]
            forward = model.path(Flow(src, dst, entropy=entropy), nic=nic)
            counts[tuple(forward)] += 1
            echo = layout.mirror(entropy)
            back = model.path(Flow(dst, src, entropy=echo), nic=layout.digits(echo)["nic"])
            assert back == forward[::-1], f"entropy {entropy}: credit {forward}, data {back}"
        assert set(counts) == {p.links for p in paths}, "some equal-cost path is never taken"
        assert set(counts.values()) == {values // len(paths)}, f"uneven: {counts}"


@pytest.mark.parametrize("name", TOPOLOGIES)
@pytest.mark.parametrize("lb", ["ecmp", "spray_rr_switch", "spray_random_switch", "spray_random_entropy"])
def test_other_modes_spread_over_every_path(name, lb):
    scenario, model = fabric(name, lb)
    topology, layout = scenario.topo, layout_of(scenario.topo)
    rng = random.Random(f"{name}/{lb}")
    (src, dst), = pairs(topology, 1, rng)
    paths = topology.paths(src, dst)
    samples = 120 * len(paths)
    counts = Counter()
    others = [(a, b) for a in topology.hosts for b in topology.hosts if a != b]
    for i in range(samples):
        if lb == "spray_rr_switch":
            # Each switch keeps one turn per group for all traffic: other flows' cells
            # interleave with this pair's. (A lone flow locks the turns of consecutive
            # tiers together where a path has two down choices: p4src/README.md.)
            for _ in range(rng.randrange(3)):
                a, b = rng.choice(others)
                model.path(Flow(a, b), nic=rng.randrange(layout.nic))
        if lb == "ecmp":  # one flow per sample: a fresh source port, hashed on every tier
            flow = Flow(src, dst, sport=rng.randrange(49152, 65536))
        else:
            flow = Flow(src, dst, entropy=rng.randrange(scenario.fabric.entropy_values))
        nic = rng.randrange(layout.nic)  # the host's own port choice
        counts[tuple(model.path(flow, nic=nic))] += 1
    assert set(counts) == {p.links for p in paths}, f"{lb} on {name}: some equal-cost path is never taken"
    if lb == "spray_rr_switch" and "dual parallel" in name:
        return  # turns lock across the two down choices (NIC pair and parallel link): README
    bad = within_bounds(counts, paths, samples)
    assert not bad, f"{lb} on {name}: paths off an even share: {bad[:4]}"


def test_ecmp_on_a_fat_tree_uses_every_core_link():
    """The polarisation the issue found: with one hash on every tier, half the core idled."""
    scenario, model = fabric("fat-tree k=4", "ecmp")
    topology = scenario.topo
    used = Counter()
    rng = random.Random(5)
    for src, dst in pairs(topology, 400, rng):
        for link in model.path(Flow(src, dst, sport=rng.randrange(49152, 65536))):
            used[link] += 1
    core_links = [link.name for link in topology.links if "core" in link.name]
    assert all(used[name] > 0 for name in core_links), [n for n in core_links if not used[n]]
