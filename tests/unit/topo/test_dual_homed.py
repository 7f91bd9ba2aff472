"""Dual-homed hosts: two NIC ports on two different ToRs, one address."""

import itertools

import pytest

from testbed.topo import FatTreeSpec, LeafSpineSpec, TopoError, build_topology


@pytest.mark.parametrize("spec", [
    LeafSpineSpec(leaves=4, spines=2, hosts_per_leaf=3, dual_homed=True),
    FatTreeSpec(k=4, dual_homed=True),
    FatTreeSpec(k=8, dual_homed=True),
])
def test_every_host_has_two_ports_on_different_tors(spec):
    topo = build_topology(spec)
    for host in topo.hosts:
        ports = topo.ports(host)
        assert [p.number for p in ports] == [1, 2]
        tors = topo.tors_of(host)
        assert len(set(tors)) == 2
        assert all(not topo.node(t).is_host for t in tors)
        assert ports[0].mac != ports[1].mac


def test_leaf_spine_pairs_and_path_sets():
    topo = build_topology(LeafSpineSpec(leaves=4, spines=2, hosts_per_leaf=2, dual_homed=True))
    assert topo.counts.hosts == 4
    assert topo.tors_of("h1") == ["leaf1", "leaf2"] and topo.tors_of("h3") == ["leaf3", "leaf4"]
    assert topo.node("h3").ip == "10.2.0.1"
    # 2 source ToRs x 2 spines x 2 destination ToRs
    assert len(topo.paths("h1", "h3")) == 8
    # same pair: through either ToR, never through the other host
    assert topo.node_paths("h1", "h2") == [("h1", "leaf1", "h2"), ("h1", "leaf2", "h2")]
    assert topo.next_hops("spine1", "h1") == [1, 2]
    for src, dst in itertools.permutations(topo.hosts, 2):
        for path in topo.paths(src, dst):
            assert not any(topo.node(n).is_host for n in path.nodes[1:-1])


def test_fat_tree_dual_homing_needs_k_multiple_of_4():
    with pytest.raises(TopoError, match="multiple of 4"):
        build_topology(FatTreeSpec(k=6, dual_homed=True))
    topo = build_topology(FatTreeSpec(k=4, dual_homed=True))
    assert topo.counts.hosts == 8
    assert topo.tors_of("h1") == ["edge1_1", "edge1_2"]
