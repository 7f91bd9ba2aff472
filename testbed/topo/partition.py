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
