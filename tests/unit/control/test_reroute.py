"""Fast reroute: after a cut, every switch's routes reach every host over live links only,
groups keep the plan's form, writes are make-before-break, and a healed fabric is back
on the plan's own groups."""

from __future__ import annotations

import pytest

from testbed.control.plan import plan_fabric
from testbed.control.reroute import Rerouter
from testbed.scenario import parse_scenario

TOPOLOGIES = {
    "leaf-spine dual-homed": "{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2, dual_homed: true}",
    "fat-tree k=4 dual-homed": "{kind: fat_tree, k: 4, dual_homed: true}",
    "fat-tree k=4": "{kind: fat_tree, k: 4}",
}


def scenario_for(topology: str, lb: str = "spray_rr_entropy"):
    return parse_scenario(f"""
topology: {topology}
links: {{rate_mbps: 1, delay_us: 1000}}
fabric: {{load_balancing: {lb}}}
workload: [{{kind: pingall}}]
""", "reroute.yaml")


class Fabric:
    """The switches' route and group tables as written: the plan, then each update."""

    def __init__(self, plans):
        self.groups = {}  # (switch, gid) -> member ports
        self.routes = {}  # (switch, ip) -> gid
        for name, plan in plans.items():
            self.apply(name, plan.entries, [])

    def apply(self, switch, inserts, modifies):
        for spec in inserts:
            if spec.table == "FabricIngress.groups":
                assert (switch, spec.match["group_id"]) not in self.groups, "a group id written twice"
                self.groups[(switch, spec.match["group_id"])] = [None] * spec.params["size"]
            elif spec.table == "FabricIngress.group_members":
                self.groups[(switch, spec.match["group_id"])][spec.match["member"]] = spec.params["port"]
            elif spec.table == "FabricIngress.ipv4_routes":
                self.routes[(switch, spec.match["dstAddr"][0])] = spec.params["group_id"]
        for spec in modifies:
            assert spec.table == "FabricIngress.ipv4_routes"
            key = (switch, spec.match["dstAddr"][0])
            assert key in self.routes, "a route modified that does not exist"
            assert (switch, spec.params["group_id"]) in self.groups, "a route moved to a group not yet written"
            self.routes[key] = spec.params["group_id"]

    def walks(self, topology, src_switch, host, dead):
        """Every path the tables allow from a switch to a host; fails on a dead link or a loop.
        (A switch no live path reaches may keep a route into a dead link: nothing arrives there.)"""
        ip = topology.node(host).ip
        stack = [(src_switch, ())]
        while stack:
            here, seen = stack.pop()
            assert here not in seen, f"routing loop towards {host}: {seen + (here,)}"
            for port in self.groups[(here, self.routes[(here, ip)])]:
                p = topology.port(here, port)
                assert p.link not in dead, f"{here} sends traffic for {host} into dead link {p.link}"
                if p.peer == host:
                    continue
                assert not topology.node(p.peer).is_host, f"{here} sends traffic for {host} to {p.peer}"
                stack.append((p.peer, seen + (here,)))


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_host_link_cut_is_routed_around_and_healed(name):
    scenario = scenario_for(TOPOLOGIES[name])
    topology = scenario.topo
    plans = plan_fabric(topology, scenario)
    dual = topology.spec.dual_homed
    cuts = [topology.ports(h)[0].link for h in topology.hosts[:4]]
    if not dual:  # a single-homed host's only cable: cut a fabric link instead
        cuts = [link.name for link in topology.links if link.tier == "fabric"][:4]
    for cut in cuts:
        rerouter = Rerouter(topology, scenario, plans)
        fabric = Fabric(plans)
        updates = rerouter.updates({cut})
        assert updates, f"cutting {cut} moved nothing"
        for switch, update in updates.items():
            fabric.apply(switch, update.inserts, update.modifies)
        rerouter.commit({cut}, updates)
        for src in topology.hosts:  # from every ToR a host can still send into, every path is live
            for port in topology.ports(src):
                if port.link != cut:
                    for host in topology.hosts:
                        if host != src:
                            fabric.walks(topology, port.peer, host, {cut})
        assert rerouter.updates({cut}) == {}  # the state is what was written
        healed = rerouter.updates(set())
        assert all(not u.inserts for u in healed.values())  # back onto groups the switch has
        for switch, update in healed.items():
            fabric.apply(switch, [], update.modifies)
        rerouter.commit(set(), healed)
        planned = Fabric(plans)
        assert fabric.routes == planned.routes


def test_a_rerouted_group_keeps_the_entropy_form_of_the_plan():
    scenario = scenario_for(TOPOLOGIES["leaf-spine dual-homed"])
    topology = scenario.topo
    rerouter = Rerouter(topology, scenario, plan_fabric(topology, scenario))
    h1 = topology.hosts[0]
    updates = rerouter.updates({topology.ports(h1)[0].link})
    tor = topology.ports(h1)[0].peer
    plans = plan_fabric(topology, scenario)
    # the cut ToR now sends h1's cells up, over every spine: onto the uplink group it already has
    (route,) = [m for m in updates[tor].modifies if m.match["dstAddr"][0] == topology.node(h1).ip]
    uplinks = {gid: ports for ports, gid in plans[tor].groups.items()}[route.params["group_id"]]
    assert sorted(topology.port(tor, p).peer for p in uplinks) == sorted(
        n for n in topology.switches if topology.node(n).kind == "spine")
    assert not updates[tor].inserts
    # the spines send h1's cells to its other ToR only: a new group of one member, divisor 1
    for spine in (n for n in topology.switches if topology.node(n).kind == "spine"):
        (group,) = [g for g in updates[spine].inserts if g.table == "FabricIngress.groups"]
        assert group.params["size"] == 1 and group.params["entropy_divisor"] == 1
        assert group.params["cell_mode"] == 2
