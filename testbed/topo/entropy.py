"""How a cell's 16-bit entropy value picks its path, one digit per choice.

A path between hosts on different ToR groups makes up to six independent
choices.  The entropy value is read as a mixed-radix number with one digit
per choice, lowest first:

====  =====================================  ==========================
digit  choice                                 radix
====  =====================================  ==========================
nic    the source host's NIC port             NIC ports per host (1, 2)
dtor   the destination ToR of a dual-homed    ToRs per host group (1, 2)
       destination (made by the spine / agg)
pdown  the parallel link down to that ToR     links per leaf-spine pair
pup    the parallel link up from the source   links per leaf-spine pair
       ToR
tier1  the ToR's uplink neighbour (spine or   spines, or k/2
       aggregation position)
tier2  the aggregation switch's core          k/2 (1 on a leaf-spine)
====  =====================================  ==========================

A switch group reads its digit as ``(entropy / divisor) mod size`` (the
controller writes the divisor; `fabric.p4` divides exactly), so the
choices of different tiers are independent and, over entropy values
spread evenly on a multiple of `paths`, every equal-cost path is taken
equally often.  Each ToR's uplink group is ordered neighbour-major
(``tier1 * parallel + pup`` is one number) and each downward group
parallel-link-major (``pdown * tors + dtor``), which is why those digit
pairs sit next to each other.

A credit and the DATA cell it pays for must take the same links in
opposite directions.  Source-side and destination-side digits are mirror
images of each other (nic <-> dtor, pup <-> pdown) and the middle digits
(tier1, tier2) name the same spine or core in both directions, so the
sender echoes its credit's entropy with those pairs swapped (`mirror`);
between two hosts of one ToR group the path has no middle and the value
is echoed unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from testbed.topo.model import Topology

TIER = {"host": 0, "leaf": 1, "edge": 1, "spine": 2, "aggregation": 2, "core": 3}
DIGITS = ("nic", "dtor", "pdown", "pup", "tier1", "tier2")


@dataclass(frozen=True)
class EntropyLayout:
    nic: int = 1
    dtor: int = 1
    parallel: int = 1
    tier1: int = 1
    tier2: int = 1

    @cached_property
    def radices(self) -> dict[str, int]:
        return {"nic": self.nic, "dtor": self.dtor, "pdown": self.parallel, "pup": self.parallel,
                "tier1": self.tier1, "tier2": self.tier2}

    @property
    def radices_in_order(self) -> tuple[int, int, int, int, int]:
        """The constructor's arguments: how the layout travels to host agents."""
        return (self.nic, self.dtor, self.parallel, self.tier1, self.tier2)

    @cached_property
    def weights(self) -> dict[str, int]:
        out, weight = {}, 1
        for name in DIGITS:
            out[name] = weight
            weight *= self.radices[name]
        return out

    @cached_property
    def paths(self) -> int:
        """Equal-cost paths between two hosts as far apart as the fabric allows."""
        total = 1
        for radix in self.radices.values():
            total *= radix
        return total

    def digits(self, entropy: int) -> dict[str, int]:
        weights, radices = self.weights, self.radices
        return {name: (entropy // weights[name]) % radices[name] for name in DIGITS}

    def compose(self, digits: dict[str, int]) -> int:
        weights = self.weights
        return sum(digits.get(name, 0) * weights[name] for name in DIGITS)

    def mirror(self, entropy: int, same_tor_group: bool = False) -> int:
        """The entropy a cell must carry to retrace, in reverse, the path
        that `entropy` gave a cell going the other way."""
        if same_tor_group or (self.nic == self.dtor == self.parallel == 1):
            return entropy  # nothing to swap
        d = self.digits(entropy)
        top = entropy - self.compose(d)  # multiples of `paths`, kept as they are
        swapped = dict(d, nic=d["dtor"], dtor=d["nic"], pup=d["pdown"], pdown=d["pup"])
        return top + self.compose(swapped)

    def default_entropy_values(self, at_least: int = 32) -> int:
        """The smallest multiple of `paths` that is at least `at_least` (and at most 65536)."""
        count = -(-at_least // self.paths) * self.paths
        return min(count, 65536 // self.paths * self.paths)


def layout_of(topology: Topology) -> EntropyLayout:
    spec = topology.spec
    dual = 2 if getattr(spec, "dual_homed", False) else 1
    if hasattr(spec, "spines"):
        return EntropyLayout(nic=dual, dtor=dual, parallel=spec.uplinks_per_spine, tier1=spec.spines)
    half = spec.k // 2
    return EntropyLayout(nic=dual, dtor=dual, parallel=1, tier1=half, tier2=half)


def group_choice(topology: Topology, layout: EntropyLayout, switch: str,
                 ports: list[int]) -> tuple[int, list[int]]:
    """(divisor, member ports in member order) of one next-hop group."""
    if len(ports) <= 1:
        return 1, list(ports)
    here = TIER[topology.node(switch).kind]
    peers = {p: topology.port(switch, p).peer for p in ports}
    tiers = {TIER[topology.node(peer).kind] for peer in peers.values()}
    if len(tiers) != 1:
        raise ValueError(f"{switch}: group {ports} mixes tiers {sorted(tiers)}")
    (there,) = tiers
    weights = layout.weights
    if there > here:  # up: neighbour-major, parallel link minor (port order on every switch)
        return (weights["pup"] if here == 1 else weights["tier2"]), sorted(ports)
    # down towards the ToRs of a group: parallel link major, ToR minor
    parallel_index = _parallel_index(topology, switch, ports)
    tor_index = {peer: i for i, peer in enumerate(sorted(set(peers.values()), key=_node_order(topology)))}
    ordered = sorted(ports, key=lambda p: (parallel_index[p], tor_index[peers[p]]))
    return weights["dtor"], ordered


def _node_order(topology: Topology):
    names = list(topology.nodes)
    return names.index


def _parallel_index(topology: Topology, switch: str, ports: list[int]) -> dict[int, int]:
    """Rank of each port among the ports of `switch` to the same neighbour."""
    by_peer: dict[str, list[int]] = {}
    for port in sorted(ports):
        by_peer.setdefault(topology.port(switch, port).peer, []).append(port)
    return {port: i for group in by_peer.values() for i, port in enumerate(group)}


def exact_division(divisor: int) -> tuple[int, int]:
    """(shift, inverse): divisor = 2^shift * odd and inverse = odd^-1 mod 2^16."""
    if not 1 <= divisor <= 0xFFFF:
        raise ValueError(f"entropy divisor {divisor} outside 1..65535")
    shift = (divisor & -divisor).bit_length() - 1
    odd = divisor >> shift
    return shift, pow(odd, -1, 1 << 16)
