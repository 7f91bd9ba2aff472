"""Fast reroute: the routes a fabric takes while some of its links are down.

The controller's answer to a port going down (or coming back): every
switch's next hops towards every host, recomputed on the topology without
the dead links, as groups of the same form as the plan's
(`testbed.control.plan`: same member order and entropy divisor rules), so
entropy digits keep their meaning on every path that is left.  Updates are
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
from testbed.control.plan import CELL_MODES, SwitchPlan, _group_id
from testbed.topo.entropy import group_choice, layout_of
from testbed.topo.model import Topology


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

    def _members(self, topology: Topology, switch: str) -> dict[str, tuple[tuple[int, ...], int]]:
        out = {}
        for host in self.topology.hosts:
            hops = topology.next_hops(switch, host)
            if hops:
                divisor, members = group_choice(topology, self.layout, switch, hops)
                out[host] = (tuple(members), divisor)
        return out

    def updates(self, dead: set[str] | frozenset[str]) -> dict[str, SwitchUpdate]:
        """What each switch must be written for exactly `dead` links to be down (a host
        that the cut leaves unreachable from a switch keeps its route there)."""
        reduced = self.topology.without_links(dead) if dead else self.topology
        out = {}
        for switch in self.topology.switches:
            update = SwitchUpdate(switch, groups=dict(self.groups[switch]))
            current = self.routes[switch]
            for host, (members, divisor) in self._members(reduced, switch).items():
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
        gid = _group_id(scratch, members, self.cell_mode, macs, divisor)
        update.inserts += scratch.entries
        update.groups[members] = (gid, divisor)
        return gid

    def commit(self, dead: set[str] | frozenset[str], written: dict[str, SwitchUpdate]) -> None:
        """The updates for `dead` were written: they are the switches' state now."""
        self.dead = frozenset(dead)
        for switch, update in written.items():
            self.groups[switch] = update.groups
            self.routes[switch].update(update.moved)
