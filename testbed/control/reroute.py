"""Fast reroute: the routes a fabric takes while some of its links are down.

The controller's answer to a port going down (or coming back): every
switch's next hops towards every host, recomputed on the topology without
the dead links by up*/down* routing (a path climbs, then descends, and
never turns up again: the valley-free paths of a fat-tree, which on an
intact fabric are exactly the plan's shortest paths), as groups of the same
form as the plan's (`testbed.control.plan`: same member order and entropy
divisor rules), so entropy digits keep their meaning on every path left.  Updates are
make-before-break: a group a route needs that the switch does not have yet
is inserted first, then the route is modified to point to it; groups are
never deleted while a run lasts (a route may come back to them).  When every
link is back, each route points to the plan's own group again.

Pure: `updates()` returns table entries, `commit()` records that they were
written; `testbed.emulation.reroute` writes them to running switches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testbed.control.p4runtime_client import TableEntrySpec
from testbed.control.plan import CELL_MODES, SwitchPlan, add_group
from testbed.topo.entropy import TIER, group_choice, layout_of
from testbed.topo.model import Topology


INFINITE = float("inf")


def updown_distances(topology: Topology, host: str) -> tuple[dict[str, float], dict[str, float]]:
    """(down, best) per node: hops to `host` going only down the tiers, and going up first
    then only down (up*/down*); infinite where no such path is left."""
    tier = {n: TIER[node.kind] for n, node in topology.nodes.items()}
    nodes = sorted(topology.nodes, key=lambda n: tier[n])
    down = {n: INFINITE for n in nodes}
    down[host] = 0
    for n in nodes:
        if topology.nodes[n].is_host:
            continue
        below = [down[m] for m in topology.graph.neighbors(n) if tier[m] < tier[n] and (m == host or tier[m] > 0)]
        down[n] = 1 + min(below, default=INFINITE)
    best = dict(down)
    for n in reversed(nodes):
        if topology.nodes[n].is_host:
            continue
        above = [best[u] for u in topology.graph.neighbors(n) if tier[u] > tier[n]]
        best[n] = min(down[n], 1 + min(above, default=INFINITE))
    return down, best


def updown_next_hops(topology: Topology, switch: str, host: str, distances=None) -> list[int]:
    """Ports of `switch` on a shortest up*/down* path to `host` (down when it can go down)."""
    down, best = distances or updown_distances(topology, host)
    if best[switch] == INFINITE:
        return []
    here = TIER[topology.node(switch).kind]
    out = []
    for port in topology.ports(switch):
        peer, there = port.peer, TIER[topology.node(port.peer).kind]
        if topology.node(peer).is_host and peer != host:
            continue
        if down[switch] == best[switch]:
            if there < here and down[peer] == down[switch] - 1:
                out.append(port.number)
        elif there > here and 1 + best[peer] == best[switch]:
            out.append(port.number)
    return out


@dataclass
class SwitchUpdate:
    switch: str
    inserts: list[TableEntrySpec] = field(default_factory=list)  # new groups and their members
    modifies: list[TableEntrySpec] = field(default_factory=list)  # routes moved to another group
    moved: dict[str, tuple[tuple[int, ...], int]] = field(default_factory=dict)  # host -> (members, divisor)
    groups: dict[tuple[int, ...], tuple[int, int]] = field(default_factory=dict)  # the switch's groups after

    def __bool__(self) -> bool:
        return bool(self.modifies)


class Rerouter:
    def __init__(self, topology: Topology, scenario, plans: dict[str, SwitchPlan]) -> None:
        self.topology = topology
        self.layout = layout_of(topology)
        self.cell_mode = CELL_MODES[scenario.fabric.load_balancing]
        self.dead: frozenset[str] = frozenset()
        # Per switch: the groups it has (member ports -> (id, divisor)) and, per host, the
        # (members, divisor) its route points to now.
        self.routes = {s: self._members(topology, s) for s in topology.switches}
        self.groups = {}
        for s, plan in plans.items():
            divisors = {members: divisor for members, divisor in self.routes[s].values()}
            self.groups[s] = {ports: (gid, divisors.get(ports, 1)) for ports, gid in plan.groups.items()}

    def _members(self, topology: Topology, switch: str, distances=None) -> dict[str, tuple[tuple[int, ...], int]]:
        """host -> (member ports, divisor) of `switch`'s route; the plan's shortest paths on the
        intact fabric, up*/down* paths (`distances[host]`) on a cut one."""
        out = {}
        for host in self.topology.hosts:
            hops = (topology.next_hops(switch, host) if distances is None
                    else updown_next_hops(topology, switch, host, distances[host]))
            if hops:
                divisor, members = group_choice(topology, self.layout, switch, hops)
                out[host] = (tuple(members), divisor)
        return out

    def updates(self, dead: set[str] | frozenset[str]) -> dict[str, SwitchUpdate]:
        """What each switch must be written for exactly `dead` links to be down (a host
        that the cut leaves unreachable from a switch keeps its route there)."""
        reduced = self.topology.without_links(dead) if dead else self.topology
        distances = {h: updown_distances(reduced, h) for h in reduced.hosts} if dead else None
        out = {}
        for switch in self.topology.switches:
            update = SwitchUpdate(switch, groups=dict(self.groups[switch]))
            current = self.routes[switch]
            for host, (members, divisor) in self._members(reduced, switch, distances).items():
                if current.get(host) == (members, divisor):
                    continue
                known = update.groups.get(members)
                gid = known[0] if known is not None and known[1] == divisor else \
                    self._new_group(switch, members, divisor, update)
                update.modifies.append(TableEntrySpec(
                    "FabricIngress.ipv4_routes", {"dstAddr": (self.topology.node(host).ip, 32)},
                    "FabricIngress.route_to_group", {"group_id": gid}))
                update.moved[host] = (members, divisor)
            if update:
                out[switch] = update
        return out

    def _new_group(self, switch: str, members: tuple[int, ...], divisor: int, update: SwitchUpdate) -> int:
        """A group the switch does not have: its entries go first in `update.inserts`."""
        scratch = SwitchPlan(switch)
        used = max((gid for gid, _ in update.groups.values()), default=0)
        scratch.groups = {("taken", i): i for i in range(used)}  # so the next id is used + 1
        macs = {p.number: self.topology.port(p.peer, p.peer_port).mac for p in self.topology.ports(switch)}
        gid = add_group(scratch, members, self.cell_mode, macs, divisor)
        update.inserts += scratch.entries
        update.groups[members] = (gid, divisor)
        return gid

    def reset(self, switch: str, plan: SwitchPlan) -> None:
        """The switch was restarted and configured from its plan: that is its state now."""
        self.routes[switch] = self._members(self.topology, switch)
        divisors = {members: divisor for members, divisor in self.routes[switch].values()}
        self.groups[switch] = {ports: (gid, divisors.get(ports, 1)) for ports, gid in plan.groups.items()}

    def commit(self, dead: set[str] | frozenset[str], written: dict[str, SwitchUpdate]) -> None:
        """The updates for `dead` were written: they are the switches' state now."""
        self.dead = frozenset(dead)
        for switch, update in written.items():
            self.groups[switch] = update.groups
            self.routes[switch].update(update.moved)
