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

    field: str | None = None  # the spec field to change, when one is to blame


class ServerLayoutError(TopoError):
    """GPUs per server or the rail layout do not fit the ToR groups."""

    def __init__(self, message: str, field: str = "gpus_per_server") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class LeafSpineSpec:
    """Two-tier leaf-spine: every leaf connects to every spine.

    `hosts_per_leaf` is the number of host-facing ports of each leaf. With
    `dual_homed`, leaves are paired (1,2), (3,4), ... and each host has one
    NIC port on each leaf of its pair, so a pair serves `hosts_per_leaf`
    hosts.  `uplinks_per_spine` parallel links join each leaf to each spine.
    With `gpus_per_server` G > 1, every host is one GPU with its own NIC and
    G of them form a server (see `check_servers` and `build`).
    """

    leaves: int = 4
    spines: int = 2
    hosts_per_leaf: int = 2
    uplinks_per_spine: int = 1
    dual_homed: bool = False
    gpus_per_server: int = 1
    rail_optimised: bool = False
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
        groups = self.leaves // 2 if self.dual_homed else self.leaves
        check_servers(self.gpus_per_server, self.rail_optimised, groups, self.hosts_per_leaf,
                      "leaf pairs" if self.dual_homed else "leaves", "hosts_per_leaf")


@dataclass(frozen=True)
class FatTreeSpec:
    """Three-tier k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and
    k/2 aggregation switches, (k/2)^2 cores, k/2 hosts per edge switch.

    With `dual_homed`, the edge switches of a pod are paired and each host
    has one NIC port on each edge of its pair, so k/2 must be even.
    """

    k: int = 4
    dual_homed: bool = False
    gpus_per_server: int = 1
    rail_optimised: bool = False
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
        half = self.k // 2
        groups = self.k * (half // 2 if self.dual_homed else half)
        check_servers(self.gpus_per_server, self.rail_optimised, groups, half,
                      "edge " + ("pairs" if self.dual_homed else "switches"), "k/2 hosts per edge")


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


MAX_GPUS_PER_SERVER = 16


def check_servers(gpus: Any, rail: Any, groups: int, per_group: int, group_name: str,
                  per_group_name: str) -> None:
    """Servers of `gpus` GPUs (each GPU a host with its own NIC) must tile the ToR groups.

    Plain layout: a server's GPUs are consecutive hosts of one ToR group, so
    the hosts per group must be a multiple of G.  Rail-optimised: GPU i of a
    server sits on rail i, the i-th ToR group of a block of G groups, so the
    number of groups must be a multiple of G.
    """
    try:
        _positive("gpus_per_server", gpus, MAX_GPUS_PER_SERVER)
    except TopoError as error:
        raise ServerLayoutError(str(error)) from None
    if not isinstance(rail, bool):
        raise ServerLayoutError(f"rail_optimised must be true or false, got {rail!r}", "rail_optimised")
    if rail and gpus == 1:
        raise ServerLayoutError("rail_optimised needs servers of several GPUs; set gpus_per_server above 1",
                                "rail_optimised")
    if rail and groups % gpus:
        raise ServerLayoutError(f"a rail-optimised layout puts GPU i of every server on rail i, so the "
                        f"{groups} {group_name} must be a multiple of gpus_per_server ({gpus})")
    if not rail and gpus > 1 and per_group % gpus:
        raise ServerLayoutError(f"without rail_optimised a server's {gpus} GPUs share one ToR, so "
                        f"{per_group_name} ({per_group}) must be a multiple of gpus_per_server")


def _positive(name: str, value: Any, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise TopoError(f"{name} must be an integer in 1..{maximum}, got {value!r}")
