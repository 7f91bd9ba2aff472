"""A folded Clos (fat-tree) of one, two or three tiers, sized for a GPU count.

The rules, per plane (p = a GPU's NIC ports in one plane, R = a server's
GPUs, the rails when the servers are rail-optimised):

* A ToR splits its k ports into d1 downlinks and u1 = k - d1 uplinks with
  d1 / u1 as close to the ToR oversubscription as whole ports allow
  (never more oversubscribed than asked); each downlink serves `breakout`
  host ports, so a ToR has d1 x breakout host ports. An aggregation switch
  splits its ports the same way (d2, u2) by the aggregation
  oversubscription. The top tier uses every port down.
* Each of a GPU's p ports reaches its own ToR: port j of every GPU is a
  group of its own. Rail-optimised, port j of GPU i of every server is a
  group (R x p groups), so every rail has its own ToRs; a rail segment is
  the servers whose rail ToRs are the same, d1 x breakout servers or the
  whole fabric if smaller. A group of n host ports takes
  ceil(n / (d1 x breakout)) ToRs.
* One tier is one switch, and only when p = 1: a switch holds every GPU
  (and every rail) of the plane, k x breakout host ports. A GPU with two
  ports in one plane needs two ToRs and a tier above that joins them
  (two independent switches are two planes: `--planes 2`).
* Two tiers: every ToR links to every spine, so at most k ToRs.
* Three tiers: a pod is d2 ToRs and u1 aggregation switches, each ToR
  linked to every aggregation switch of its pod; aggregation switch j of
  every pod links to core group j (u2 links each); a core takes one link
  per pod, so at most k pods of d2 ToRs, each filled with whole groups
  (whole rail segments when rail-optimised). With d1 = d2 = k/2, p = 1 and no
  breakout these are k^2/2 and k^3/4 hosts and 5k^2/4 switches.
* A GPU's ports in one plane never need more ToRs than a pod holds
  (p <= d2); more is refused.

A fabric smaller than the most a tier count holds keeps every switch's
uplinks and takes the fewest top-tier switches whose ports hold them among
the divisors of a lower switch's uplinks (parallel links where a switch
has spare ports): an even spread keeps any two lower switches meeting at
full rate (docs/planning.md gives the uneven case). GPUs are counted in
whole servers. One pluggable optic sits at each end of every link; a
broken-out switch port is one optic for its host ports. The bisection
bandwidth is half of the hosts' injection bandwidth divided by the
oversubscription of the tiers that cross-fabric traffic climbs.
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


def groups_per_plane(hw: Hardware) -> int:
    """Port groups of a plane, each on ToRs of its own: a GPU's ports in the
    plane, times the rails when rail-optimised."""
    per_gpu = hw.ports_per_gpu // hw.planes
    return per_gpu * (hw.gpus_per_server if hw.rail_optimised else 1)


def group_ports(hw: Hardware, gpus: int) -> int:
    """Host ports in one group: every server's (rail-optimised) or every GPU's."""
    return gpus // hw.gpus_per_server if hw.rail_optimised else gpus


def tors_per_plane(hw: Hardware, gpus: int) -> int:
    """ToRs one plane needs for `gpus` GPUs: each group fills its own ToRs."""
    tor = split_ports(hw.switch_ports, hw.tor_oversubscription)
    return groups_per_plane(hw) * math.ceil(group_ports(hw, gpus) / (tor.down * hw.breakout))


def gpus_for_tors(hw: Hardware, tors: int) -> int:
    """The most GPUs, in whole servers, whose ToRs number at most `tors` a plane."""
    tor = split_ports(hw.switch_ports, hw.tor_oversubscription)
    per_group = tors // groups_per_plane(hw) * tor.down * hw.breakout
    if hw.rail_optimised:
        return per_group * hw.gpus_per_server
    return per_group // hw.gpus_per_server * hw.gpus_per_server


def max_gpus(hw: Hardware) -> dict[str, int]:
    """The most GPUs one, two and three tiers hold."""
    k, b = hw.switch_ports, hw.breakout
    one = k * b // hw.gpus_per_server * hw.gpus_per_server if hw.ports_per_gpu == hw.planes else 0
    return {"1": one, "2": gpus_for_tors(hw, k), "3": k * pod_gpus(hw)}


def pod_gpus(hw: Hardware) -> int:
    """The most GPUs a pod of three tiers holds: its d2 ToRs a plane filled
    with whole groups (whole rail segments when rail-optimised)."""
    return gpus_for_tors(hw, pod_tors(hw))


def _fewest_top(groups_links: int, per_switch_links: int, k: int) -> int:
    """Fewest top switches whose k ports take `groups_links` links, among the
    divisors of a lower switch's `per_switch_links` uplinks (each lower switch
    the same number of links to each top switch: non-blocking)."""
    need = math.ceil(groups_links / k)
    for s in range(max(1, need), per_switch_links + 1):
        if per_switch_links % s == 0:
            return s
    return per_switch_links


def check_ports_per_gpu(hw: Hardware) -> None:
    """A GPU's ports in one plane must fit in one pod's ToRs (one line if not)."""
    per_gpu = hw.ports_per_gpu // hw.planes
    agg = split_ports(hw.switch_ports, hw.agg_oversubscription)
    if per_gpu > agg.down:
        raise PlanError(f"--ports-per-gpu {hw.ports_per_gpu} puts each GPU on {per_gpu} ToRs of a plane, each port "
                        f"on its own ToR; a pod of {hw.switch_ports}-port switches has {agg.down} ToRs "
                        f"(an aggregation switch's downlinks), so at most {agg.down * hw.planes} ports a GPU")


def plan(hw: Hardware, gpus: int) -> FabricPlan:
    """The fabric that holds `gpus` GPUs with this hardware, in the fewest tiers."""
    if gpus < 1:
        raise PlanError(f"--gpus must be at least 1, not {gpus}")
    if gpus % hw.gpus_per_server:
        raise PlanError(f"--gpus {gpus} is not a whole number of {hw.gpus_per_server}-GPU servers")
    check_ports_per_gpu(hw)
    limits = max_gpus(hw)
    tiers = next((t for t in range(1, MAX_TIERS + 1) if limits[str(t)] >= gpus), None)
    if tiers is None:
        why = (f" (a pod's {pod_tors(hw)} ToRs hold no whole rail segment of {groups_per_plane(hw)} ToRs, so "
               f"three tiers hold none)" if not limits[str(MAX_TIERS)] else "")
        most = max(limits, key=lambda t: limits[t])
        raise PlanError(f"{gpus} GPUs do not fit in {MAX_TIERS} tiers of {hw.switch_ports}-port switches with "
                        f"this hardware: the most is {limits[most]} GPUs in {_tiers(int(most))}{why}")
    k, b, planes = hw.switch_ports, hw.breakout, hw.planes
    ports = gpus * hw.ports_per_gpu // planes                  # host ports per plane
    tor = split_ports(k, hw.tor_oversubscription)
    agg = split_ports(k, hw.agg_oversubscription)
    out = FabricPlan(hardware=hw, gpus=gpus, tiers=tiers, max_gpus=limits, host_ports=ports * planes,
                     pod_gpus=pod_gpus(hw))
    host_optics = ports  # the NIC end of every host link
    groups, per_group = groups_per_plane(hw), group_ports(hw, gpus)
    if tiers == 1:
        out.tier_list = [Tier("switch", planes, ports * planes, (host_optics + math.ceil(ports / b)) * planes)]
        out.oversubscription = {}
        out.limit = f"one switch holds {limits['1']} GPUs ({k} ports x {b} host ports)"
        reach = 1.0
    else:
        tors = tors_per_plane(hw, gpus)
        tor_optics = host_optics + groups * tors_optics(per_group, tor.down, b)
        if tiers == 2:
            spines = _fewest_top(tors * tor.up, tor.up, k)
            out.tier_list = [Tier("tor", tors * planes, ports * planes, tor_optics * planes),
                             Tier("spine", spines * planes, tors * tor.up * planes, 2 * tors * tor.up * planes)]
            out.oversubscription = {"tor": tor.ratio * b * hw.nic_port_gbps / hw.port_gbps}
            out.limit = (f"two tiers hold {limits['2']} GPUs: a spine's {k} ports take at most {k} ToRs of "
                         f"{tor.down * b} host ports")
        else:
            pods = math.ceil(gpus / out.pod_gpus)
            aggs = pods * tor.up
            cores_per_group = _fewest_top(pods * agg.up, agg.up, k)
            out.tier_list = [Tier("tor", tors * planes, ports * planes, tor_optics * planes),
                             Tier("agg", aggs * planes, tors * tor.up * planes, 2 * tors * tor.up * planes),
                             Tier("core", tor.up * cores_per_group * planes, aggs * agg.up * planes,
                                  2 * aggs * agg.up * planes)]
            out.pods = pods
            out.oversubscription = {"tor": tor.ratio * b * hw.nic_port_gbps / hw.port_gbps, "agg": agg.ratio}
            out.limit = (f"three tiers hold {limits['3']} GPUs: a core's {k} ports take at most {k} pods of "
                         f"{agg.down} ToRs ({out.pod_gpus} GPUs)")
        reach = 1.0
        for ratio in out.oversubscription.values():
            reach *= ratio
        if hw.rail_optimised:
            out.segment_gpus = min(per_group, tor.down * b) * hw.gpus_per_server
    out.bisection_gbps = gpus * hw.ports_per_gpu * hw.nic_port_gbps / 2 / reach
    return out


def _tiers(n: int) -> str:
    return f"{n} tier" + ("" if n == 1 else "s")


def tors_optics(ports: int, down: int, breakout: int) -> int:
    """Switch-end pluggables of one group's host links: its ToRs filled in
    turn, one optic per (broken-out) switch port in use."""
    per_tor = down * breakout
    full, rest = divmod(ports, per_tor)
    return full * down + math.ceil(rest / breakout)


def pod_tors(hw: Hardware) -> int:
    """ToRs a pod holds a plane: an aggregation switch's downlinks."""
    return split_ports(hw.switch_ports, hw.agg_oversubscription).down
