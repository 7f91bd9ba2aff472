"""Which switches share a fabric process: balanced groups cutting the fewest cables.

A cable between two switches of one fabric process is a hand-off in memory;
every other cable is a veth pair and costs each frame two syscalls and a
wake-up of the receiving process. So the switches are split into groups of
(nearly) equal size, one per process, with as few cables between groups as
the split finds: recursive Kernighan-Lin bisection of the switch graph
(networkx), each cable a unit of weight, with a fixed seed so the same
topology always gets the same placement. Equal switch counts are the
balance: a finer one (by expected packets) would need the workload.
A fat-tree bisects along pods: a k=4 tree in two processes cuts 8 of its 32
switch cables.

A fabric spread over several machines (a scenario's `placement.servers`) is
split the same way twice: first the switches into one group per server (the
cut cables are the ones that cross between machines, in tunnels, so the
fewest is best), unless the scenario names each server's switches; then each
server's switches into that server's fabric processes. A host runs on the
server of its first ToR.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
from networkx.algorithms.community import kernighan_lin_bisection

from testbed.topo.model import Topology

SEED = 1


@dataclass(frozen=True)
class Placement:
    """groups[i] = the switches of process i; in_memory = names of the cables inside a group."""

    groups: tuple[tuple[str, ...], ...]
    in_memory: frozenset[str]
    # server_of[i] = the index of the server process i runs on (empty: one machine)
    server_of: tuple[int, ...] = ()

    def server_of_switch(self, switch: str) -> int:
        """The index of the server `switch` runs on (0 on one machine)."""
        return self.server_of[self.process_of(switch)] if self.server_of else 0

    def server_switches(self, server: int) -> tuple[str, ...]:
        """The switches on server `server`, process by process."""
        if not self.server_of:
            return tuple(s for group in self.groups for s in group)
        return tuple(s for i, group in enumerate(self.groups) if self.server_of[i] == server for s in group)

    def cross_server(self, topology: Topology) -> list[str]:
        """Names of the cables whose two switches run on different servers (tunnelled)."""
        return [link.name for link in topology.links if link.tier == "fabric"
                and self.server_of_switch(link.a) != self.server_of_switch(link.b)]

    def process_of(self, switch: str) -> int:
        for index, group in enumerate(self.groups):
            if switch in group:
                return index
        raise KeyError(switch)

    def cut(self, topology: Topology) -> int:
        """Cables between switches of different processes."""
        return sum(1 for link in topology.links if link.tier == "fabric" and link.name not in self.in_memory
                   and self.process_of(link.a) != self.process_of(link.b))


def _switch_graph(topology: Topology, switches) -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from(switches)
    for link in topology.links:
        if link.tier == "fabric" and link.a in graph and link.b in graph:
            weight = graph.get_edge_data(link.a, link.b, {"weight": 0})["weight"]
            graph.add_edge(link.a, link.b, weight=weight + 1)
    return graph


def _split(topology: Topology, switches: list[str], parts: int) -> list[list[str]]:
    if parts <= 1 or len(switches) <= 1:
        return [sorted(switches, key=_order(topology))]
    left, right = kernighan_lin_bisection(_switch_graph(topology, switches), weight="weight", seed=SEED)
    left, right = sorted(left, key=_order(topology)), sorted(right, key=_order(topology))
    if _order(topology)(right[0]) < _order(topology)(left[0]):
        left, right = right, left
    half = parts // 2
    return _split(topology, left, parts - half) + _split(topology, right, half)


def _order(topology: Topology):
    index = {name: i for i, name in enumerate(topology.switches)}
    return index.__getitem__


def place(topology: Topology, processes: int, veth_links=frozenset(), alone=frozenset()) -> Placement:
    """`processes` groups of switches (fewer when there are fewer switches); cables named in
    `veth_links` stay veth pairs even inside a group (a fault takes them down with `ip link`);
    each switch in `alone` gets a process of its own (a fault stops and restarts it)."""
    shared = [s for s in topology.switches if s not in alone]
    processes = max(1, min(processes, len(shared))) if shared else 0
    groups = tuple(tuple(g) for g in _split(topology, shared, processes) if g) if shared else ()
    groups += tuple((s,) for s in topology.switches if s in alone)
    member = {s: i for i, group in enumerate(groups) for s in group}
    in_memory = frozenset(link.name for link in topology.links
                          if link.tier == "fabric" and link.name not in veth_links
                          and member[link.a] == member[link.b])
    return Placement(groups, in_memory)


def split_servers(topology: Topology, servers: int) -> list[list[str]]:
    """The switches of each of `servers` machines: balanced groups cutting the fewest cables."""
    return [g for g in _split(topology, list(topology.switches), servers) if g]


def place_on_servers(topology: Topology, server_switches: list[list[str]], processes: list[int | None],
                     veth_links=frozenset(), alone=frozenset()) -> Placement:
    """Each server's switches (`server_switches[i]`) in `processes[i]` groups of their own (None: one
    process per switch), as `place` does on one machine; `server_of` says whose each group is."""
    groups: list[tuple[str, ...]] = []
    owner: list[int] = []
    for index, (switches, count) in enumerate(zip(server_switches, processes)):
        if count is None:
            mine = [(s,) for s in sorted(switches, key=_order(topology))]
        else:
            shared = [s for s in switches if s not in alone]
            count = max(1, min(count, len(shared))) if shared else 0
            mine = [tuple(g) for g in _split(topology, shared, count) if g] if shared else []
            mine += [(s,) for s in sorted(switches, key=_order(topology)) if s in alone]
        groups += mine
        owner += [index] * len(mine)
    member = {s: i for i, group in enumerate(groups) for s in group}
    in_memory = frozenset(link.name for link in topology.links
                          if link.tier == "fabric" and link.name not in veth_links
                          and member[link.a] == member[link.b])
    return Placement(tuple(groups), in_memory, tuple(owner))
