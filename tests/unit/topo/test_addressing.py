"""Addresses and MACs are unique and follow the documented plan."""

import pytest

from testbed.topo import FatTreeSpec, LeafSpineSpec, TopoError, build_topology
from testbed.topo.addressing import group_prefix, host_mac, switch_port_mac


@pytest.mark.parametrize("spec", [LeafSpineSpec(leaves=6, hosts_per_leaf=4),
                                  LeafSpineSpec(dual_homed=True, uplinks_per_spine=2),
                                  FatTreeSpec(k=6)])
def test_unique_ips_macs_and_ports(spec):
    topo = build_topology(spec)
    ips = [topo.node(h).ip for h in topo.hosts]
    assert len(set(ips)) == len(ips)
    macs = [p.mac for n in topo.nodes for p in topo.ports(n)]
    assert len(set(macs)) == len(macs)
    ids = [topo.node(s).device_id for s in topo.switches]
    assert ids == list(range(1, len(ids) + 1))


def test_plan_formats():
    assert host_mac("10.3.0.12", 2) == "02:0a:03:00:0c:02"
    assert switch_port_mac(300, 7) == "02:5e:01:2c:00:07"
    assert group_prefix("10.2.1.5") == "10.2.1.0/24"
    topo = build_topology(LeafSpineSpec(leaves=2, spines=1, hosts_per_leaf=2))
    assert [topo.node(h).ip for h in topo.hosts] == ["10.1.0.1", "10.1.0.2", "10.2.0.1", "10.2.0.2"]
    assert topo.ports("h4")[0].mac == "02:0a:02:00:02:01"


def test_lookups_of_unknown_things_raise_topo_error():
    topo = build_topology(LeafSpineSpec())
    for call in (lambda: topo.node("nope"), lambda: topo.port("leaf1", 99),
                 lambda: topo.link("leaf1-spine9"), lambda: topo.paths("leaf1", "h1"),
                 lambda: topo.next_hops("h1", "h2"), lambda: topo.tors_of("leaf1")):
        with pytest.raises(TopoError):
            call()
