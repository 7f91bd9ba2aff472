"""A folded Clos (fat-tree) of one, two or three tiers, sized for a GPU count.

The rules, per plane:

* A ToR splits its k ports into d1 downlinks and u1 = k - d1 uplinks with
  d1 / u1 as close to the ToR oversubscription as whole ports allow
  (never more oversubscribed than asked); each downlink serves `breakout`
  host ports. An aggregation switch splits its ports the same way (d2, u2)
  by the aggregation oversubscription. The top tier uses every port down.
* One tier is one switch: k x breakout host ports.
* Two tiers: every ToR links to every spine of the plane, so at most k
  ToRs (a spine's ports) and k x d1 x breakout host ports.
* Three tiers: a pod is d2 ToRs and u1 aggregation switches, each ToR
  linked to every aggregation switch of its pod; aggregation switch j of
  every pod links to core group j (u2 links each); a core takes one link
  per pod, so at most k pods and k x d2 x d1 x breakout host ports.
  With d1 = d2 = k/2 and no breakout these are k^2/2 and k^3/4 hosts and
  5k^2/4 switches.

A fabric smaller than the most a tier count holds keeps every switch's
uplinks (non-blocking as designed) and takes the fewest top-tier switches
whose ports take them, with parallel links where a switch has spare
ports. GPUs are counted in whole servers. One pluggable optic sits at each
end of every link; a broken-out switch port is one optic for its host ports.
The bisection bandwidth is half of the hosts' injection bandwidth divided
by the oversubscription of the tiers that cross-fabric traffic climbs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from testbed.plan.hardware import Hardware, PlanError

MAX_TIERS = 3


@dataclass(frozen=True)
class SwitchSplit:
    """A switch's ports: `down` towards the hosts, `up` towards the next tier."""
    down: int
    up: int

    @property
    def ratio(self) -> float:
        return math.inf if self.up == 0 else self.down / self.up


def split_ports(k: int, oversubscription: float) -> SwitchSplit:
    """The most downlinks with down/up no larger than the oversubscription."""
    down = math.floor(k * oversubscription / (1 + oversubscription) + 1e-9)
    down = max(1, min(down, k - 1))
    return SwitchSplit(down=down, up=k - down)


@dataclass
class Tier:
    name: str
    switches: int
    links_down: int          # links from this tier's switches towards the hosts
    optics_down: int         # pluggables on those links (both ends)


@dataclass
class FabricPlan:
    hardware: Hardware
    gpus: int
    tiers: int
    max_gpus: dict[str, int]
    tier_list: list[Tier] = field(default_factory=list)
    host_ports: int = 0
    pods: int = 0
    pod_gpus: int = 0        # the most GPUs a pod of the three-tier design holds
    segment_gpus: int = 0
    bisection_gbps: float = 0.0
    oversubscription: dict[str, float] = field(default_factory=dict)
    limit: str = ""

    @property
    def switches(self) -> int:
        return sum(t.switches for t in self.tier_list)

    @property
    def links(self) -> int:
        return sum(t.links_down for t in self.tier_list)

    @property
    def optics(self) -> int:
        return sum(t.optics_down for t in self.tier_list)

    def as_json(self) -> dict:
        hw = self.hardware
        return {
            "gpus": self.gpus,
            "tiers": self.tiers,
            "max_gpus": self.max_gpus,
            "planes": hw.planes,
            "host_ports": self.host_ports,
            "switches": self.switches,
            "links": self.links,
            "transceivers": self.optics,
            "per_tier": [{"tier": t.name, "switches": t.switches, "links_down": t.links_down,
                          "transceivers_down": t.optics_down} for t in self.tier_list],
            "pods": self.pods,
            "gpus_per_pod": self.pod_gpus,
            "gpus_per_segment": self.segment_gpus,
            "bisection_gbps": self.bisection_gbps,
            "oversubscription": self.oversubscription,
            "limit": self.limit,
            "hardware": {"switch_ports": hw.switch_ports, "port_gbps": hw.port_gbps,
                         "nic_port_gbps": hw.nic_port_gbps, "breakout": hw.breakout,
                         "ports_per_gpu": hw.ports_per_gpu, "gpus_per_server": hw.gpus_per_server,
                         "rail_optimised": hw.rail_optimised,
                         "tor_oversubscription": hw.tor_oversubscription,
                         "agg_oversubscription": hw.agg_oversubscription},
        }


def host_ports_per_plane(hw: Hardware, tiers: int) -> int:
    """The most host ports one plane of `tiers` tiers holds."""
    k, b = hw.switch_ports, hw.breakout
    if tiers == 1:
        return k * b
    tor = split_ports(k, hw.tor_oversubscription)
    if tiers == 2:
        return k * tor.down * b
    agg = split_ports(k, hw.agg_oversubscription)
    return k * agg.down * tor.down * b


