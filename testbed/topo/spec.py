"""The small, plain input of the topology builder.

`topo` must not depend on `scenario`, so a topology is described by one of
two frozen dataclasses (or the equivalent dict, as a scenario's
`topology:` section spells it).  The limits checked here come from the
address plan (one octet per leaf, pod, edge group and host) and from the
switch port numbering (ports 1..255 so that a port fits in one MAC byte and
far below bmv2's drop port 511).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from testbed.errors import TestbedError

MAX_SWITCH_PORTS = 255


class TopoError(TestbedError):
    """A topology that cannot be built; the message names the offending value."""


@dataclass(frozen=True)
class LeafSpineSpec:
    """Two-tier leaf-spine: every leaf connects to every spine.

    `hosts_per_leaf` is the number of host-facing ports of each leaf. With
    `dual_homed`, leaves are paired (1,2), (3,4), ... and each host has one
    NIC port on each leaf of its pair, so a pair serves `hosts_per_leaf`
    hosts.  `uplinks_per_spine` parallel links join each leaf to each spine.
    """

    leaves: int = 4
    spines: int = 2
    hosts_per_leaf: int = 2
    uplinks_per_spine: int = 1
    dual_homed: bool = False
    kind: str = "leaf_spine"

    @property
    def oversubscription(self) -> float:
        """Host-facing over spine-facing ports of a leaf (links of equal rate)."""
        return self.hosts_per_leaf / (self.spines * self.uplinks_per_spine)

    def check(self) -> None:
        _positive("leaves", self.leaves, 255)
        _positive("spines", self.spines, 255)
        _positive("hosts_per_leaf", self.hosts_per_leaf, 254)
        _positive("uplinks_per_spine", self.uplinks_per_spine, MAX_SWITCH_PORTS)
        if self.dual_homed and self.leaves % 2:
            raise TopoError(
                f"dual-homed hosts need leaves in pairs, but leaves is {self.leaves} (odd)"
            )
        leaf_ports = self.hosts_per_leaf + self.spines * self.uplinks_per_spine
        if leaf_ports > MAX_SWITCH_PORTS:
            raise TopoError(
                f"a leaf would need {leaf_ports} ports (hosts_per_leaf + spines x "
                f"uplinks_per_spine); at most {MAX_SWITCH_PORTS} are supported"
            )
        spine_ports = self.leaves * self.uplinks_per_spine
        if spine_ports > MAX_SWITCH_PORTS:
            raise TopoError(
                f"a spine would need {spine_ports} ports (leaves x uplinks_per_spine); "
                f"at most {MAX_SWITCH_PORTS} are supported"
            )


@dataclass(frozen=True)
class FatTreeSpec:
    """Three-tier k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and
    k/2 aggregation switches, (k/2)^2 cores, k/2 hosts per edge switch.

    With `dual_homed`, the edge switches of a pod are paired and each host
    has one NIC port on each edge of its pair, so k/2 must be even.
    """

    k: int = 4
    dual_homed: bool = False
    kind: str = "fat_tree"

    @property
    def oversubscription(self) -> float:
        return 1.0

    def check(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 2 or self.k % 2:
            raise TopoError(f"fat-tree k must be an even integer >= 2, got {self.k!r}")
        if self.k > 254:
            raise TopoError(f"fat-tree k is at most 254 (one address octet per pod), got {self.k}")
        if self.dual_homed and (self.k // 2) % 2:
            raise TopoError(
                f"dual-homed hosts pair the k/2 edge switches of a pod, so k must be a "
                f"multiple of 4, got k={self.k}"
            )


TopoSpec = LeafSpineSpec | FatTreeSpec


def spec_from_dict(data: Mapping[str, Any]) -> TopoSpec:
    """Build a spec from a scenario-style mapping (`kind` plus the kind's fields)."""
    fields = dict(data)
    kind = fields.pop("kind", None)
    fields.pop("oversubscription", None)  # a scenario-level check, not a shape parameter
    cls = {"leaf_spine": LeafSpineSpec, "fat_tree": FatTreeSpec}.get(kind)
    if cls is None:
        raise TopoError(f"topology kind must be leaf_spine or fat_tree, got {kind!r}")
    try:
        spec = cls(**fields)
    except TypeError as error:
        raise TopoError(f"bad {kind} topology fields {sorted(fields)}: {error}") from None
    spec.check()
    return spec


def _positive(name: str, value: Any, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise TopoError(f"{name} must be an integer in 1..{maximum}, got {value!r}")
