"""What every directed link carried, idle ones included, split into data and control.

Why: a link that carried nothing is a result (ECMP left it idle), not a gap
in the data; and a link's utilisation is only comparable with an ideal when
it says how much of it was DATA cells and how much ACKs, NACKs and credits.

Sources, per direction of each cable (keys `node:port->peer`):
  * switch egress (`leaf1:3->spine1`, `leaf1:1->h1`): total bytes from the
    fabric program's tx counter between the first and last telemetry sample;
    the data / control split from the traffic manager's per-class counts
    (builtin target: every packet it accepted, by cell type, over the run);
  * host egress (`h1:1->leaf1`): total bytes from the ToR's rx counter on
    that port; the split from the host agent's own per-type send counts times
    each type's fixed wire size (exact for a single-NIC host whose qdisc
    dropped nothing).
`other` is what the total holds beyond the cells (pings, ARP).  Utilisation
is bytes x 8 over the traffic window at the link's rate.  On bmv2 a link is a
queue rate in packets/s, one data cell's wire size per packet of any size,
so there a switch port's utilisation is packets x that size (`slot_bytes`)
over the same capacity: the share of its packet slots used.  A host's egress
is its agent's pacer, which sends bits on either target.  Bytes stay bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from testbed.cells import wire

CELL_TYPES = wire.TYPE_NAMES  # type number -> name
SHORT_KIND = {"leaf": "leaf", "spine": "spine", "edge": "edge", "aggregation": "agg", "core": "core"}
TIER_LEVEL = {"host": 0, "leaf": 1, "edge": 1, "aggregation": 2, "spine": 2, "core": 3}


@dataclass
class LinkLoad:
    link: str  # node:port->peer
    tier: str  # host->tor, tor->host, leaf->spine, spine->leaf, edge->agg, agg->core, core->agg, agg->edge
    source: str
    peer: str
    rate_mbps: float
    total_bytes: int
    data_bytes: int | None  # None: this target or host does not say
    control_bytes: int | None
    utilisation: float
    data_utilisation: float | None
    control_utilisation: float | None

    @property
    def idle(self) -> bool:
        """Carried no DATA cell (no byte at all when the split is unknown)."""
        return (self.data_bytes if self.data_bytes is not None else self.total_bytes) == 0

    def to_json(self) -> dict:
        return asdict(self)


def cell_wire_bytes(cell_type: int, cell_size: int) -> int:
    return wire.wire_bytes(cell_size, cell_type)


def tier_of(topology, source: str, peer: str) -> str:
    a, b = topology.node(source), topology.node(peer)
    if a.is_host:
        return "host->tor"
    if b.is_host:
        return "tor->host"
    return f"{SHORT_KIND[a.kind]}->{SHORT_KIND[b.kind]}"


def is_up(topology, source: str, peer: str) -> bool:
    return TIER_LEVEL[topology.node(peer).kind] > TIER_LEVEL[topology.node(source).kind]


def _counter_delta(samples: list[dict], switch: str, key: str, unit: str = "bytes") -> dict[int, int]:
    """Bytes (or packets) per port of `switch` between its first and last sample ("tx" or "rx"):
    the sum of its increments, where a counter lower than the one before started again from
    zero (the switch was restarted)."""
    series = sorted((s for s in samples if s["switch"] == switch), key=lambda s: s["t_s"])
    out: dict[int, int] = {}
    for before, after in zip(series, series[1:]):
        for p, counts in after[key].items():
            now, then = counts[unit], before[key].get(p, {unit: 0})[unit]
            out[int(p)] = out.get(int(p), 0) + (now - then if now >= then else now)
    if series:
        for p in series[0][key]:
            out.setdefault(int(p), 0)
    return out


def _tm_split(queues: list[dict], port: int) -> tuple[int, int] | None:
    """(data bytes, control bytes) a switch's traffic manager accepted for `port`, or None."""
    rows = [q for q in queues if q.get("port") == port]
    if not rows or any("by_class" not in q for q in rows):
        return None
    data = control = 0
    for q in rows:
        for cls, counts in q["by_class"].items():
            cls = int(cls)
            if cls == wire.DATA:
                data += counts["bytes"]
            elif cls in CELL_TYPES:
                control += counts["bytes"]
    return data, control


