"""The built topology: typed nodes, numbered ports, links and path sets.

A `Topology` is immutable data over a networkx MultiGraph (parallel links
are separate edges keyed by link name).  Path sets never transit a host:
only the two end hosts of a path may be hosts, which matters for dual-homed
hosts whose two ToRs would otherwise look joined through the host.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator

import networkx as nx

from testbed.topo.spec import TopoError, TopoSpec

SWITCH_KINDS = ("leaf", "spine", "edge", "aggregation", "core")


@dataclass(frozen=True)
class Node:
    name: str
    kind: str  # host | leaf | spine | edge | aggregation | core
    device_id: int | None = None  # switches: 1..n
    grpc_port: int | None = None
    thrift_port: int | None = None
    ip: str | None = None  # hosts
    pod: int | None = None  # fat-tree edge/aggregation switches and hosts
    group: int | None = None  # ToR group of a host: leaf, leaf pair, edge or edge pair
    server: int | None = None  # hosts on multi-GPU servers: the server (1-based)
    gpu: int | None = None  # and the GPU's index in it (0..G-1; its rail when rail-optimised)

    @property
    def is_host(self) -> bool:
        return self.kind == "host"


@dataclass(frozen=True)
class Link:
    """One cable; `a` is the lower-tier end (host below leaf below spine)."""

    name: str
    a: str
    a_port: int
    b: str
    b_port: int
    tier: str  # "host" (host-ToR) or "fabric" (switch-switch)

    def port_on(self, node: str) -> int:
        if node == self.a:
            return self.a_port
        if node == self.b:
            return self.b_port
        raise TopoError(f"link {self.name} does not touch {node}")

    def peer_of(self, node: str) -> str:
        return self.b if node == self.a else self.a


@dataclass(frozen=True)
class LocalLink:
    """The intra-server channel between two GPUs of one server (an NVLink model).

    It is not a fabric cable: no switch sees it, it is not in `links`, the
    graph or any path set; `a` is the GPU with the lower index.  Each end is a
    separate interface of its host (`a_interface`, `b_interface`).
    """

    name: str
    server: int
    a: str
    a_gpu: int
    b: str
    b_gpu: int

    def peer_of(self, host: str) -> str:
        return self.b if host == self.a else self.a


@dataclass(frozen=True)
class Port:
    node: str
    number: int
    mac: str
    peer: str
    peer_port: int
    link: str
    tier: str


@dataclass(frozen=True)
class Path:
    """An equal-cost path; parallel links make distinct paths over the same nodes.

    `ports[i]` is (egress port on nodes[i], ingress port on nodes[i+1]).
    """

    nodes: tuple[str, ...]
    ports: tuple[tuple[int, int], ...]
    links: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.links)


@dataclass(frozen=True)
class Counts:
    hosts: int
    switches: int
    links: int
    host_links: int
    fabric_links: int
    by_kind: dict[str, int] = field(default_factory=dict)


class Topology:
    """Nodes, ports and links of one fabric, with path and next-hop queries."""

    def __init__(self, spec: TopoSpec, nodes: list[Node], links: list[Link], macs: dict,
                 local_links: list[LocalLink] = ()):
        self.spec = spec
        self._macs = macs
        self.local_links: tuple[LocalLink, ...] = tuple(local_links)
        self.nodes: dict[str, Node] = {n.name: n for n in nodes}
        self.links: tuple[Link, ...] = tuple(links)
        self._links_by_name = {link.name: link for link in links}
        self._ports: dict[str, dict[int, Port]] = {n.name: {} for n in nodes}
        self.graph = nx.MultiGraph()
        for node in nodes:
            self.graph.add_node(node.name, kind=node.kind, node=node)
        for link in links:
            self.graph.add_edge(link.a, link.b, key=link.name, link=link)
            for end, port, peer, peer_port in (
                (link.a, link.a_port, link.b, link.b_port),
                (link.b, link.b_port, link.a, link.a_port),
            ):
                if port in self._ports[end]:
                    raise TopoError(f"port {port} of {end} is used twice")
                self._ports[end][port] = Port(
                    end, port, macs[(end, port)], peer, peer_port, link.name, link.tier
                )
        self._dist_cache: dict[str, dict[str, int]] = {}

    def without_links(self, names: set[str] | frozenset[str]) -> "Topology":
        """The same fabric with these links cut (fast reroute plans routes on it)."""
        unknown = sorted(set(names) - set(self._links_by_name))
        if unknown:
            raise TopoError(f"no link named {unknown[0]!r} in this topology")
        return Topology(self.spec, list(self.nodes.values()), [link for link in self.links if link.name not in names],
                        self._macs, self.local_links)

    # -- nodes and ports ---------------------------------------------------
    @property
    def hosts(self) -> list[str]:
        return [n.name for n in self.nodes.values() if n.is_host]

    @property
    def switches(self) -> list[str]:
        return [n.name for n in self.nodes.values() if not n.is_host]

    def node(self, name: str) -> Node:
        try:
            return self.nodes[name]
        except KeyError:
            raise TopoError(f"no node named {name!r} in this topology") from None

    def ports(self, node: str) -> list[Port]:
        self.node(node)
        return [self._ports[node][p] for p in sorted(self._ports[node])]

    def port(self, node: str, number: int) -> Port:
        self.node(node)
        try:
            return self._ports[node][number]
        except KeyError:
            raise TopoError(f"{node} has no port {number}") from None

    def link(self, name: str) -> Link:
        try:
            return self._links_by_name[name]
        except KeyError:
            raise TopoError(f"no link named {name!r} in this topology") from None

    def tors_of(self, host: str) -> list[str]:
        """The ToR switches a host's NIC ports attach to, in NIC port order."""
        if not self.node(host).is_host:
            raise TopoError(f"{host} is a switch, not a host")
        return [p.peer for p in self.ports(host)]

    # -- servers (gpus_per_server > 1) ----------------------------------------
    @property
    def gpus_per_server(self) -> int:
        return getattr(self.spec, "gpus_per_server", 1)

    @cached_property
    def servers(self) -> dict[int, tuple[str, ...]]:
        """Server number -> its GPUs' host names in GPU order; empty without servers."""
        out: dict[int, list[str]] = {}
        for node in self.nodes.values():
            if node.is_host and node.server is not None:
                out.setdefault(node.server, []).append(node.name)
        return {s: tuple(sorted(hs, key=lambda h: self.nodes[h].gpu)) for s, hs in sorted(out.items())}

    def same_server(self, a: str, b: str) -> bool:
        sa, sb = self.node(a).server, self.node(b).server
        return sa is not None and sa == sb

    def local_link(self, a: str, b: str) -> LocalLink | None:
        """The local channel joining two GPUs of one server, or None."""
        for link in self.local_links:
            if {link.a, link.b} == {a, b}:
                return link
        return None

    def local_peers(self, host: str) -> list[str]:
        return [link.peer_of(host) for link in self.local_links if host in (link.a, link.b)]

    @cached_property
    def counts(self) -> Counts:
        tiers = Counter(link.tier for link in self.links)
        return Counts(
            hosts=len(self.hosts),
            switches=len(self.switches),
            links=len(self.links),
            host_links=tiers["host"],
            fabric_links=tiers["fabric"],
            by_kind=dict(Counter(n.kind for n in self.nodes.values())),
        )

    # -- paths -------------------------------------------------------------
    def _distances_to(self, dst: str) -> dict[str, int]:
        """Hop distance of every node to `dst`, never passing through another host."""
        if dst not in self._dist_cache:
            if not self.node(dst).is_host:
                raise TopoError(f"{dst} is a switch; paths and next hops are towards hosts")
            dist = {dst: 0}
            queue = deque([dst])
            while queue:
                here = queue.popleft()
                if here != dst and self.nodes[here].is_host:
                    continue  # reached, but hosts do not forward
                for peer in self.graph.neighbors(here):
                    if peer not in dist:
                        dist[peer] = dist[here] + 1
                        queue.append(peer)
            self._dist_cache[dst] = dist
        return self._dist_cache[dst]

    def _downhill(self, here: str, dst: str) -> Iterator[Link]:
        """Links from `here` one hop closer to `dst`, in port order."""
        dist = self._distances_to(dst)
        for port in self.ports(here):
            peer = port.peer
            if dist.get(peer) == dist[here] - 1 and (peer == dst or not self.nodes[peer].is_host):
                yield self._links_by_name[port.link]

    def paths(self, src: str, dst: str) -> list[Path]:
        """All equal-cost shortest paths from host `src` to host `dst`.

        A path is a sequence of links, so parallel links count separately: a
        leaf-spine of S spines with U links per leaf-spine pair gives S*U*U
        paths between hosts on different leaves (S*U choices at the source
        leaf, U at the spine); `node_paths` gives the S node sequences.
        """
        if not self.node(src).is_host:
            raise TopoError(f"{src} is a switch; paths run between hosts")
        dist = self._distances_to(dst)
        if src == dst:
            return [Path((src,), (), ())]
        if src not in dist:
            return []
        found: list[Path] = []

        def walk(nodes: list[str], ports: list[tuple[int, int]], links: list[str]) -> None:
            here = nodes[-1]
            if here == dst:
                found.append(Path(tuple(nodes), tuple(ports), tuple(links)))
                return
            for link in self._downhill(here, dst):
                peer = link.peer_of(here)
                walk(
                    nodes + [peer],
                    ports + [(link.port_on(here), link.port_on(peer))],
                    links + [link.name],
                )

        walk([src], [], [])
        return found

    def node_paths(self, src: str, dst: str) -> list[tuple[str, ...]]:
        """The distinct node sequences of `paths` (parallel links merged), in order."""
        return list(dict.fromkeys(p.nodes for p in self.paths(src, dst)))

    def next_hops(self, switch: str, dst_host: str) -> list[int]:
        """Ports of `switch` on a shortest path to `dst_host`: its ECMP/spray group."""
        if self.node(switch).is_host:
            raise TopoError(f"{switch} is a host; next hops are asked of switches")
        if switch not in self._distances_to(dst_host):
            return []
        return [link.port_on(switch) for link in self._downhill(switch, dst_host)]
