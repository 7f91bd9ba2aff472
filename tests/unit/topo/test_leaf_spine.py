"""Leaf-spine shape, port numbering and equal-cost path sets."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.topo import LeafSpineSpec, TopoError, build_topology

shapes = st.builds(
    LeafSpineSpec,
    leaves=st.integers(2, 5),
    spines=st.integers(1, 4),
    hosts_per_leaf=st.integers(1, 3),
    uplinks_per_spine=st.integers(1, 3),
)


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_counts_and_path_multiplicity(spec):
    topo = build_topology(spec)
    L, S, H, U = spec.leaves, spec.spines, spec.hosts_per_leaf, spec.uplinks_per_spine
    assert topo.counts.hosts == L * H
    assert topo.counts.switches == L + S
    assert topo.counts.fabric_links == L * S * U
    assert topo.counts.host_links == L * H
    for src, dst in itertools.permutations(topo.hosts, 2):
        paths = topo.paths(src, dst)
        same_leaf = topo.tors_of(src) == topo.tors_of(dst)
        # a path is a sequence of links: U choices up to each spine and U back down
        assert len(paths) == (1 if same_leaf else S * U * U)
        assert len(topo.node_paths(src, dst)) == (1 if same_leaf else S)
        assert len(topo.next_hops(topo.tors_of(src)[0], dst)) == (1 if same_leaf else S * U)
        assert len({(p.nodes, p.links) for p in paths}) == len(paths)
        assert {len(p) for p in paths} == {2 if same_leaf else 4}


@settings(max_examples=30, deadline=None)
@given(shapes)
def test_ports_are_dense_and_symmetric(spec):
    topo = build_topology(spec)
    for name in topo.switches:
        numbers = [p.number for p in topo.ports(name)]
        assert numbers == list(range(1, len(numbers) + 1))
        for port in topo.ports(name):
            back = topo.port(port.peer, port.peer_port)
            assert (back.peer, back.peer_port) == (name, port.number)


def test_port_plan_and_next_hops_with_parallel_links():
    topo = build_topology(LeafSpineSpec(leaves=3, spines=2, hosts_per_leaf=2, uplinks_per_spine=2))
    leaf1 = {p.number: (p.peer, p.peer_port) for p in topo.ports("leaf1")}
    assert leaf1 == {1: ("h1", 1), 2: ("h2", 1), 3: ("spine1", 1), 4: ("spine1", 2),
                     5: ("spine2", 1), 6: ("spine2", 2)}
    spine2 = {p.number: (p.peer, p.peer_port) for p in topo.ports("spine2")}
    assert spine2[3] == ("leaf2", 5) and spine2[6] == ("leaf3", 6)
    assert topo.next_hops("leaf1", "h3") == [3, 4, 5, 6]
    assert topo.next_hops("leaf1", "h2") == [2]
    assert topo.next_hops("spine1", "h5") == [5, 6]
    assert topo.node_paths("h1", "h3") == [
        ("h1", "leaf1", "spine1", "leaf2", "h3"),
        ("h1", "leaf1", "spine2", "leaf2", "h3"),
    ]


def test_device_ids_and_management_ports_are_stable():
    topo = build_topology(LeafSpineSpec())
    ids = [(n, topo.node(n).device_id, topo.node(n).grpc_port) for n in topo.switches]
    assert ids == [("leaf1", 1, 9559), ("leaf2", 2, 9560), ("leaf3", 3, 9561),
                   ("leaf4", 4, 9562), ("spine1", 5, 9563), ("spine2", 6, 9564)]
    again = build_topology(LeafSpineSpec())
    assert [(l.name, l.a_port, l.b_port) for l in again.links] == [
        (l.name, l.a_port, l.b_port) for l in topo.links]


def test_oversubscription_is_the_port_ratio():
    assert LeafSpineSpec(hosts_per_leaf=4, spines=2).oversubscription == 2.0
    assert LeafSpineSpec(hosts_per_leaf=4, spines=2, uplinks_per_spine=2).oversubscription == 1.0


@pytest.mark.parametrize("fields, fragment", [
    ({"leaves": 0}, "leaves"),
    ({"hosts_per_leaf": 255}, "hosts_per_leaf"),
    ({"spines": 200, "uplinks_per_spine": 2}, "leaf would need"),
    ({"leaves": 3, "dual_homed": True}, "pairs"),
])
def test_bad_shapes_raise_topo_error(fields, fragment):
    with pytest.raises(TopoError, match=fragment):
        build_topology(LeafSpineSpec(**fields))


def test_dict_spec_and_bad_kind():
    topo = build_topology({"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1})
    assert topo.hosts == ["h1", "h2"]
    with pytest.raises(TopoError, match="kind"):
        build_topology({"kind": "torus"})
    with pytest.raises(TopoError, match="bad leaf_spine"):
        build_topology({"kind": "leaf_spine", "k": 4})