def gpus_for_ports(hw: Hardware, ports_per_plane: int) -> int:
    """Whole servers' GPUs that so many host ports per plane serve."""
    gpus = ports_per_plane * hw.planes // hw.ports_per_gpu
    return gpus // hw.gpus_per_server * hw.gpus_per_server


def max_gpus(hw: Hardware) -> dict[str, int]:
    return {str(t): gpus_for_ports(hw, host_ports_per_plane(hw, t)) for t in range(1, MAX_TIERS + 1)}


def _fewest_top(groups_links: int, per_switch_links: int, k: int) -> int:
    """Fewest top switches (a divisor of each lower switch's uplinks) whose k
    ports take `groups_links` links, each lower switch spreading its
    `per_switch_links` uplinks evenly over them."""
    need = math.ceil(groups_links / k)
    for s in range(max(1, need), per_switch_links + 1):
        if per_switch_links % s == 0:
            return s
    return per_switch_links


def plan(hw: Hardware, gpus: int) -> FabricPlan:
    """The fabric that holds `gpus` GPUs with this hardware, in the fewest tiers."""
    if gpus < 1:
        raise PlanError(f"--gpus must be at least 1, not {gpus}")
    if gpus % hw.gpus_per_server:
        raise PlanError(f"--gpus {gpus} is not a whole number of {hw.gpus_per_server}-GPU servers")
    limits = max_gpus(hw)
    tiers = next((t for t in range(1, MAX_TIERS + 1) if limits[str(t)] >= gpus), None)
    if tiers is None:
        raise PlanError(f"{gpus} GPUs do not fit in {MAX_TIERS} tiers of {hw.switch_ports}-port switches with "
                        f"this hardware: {MAX_TIERS} tiers hold at most {limits[str(MAX_TIERS)]} GPUs")
    k, b, planes = hw.switch_ports, hw.breakout, hw.planes
    ports = math.ceil(gpus * hw.ports_per_gpu / planes)        # host ports per plane
    tor = split_ports(k, hw.tor_oversubscription)
    agg = split_ports(k, hw.agg_oversubscription)
    out = FabricPlan(hardware=hw, gpus=gpus, tiers=tiers, max_gpus=limits, host_ports=ports * planes,
                     pod_gpus=gpus_for_ports(hw, agg.down * tor.down * b))
    host_optics = ports  # the NIC end of every host link
    if tiers == 1:
        out.tier_list = [Tier("switch", planes, ports * planes, (host_optics + math.ceil(ports / b)) * planes)]
        out.oversubscription = {}
        out.limit = f"one switch holds {limits['1']} GPUs ({k} ports x {b} host ports)"
        reach = 1.0
    else:
        tors = math.ceil(ports / (tor.down * b))
        tor_optics = host_optics + tors_optics(ports, tor.down, b)
        if tiers == 2:
            spines = _fewest_top(tors * tor.up, tor.up, k)
            out.tier_list = [Tier("tor", tors * planes, ports * planes, tor_optics * planes),
                             Tier("spine", spines * planes, tors * tor.up * planes, 2 * tors * tor.up * planes)]
            out.oversubscription = {"tor": tor.ratio * b * hw.nic_port_gbps / hw.port_gbps}
            out.limit = (f"two tiers hold {limits['2']} GPUs: a spine's {k} ports take at most {k} ToRs of "
                         f"{tor.down * b} host ports")
        else:
            pod_ports = agg.down * tor.down * b
            pods = math.ceil(ports / pod_ports)
            aggs = pods * tor.up
            cores_per_group = _fewest_top(pods * agg.up, agg.up, k)
            out.tier_list = [Tier("tor", tors * planes, ports * planes, tor_optics * planes),
                             Tier("agg", aggs * planes, tors * tor.up * planes, 2 * tors * tor.up * planes),
                             Tier("core", tor.up * cores_per_group * planes, aggs * agg.up * planes,
                                  2 * aggs * agg.up * planes)]
            out.pods = pods
            out.oversubscription = {"tor": tor.ratio * b * hw.nic_port_gbps / hw.port_gbps, "agg": agg.ratio}
            out.limit = (f"three tiers hold {limits['3']} GPUs: a core's {k} ports take at most {k} pods of "
                         f"{out.pod_gpus} GPUs")
        reach = 1.0
        for ratio in out.oversubscription.values():
            reach *= ratio
    if hw.rail_optimised and tiers >= 2:
        out.segment_gpus = tor.down * b * hw.gpus_per_server
    out.bisection_gbps = gpus * hw.ports_per_gpu * hw.nic_port_gbps / 2 / reach
    return out


def tors_optics(ports: int, down: int, breakout: int) -> int:
    """Switch-end pluggables of the host links: ToRs filled in turn, one optic
    per (broken-out) switch port in use."""
    per_tor = down * breakout
    full, rest = divmod(ports, per_tor)
    return full * down + math.ceil(rest / breakout)
