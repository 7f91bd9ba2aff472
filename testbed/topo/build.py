"""Turn a topology spec into a `Topology`, deterministically.

Port numbering (1..n per switch, stable across runs):

* leaf: host ports 1..hosts_per_leaf, then uplinks spine by spine, parallel
  link by parallel link: port ``hosts_per_leaf + (s-1)*U + u``.
* spine: leaf by leaf, parallel link by parallel link: ``(l-1)*U + u``.
* fat-tree edge: host ports 1..k/2, then aggregation a of its pod at ``k/2 + a``.
* aggregation: edge e of its pod at ``e``, then its k/2 cores at ``k/2 + 1..k``.
* core c: pod p at port ``p``; core c attaches to aggregation
  ``(c-1) // (k/2) + 1`` of every pod.
* host: NIC port 1 (and 2 for dual-homed hosts, on the pair's second ToR).

Host j of a ToR group uses port j of each ToR in the group.

Servers (``gpus_per_server`` G > 1): every host is one GPU with its own NIC,
numbered and addressed as above.  Plain layout: server s holds G consecutive
hosts of one ToR group.  Rail-optimised: the ToR groups, in build order, form
blocks of G; host j of group i of block b is GPU i of server
``b * hosts_per_group + j``, so GPU i of every server is on rail (ToR) i of its
block.  The GPUs of a server are joined pairwise by local links (their own
interfaces ``h<n>-nv<gpu>``, never seen by a switch).  Names are short
so Mininet interface names (``<node>-eth<port>``) stay under 15 characters:
``h<n>``, ``leaf<i>``, ``spine<i>``, ``edge<pod>_<i>``, ``agg<pod>_<i>``,
``core<i>``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from testbed.topo import addressing as addr
from testbed.topo.model import Link, LocalLink, Node, Topology
from testbed.topo.spec import FatTreeSpec, LeafSpineSpec, TopoError, TopoSpec, spec_from_dict


def build_topology(spec: TopoSpec | Mapping[str, Any]) -> Topology:
    """Build the fabric a spec (or a scenario-style `topology:` mapping) describes."""
    if isinstance(spec, Mapping):
        spec = spec_from_dict(spec)
    spec.check()
    builder = _Builder()
    if isinstance(spec, LeafSpineSpec):
        _leaf_spine(builder, spec)
    elif isinstance(spec, FatTreeSpec):
        _fat_tree(builder, spec)
    else:
        raise TopoError(f"unknown topology spec {spec!r}")
    local = _servers(builder, spec.gpus_per_server, spec.rail_optimised)
    return Topology(spec, builder.hosts + builder.switches, builder.host_links + builder.fabric_links,
                    builder.macs, local)


def _servers(b: "_Builder", gpus: int, rail: bool) -> list[LocalLink]:
    """Label hosts with their server and GPU, and join each server's GPUs pairwise."""
    if gpus == 1:
        return []
    groups: dict[int, list[int]] = {}  # global ToR-group index -> host indices, slot order
    for index, gidx in enumerate(b.host_group):
        groups.setdefault(gidx, []).append(index)
    order = [groups[g] for g in sorted(groups)]
    per_group = len(order[0])
    members: dict[int, list[int]] = {}
    if rail:
        for gi, hosts in enumerate(order):
            block, gpu = divmod(gi, gpus)
            for j, index in enumerate(hosts):
                members.setdefault(block * per_group + j + 1, []).append(index)
    else:
        flat = [index for hosts in order for index in hosts]
        for k in range(0, len(flat), gpus):
            members[k // gpus + 1] = flat[k : k + gpus]
    local = []
    for server, indices in members.items():
        for gpu, index in enumerate(indices):
            b.hosts[index] = dataclasses.replace(b.hosts[index], server=server, gpu=gpu)
        for i, ai in enumerate(indices):
            for j in range(i + 1, len(indices)):
                a, c = b.hosts[ai].name, b.hosts[indices[j]].name
                local.append(LocalLink(f"{a}~{c}", server, a, i, c, j))
    return local


class _Builder:
    def __init__(self) -> None:
        self.switches: list[Node] = []
        self.hosts: list[Node] = []
        self.host_links: list[Link] = []
        self.fabric_links: list[Link] = []
        self.macs: dict[tuple[str, int], str] = {}
        self.host_group: list[int] = []  # per host: its ToR group's global index
        self._group_ids: dict[tuple, int] = {}
        self._device_ids: dict[str, int] = {}  # switch name -> device id (the first of that name)
        self._host_ips: dict[str, str] = {}

    def switch(self, name: str, kind: str, pod: int | None = None) -> str:
        device_id = len(self.switches) + 1
        self.switches.append(
            Node(name, kind, device_id, addr.grpc_port(device_id), addr.thrift_port(device_id), pod=pod)
        )
        self._device_ids.setdefault(name, device_id)
        return name

    def host(self, tors: list[str], ip: str, pod: int | None, group: int, tor_port: int) -> None:
        name = f"h{len(self.hosts) + 1}"
        self.hosts.append(Node(name, "host", ip=ip, pod=pod, group=group))
        self._host_ips[name] = ip
        self.host_group.append(self._group_ids.setdefault(tuple(tors), len(self._group_ids)))
        for nic_port, tor in enumerate(tors, start=1):
            self.link(name, nic_port, tor, tor_port, "host", f"{name}-{tor}")

    def link(self, a: str, a_port: int, b: str, b_port: int, tier: str, name: str) -> None:
        bucket = self.host_links if tier == "host" else self.fabric_links
        bucket.append(Link(name, a, a_port, b, b_port, tier))
        for end, port in ((a, a_port), (b, b_port)):
            self.macs[(end, port)] = self._mac(end, port)

    def _mac(self, node: str, port: int) -> str:
        """A switch port's MAC by its device id, a host port's by its address (looked up by name:
        a scan per link end made a 6,400-host fabric's build quadratic)."""
        if node in self._device_ids:
            return addr.switch_port_mac(self._device_ids[node], port)
        return addr.host_mac(self._host_ips[node], port)


def _leaf_spine(b: _Builder, spec: LeafSpineSpec) -> None:
    hpl, uplinks = spec.hosts_per_leaf, spec.uplinks_per_spine
    leaves = [b.switch(f"leaf{i}", "leaf") for i in range(1, spec.leaves + 1)]
    spines = [b.switch(f"spine{i}", "spine") for i in range(1, spec.spines + 1)]
    if spec.dual_homed:
        groups = [leaves[i : i + 2] for i in range(0, len(leaves), 2)]
    else:
        groups = [[leaf] for leaf in leaves]
    for g, tors in enumerate(groups, start=1):
        for j in range(1, hpl + 1):
            b.host(tors, addr.host_ip(g, 0, j), None, g, j)
    for li, leaf in enumerate(leaves, start=1):
        for si, spine in enumerate(spines, start=1):
            for u in range(1, uplinks + 1):
                name = f"{leaf}-{spine}" + (f"/{u}" if uplinks > 1 else "")
                b.link(leaf, hpl + (si - 1) * uplinks + u, spine, (li - 1) * uplinks + u,
                       "fabric", name)


def _fat_tree(b: _Builder, spec: FatTreeSpec) -> None:
    k, half = spec.k, spec.k // 2
    pods = range(1, k + 1)
    edges = {p: [b.switch(f"edge{p}_{e}", "edge", p) for e in range(1, half + 1)] for p in pods}
    aggs = {p: [b.switch(f"agg{p}_{a}", "aggregation", p) for a in range(1, half + 1)] for p in pods}
    cores = [b.switch(f"core{c}", "core") for c in range(1, half * half + 1)]
    for p in pods:
        if spec.dual_homed:
            groups = [edges[p][i : i + 2] for i in range(0, half, 2)]
        else:
            groups = [[edge] for edge in edges[p]]
        for g, tors in enumerate(groups, start=1):
            for j in range(1, half + 1):
                b.host(tors, addr.host_ip(p, g, j), p, g, j)
    for p in pods:
        for e, edge in enumerate(edges[p], start=1):
            for a, agg in enumerate(aggs[p], start=1):
                b.link(edge, half + a, agg, e, "fabric", f"{edge}-{agg}")
    for c, core in enumerate(cores, start=1):
        a = (c - 1) // half + 1
        for p in pods:
            agg = aggs[p][a - 1]
            b.link(agg, half + (c - 1) % half + 1, core, p, "fabric", f"{agg}-{core}")