def host_split(stats: dict | None, cell_size: int, slot_bytes: int | None = None,
                skip: frozenset = frozenset()) -> tuple[int, int] | None:
    """(data bytes, control bytes) a host agent handed to its NIC, from its per-type send counts.
    `slot_bytes`: what every packet costs a link whatever its size (bmv2's packets/s queues);
    `skip`: cell types left out."""
    if not stats or "tx_counts" not in stats:
        return None
    by_name = {name: t for t, name in CELL_TYPES.items()}
    data = control = 0
    for key, count in stats["tx_counts"].items():
        cell_type = by_name.get(key.removeprefix("tx_"))
        if cell_type is None or cell_type in skip:
            continue
        size = slot_bytes or cell_wire_bytes(cell_type, cell_size)
        if cell_type == wire.DATA:
            data += count * size
        else:
            control += count * size
    return data, control


def link_loads(topology, scenario: dict, samples: list[dict], tm_stats: dict, host_stats: dict[str, dict],
               window_s: float | None, slot_bytes: int | None = None) -> list[LinkLoad]:
    """Every directed link of the fabric, hosts' links included, in topology order.
    `slot_bytes`: bmv2's packets/s links, where utilisation counts packets (module docstring)."""
    links_cfg = scenario["links"]
    cell_size = scenario["fabric"]["cell_size"]
    tx = {s: _counter_delta(samples, s, "tx") for s in topology.switches}
    rx = {s: _counter_delta(samples, s, "rx") for s in topology.switches}
    if slot_bytes:
        tx_packets = {s: _counter_delta(samples, s, "tx", "packets") for s in topology.switches}
    out = []
    for node in list(topology.switches) + list(topology.hosts):
        for port in topology.ports(node):
            rate = links_cfg["host" if port.tier == "host" else "fabric"]["rate_mbps"]
            if topology.node(node).is_host:  # its agent's pacer sends bits, on either target
                total = rx.get(port.peer, {}).get(port.peer_port, 0)
                packets = None
                single_nic = len(topology.ports(node)) == 1
                split = host_split(host_stats.get(node), cell_size) if single_nic else None
            else:
                total = tx[node].get(port.number, 0)
                packets = tx_packets[node].get(port.number, 0) if slot_bytes else None
                split = _tm_split((tm_stats.get(node) or {}).get("queues", []), port.number)
            used = total if packets is None else packets * slot_bytes
            out.append(_load(topology, node, port, rate, total, split, window_s, used))
    return out


def _load(topology, node, port, rate_mbps, total, split, window_s, used) -> LinkLoad:
    """`used`: the bytes of capacity the link spent (its bytes, or on bmv2 its packet slots)."""
    capacity_bytes = rate_mbps * 1e6 / 8 * window_s if window_s else None

    def share(nbytes):
        return None if nbytes is None or not capacity_bytes else nbytes / capacity_bytes

    data, control = split if split is not None else (None, None)
    return LinkLoad(f"{node}:{port.number}->{port.peer}", tier_of(topology, node, port.peer), node, port.peer,
                    rate_mbps, total, data, control, share(used) or 0.0, share(data), share(control))


def by_tier(loads: list[LinkLoad]) -> dict[str, dict]:
    """Per tier and direction: links, idle links, mean / min / max utilisation (total and data)."""
    tiers: dict[str, list[LinkLoad]] = {}
    for load in loads:
        tiers.setdefault(load.tier, []).append(load)
    out = {}
    for tier, members in tiers.items():
        util = [m.utilisation for m in members]
        data = [m.data_utilisation for m in members if m.data_utilisation is not None]
        out[tier] = {"links": len(members), "idle_links": sum(m.idle for m in members),
                     "utilisation_mean": sum(util) / len(util), "utilisation_min": min(util),
                     "utilisation_max": max(util),
                     "data_utilisation_mean": sum(data) / len(data) if len(data) == len(members) else None}
    return out


def sibling_groups(topology, loads: list[LinkLoad]) -> dict[str, list[LinkLoad]]:
    """Equal-cost siblings: links leaving one node upwards (any peer of the next tier up), or
    downwards to the same peer (parallel cables); a host's NIC ports are siblings too."""
    groups: dict[str, list[LinkLoad]] = {}
    for load in loads:
        if is_up(topology, load.source, load.peer):
            key = f"{load.source} {load.tier}"
        else:
            key = f"{load.source}->{load.peer}"
        groups.setdefault(key, []).append(load)
    return {k: v for k, v in groups.items() if len(v) > 1}


def idle_siblings(topology, loads: list[LinkLoad]) -> list[str]:
    """Links that carried no data while an equal-cost sibling did."""
    out = []
    for members in sibling_groups(topology, loads).values():
        if any(not m.idle for m in members):
            out += [m.link for m in members if m.idle]
    return sorted(out)
