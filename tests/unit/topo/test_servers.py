"""Multi-GPU servers: which GPU sits on which ToR, and the local channels between them."""

import pytest

from testbed.topo import TopoError, build_topology

LS = {"kind": "leaf_spine", "leaves": 4, "spines": 2, "hosts_per_leaf": 4}


def test_rail_optimised_leaf_spine_puts_gpu_i_on_leaf_i():
    t = build_topology({**LS, "gpus_per_server": 4, "rail_optimised": True})
    assert len(t.servers) == 4
    for server, gpus in t.servers.items():
        assert [t.tors_of(g) for g in gpus] == [["leaf1"], ["leaf2"], ["leaf3"], ["leaf4"]]
        assert [t.node(g).gpu for g in gpus] == [0, 1, 2, 3]
        assert all(t.node(g).server == server for g in gpus)
    # every host is in exactly one server
    assert sorted(h for gpus in t.servers.values() for h in gpus) == sorted(t.hosts)


def test_plain_layout_keeps_a_server_on_one_tor():
    t = build_topology({**LS, "gpus_per_server": 2})
    assert len(t.servers) == 8
    for gpus in t.servers.values():
        assert len({tuple(t.tors_of(g)) for g in gpus}) == 1


def test_local_links_join_each_server_pairwise_and_stay_out_of_the_fabric():
    t = build_topology({**LS, "gpus_per_server": 4, "rail_optimised": True})
    assert len(t.local_links) == 4 * 6
    plain = build_topology(LS)
    assert len(t.links) == len(plain.links)  # no extra cables, ports or paths
    a, b = t.servers[1][0], t.servers[1][3]
    assert t.same_server(a, b) and t.local_link(a, b) is not None
    assert sorted(t.local_peers(a)) == sorted(t.servers[1][1:])
    assert not t.same_server(a, t.servers[2][0])
    assert t.local_link(a, t.servers[2][0]) is None
    assert len(t.ports(a)) == 1


def test_fat_tree_rails_and_dual_homed():
    t = build_topology({"kind": "fat_tree", "k": 4, "gpus_per_server": 2, "rail_optimised": True})
    assert len(t.servers) == 8
    for gpus in t.servers.values():
        tors = [t.tors_of(g)[0] for g in gpus]
        assert tors[0] != tors[1] and tors[0].endswith("_1") and tors[1].endswith("_2")
    d = build_topology({"kind": "leaf_spine", "leaves": 4, "hosts_per_leaf": 2, "dual_homed": True,
                        "gpus_per_server": 2, "rail_optimised": True})
    assert [d.tors_of(g) for g in d.servers[1]] == [["leaf1", "leaf2"], ["leaf3", "leaf4"]]


@pytest.mark.parametrize("fields, fragment", [
    ({**LS, "gpus_per_server": 3}, "hosts_per_leaf (4) must be a multiple"),
    ({**LS, "gpus_per_server": 3, "rail_optimised": True}, "4 leaves must be a multiple"),
    ({**LS, "rail_optimised": True}, "needs servers of several GPUs"),
    ({**LS, "gpus_per_server": 0}, "gpus_per_server must be an integer in 1..16"),
])
def test_bad_layouts_name_the_field(fields, fragment):
    with pytest.raises(TopoError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        build_topology(fields)
