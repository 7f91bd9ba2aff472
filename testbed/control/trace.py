"""Where a packet goes through a planned fabric, without running it.

`FabricModel` reads the entries a fabric plan writes (routes, groups,
members, each switch's hash multiplier) and applies fabric.p4's member
choice to them, so a path is a pure function of the plan and the packet.
It is what the report's ideal (which links each ECMP flow took) and the
path-choice property tests use; a differential test holds it against the
compiled program itself (tests/unit/control/test_trace.py).

Round robin and random choice (the `_switch` spray modes) keep per-switch
state like the program's `rr_next` register and `random()`: the model
draws from its own seeded generator and its own counters.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass, field

from testbed.control.plan import SwitchPlan
from testbed.p4model.runtime import hashing
from testbed.topo.model import Topology

CELL_UDP_PORT = 4793
IP_PROTO_UDP = 17
MODE_ECMP, MODE_RR, MODE_ENTROPY, MODE_RANDOM = 0, 1, 2, 3


class TraceError(ValueError):
    """The plan does not deliver the packet (no route, a loop, a dead end)."""


@dataclass(frozen=True)
class Flow:
    """The fields fabric.p4's choices read. `sport`/`dport` are the UDP ports."""

    src: str  # host name
    dst: str
    sport: int = CELL_UDP_PORT
    dport: int = CELL_UDP_PORT
    entropy: int = 0
    cell: bool = True


@dataclass
class _Group:
    size: int
    mode: int
    divisor: int
    members: dict[int, int] = field(default_factory=dict)  # member -> port


@dataclass
class _Switch:
    multiplier: int
    routes: dict[int, int]  # destination address -> group id
    groups: dict[int, _Group]
    rr_next: dict[int, int] = field(default_factory=dict)


def flow_hash_member(src_ip: int, dst_ip: int, protocol: int, sport: int, dport: int,
                     multiplier: int, size: int) -> int:
    """fabric.p4's pick_by_flow_hash."""
    data = hashing.pack_fields([(src_ip, 32), (dst_ip, 32), (protocol, 8), (sport, 16), (dport, 16)])
    h = hashing.hash_result("crc32", data, 0, 1 << 32)
    return (((h * multiplier) & 0xFFFFFFFF) >> 16) % size


class FabricModel:
    def __init__(self, topology: Topology, plans: dict[str, SwitchPlan], seed: int = 1) -> None:
        self.topology = topology
        self.rng = random.Random(seed)
        self.switches = {name: self._read(plan) for name, plan in plans.items()}

    @staticmethod
    def _read(plan: SwitchPlan) -> _Switch:
        switch = _Switch(plan.hash_multiplier, {}, {})
        for e in plan.entries:
            if e.table == "FabricIngress.ipv4_routes":
                prefix, length = e.match["dstAddr"]
                if length != 32:
                    raise TraceError(f"{plan.switch}: the model reads host routes only, not /{length}")
                switch.routes[int(ipaddress.IPv4Address(prefix))] = e.params["group_id"]
            elif e.table == "FabricIngress.groups":
                p = e.params
                switch.groups[e.match["group_id"]] = _Group(p["size"], p["cell_mode"], p["entropy_divisor"])
        for e in plan.entries:
            if e.table == "FabricIngress.group_members":
                switch.groups[e.match["group_id"]].members[e.match["member"]] = e.params["port"]
        return switch

    def member(self, switch: str, group: _Group, group_id: int, flow: Flow, src_ip: int, dst_ip: int) -> int:
        state = self.switches[switch]
        if not flow.cell or group.mode == MODE_ECMP:
            return flow_hash_member(src_ip, dst_ip, IP_PROTO_UDP, flow.sport, flow.dport,
                                    state.multiplier, group.size)
        if group.mode == MODE_ENTROPY:
            return (flow.entropy // group.divisor) % group.size
        if group.mode == MODE_RR:
            member = state.rr_next.get(group_id, 0)
            member = 0 if member >= group.size else member
            state.rr_next[group_id] = (member + 1) % group.size
            return member
        return self.rng.randrange(1 << 16) % group.size

    def path(self, flow: Flow, nic: int = 0) -> list[str]:
        """The links (names) a packet of `flow` takes, leaving `flow.src` on NIC port `nic` (0-based)."""
        topo = self.topology
        src_ip = int(ipaddress.IPv4Address(topo.node(flow.src).ip))
        dst_ip = int(ipaddress.IPv4Address(topo.node(flow.dst).ip))
        first = topo.ports(flow.src)[nic]
        links, here = [first.link], first.peer
        for _ in range(16):
            if here == flow.dst:
                return links
            if topo.node(here).is_host:
                raise TraceError(f"{flow} reached host {here}, not {flow.dst}")
            state = self.switches[here]
            group_id = state.routes.get(dst_ip)
            if group_id is None:
                raise TraceError(f"{here} has no route to {flow.dst}")
            group = state.groups[group_id]
            port = group.members[self.member(here, group, group_id, flow, src_ip, dst_ip)]
            out = topo.port(here, port)
            links.append(out.link)
            here = out.peer
        raise TraceError(f"{flow} did not reach {flow.dst} in 16 hops: {links}")
