"""A plain-text description of a topology, for `testbed show` and reports."""

from __future__ import annotations

from testbed.topo.model import Topology


def shape_line(topo: Topology) -> str:
    s = topo.spec
    dual = ", dual-homed hosts" if s.dual_homed else ""
    if s.kind == "leaf_spine":
        return (f"leaf-spine: {s.leaves} leaves x {s.spines} spines, {s.hosts_per_leaf} host ports "
                f"per leaf, {s.uplinks_per_spine} link(s) per leaf-spine pair{dual}")
    return f"fat-tree: k={s.k}{dual}"


def counts_line(topo: Topology) -> str:
    c = topo.counts
    kinds = ", ".join(f"{n} {k}" for k, n in c.by_kind.items() if k != "host")
    return (f"{c.hosts} hosts, {c.switches} switches ({kinds}), {c.links} links "
            f"({c.host_links} host, {c.fabric_links} fabric)")


def describe(topo: Topology, example_paths: int = 3) -> str:
    """Counts, per-switch port map, addressing and a few example path sets."""
    lines = [shape_line(topo), counts_line(topo), "", "switches (device id, gRPC port, port: peer:port):"]
    for name in topo.switches:
        node = topo.node(name)
        ports = " ".join(f"{p.number}:{p.peer}:{p.peer_port}" for p in topo.ports(name))
        lines.append(f"  {name:<9} id {node.device_id:<3} grpc {node.grpc_port}  {ports}")
    lines += ["", "hosts (address, NIC port -> ToR:port, MAC):"]
    for name in topo.hosts:
        nics = "  ".join(f"{p.number} -> {p.peer}:{p.peer_port} {p.mac}" for p in topo.ports(name))
        lines.append(f"  {name:<5} {topo.node(name).ip:<12} {nics}")
    if topo.servers:
        layout = "rail-optimised: GPU i on rail i" if topo.spec.rail_optimised else "plain: one ToR per server"
        lines += ["", f"servers ({topo.gpus_per_server} GPUs each, {layout}; local channels "
                      f"{len(topo.local_links)}, GPU pairs joined directly):"]
        for server, gpus in topo.servers.items():
            where = " ".join(f"{g}@{'+'.join(topo.tors_of(g))}" for g in gpus)
            lines.append(f"  server{server:<3} {where}")
    lines += ["", "example equal-cost path sets:"]
    for src, dst in _example_pairs(topo)[:example_paths]:
        paths = topo.paths(src, dst)
        lines.append(f"  {src} -> {dst}: {len(paths)} path(s) of {len(paths[0])} links; "
                     f"first hop ports {topo.next_hops(topo.tors_of(src)[0], dst)} on "
                     f"{topo.tors_of(src)[0]}")
        for nodes in topo.node_paths(src, dst)[:4]:
            lines.append("    " + " ".join(nodes))
    return "\n".join(lines)


def _example_pairs(topo: Topology) -> list[tuple[str, str]]:
    """Farthest pair first, then one per smaller locality (same ToR group last)."""
    hosts = topo.hosts
    first = hosts[0]
    seen_lengths: set[int] = set()
    pairs = []
    for dst in reversed(hosts[1:]):
        length = len(topo.paths(first, dst)[0])
        if length not in seen_lengths:
            seen_lengths.add(length)
            pairs.append((first, dst))
    return pairs
