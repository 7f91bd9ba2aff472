"""k-ary fat-tree: the classic counts and (k/2)^2 paths between pods."""

import itertools

import pytest

from testbed.topo import FatTreeSpec, TopoError, build_topology


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_counts(k):
    topo = build_topology(FatTreeSpec(k=k))
    assert topo.counts.hosts == k**3 // 4
    assert topo.counts.switches == 5 * k * k // 4
    assert topo.counts.by_kind == {"host": k**3 // 4, "edge": k * k // 2,
                                   "aggregation": k * k // 2, "core": k * k // 4}
    for name in topo.switches:
        assert len(topo.ports(name)) == k


@pytest.mark.parametrize("k", [4, 6])
def test_path_counts_by_locality(k):
    topo = build_topology(FatTreeSpec(k=k))
    half = k // 2
    for src, dst in itertools.permutations(topo.hosts, 2):
        s, d = topo.node(src), topo.node(dst)
        paths = topo.paths(src, dst)
        if s.pod != d.pod:
            assert len(paths) == half * half and {len(p) for p in paths} == {6}
        elif s.group != d.group:
            assert len(paths) == half and {len(p) for p in paths} == {4}
        else:
            assert len(paths) == 1


def test_addressing_and_core_wiring():
    topo = build_topology(FatTreeSpec(k=4))
    assert [topo.node(h).ip for h in topo.hosts[:5]] == [
        "10.1.1.1", "10.1.1.2", "10.1.2.1", "10.1.2.2", "10.2.1.1"]
    # core c reaches aggregation (c-1)//(k/2)+1 of every pod, on port = pod
    core3 = {p.number: p.peer for p in topo.ports("core3")}
    assert core3 == {1: "agg1_2", 2: "agg2_2", 3: "agg3_2", 4: "agg4_2"}
    assert topo.next_hops("edge1_1", "h16") == [3, 4]
    assert topo.next_hops("agg1_1", "h16") == [3, 4]
    assert topo.next_hops("core1", "h16") == [4]
    assert topo.next_hops("agg4_1", "h16") == [2]


@pytest.mark.parametrize("k", [3, 0, 256])
def test_bad_k(k):
    with pytest.raises(TopoError, match="k"):
        build_topology(FatTreeSpec(k=k))
