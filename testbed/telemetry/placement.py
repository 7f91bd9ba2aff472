"""Which links each flow's cells used: the placement the fluid ideal is computed for.

* Spraying: a flow's DATA cells are split evenly over all its equal-cost
  paths (`topo.paths`), which is what per-cell spraying aims at.
* ECMP: each flow took one path, decided by the switches' hash.  Traced
  (`traced_paths`) through the variant's fabric plan with the flow's UDP
  source port, which the agents write into their stats; the traced paths'
  disagreement with the measured per-port DATA bytes is reported beside them.
  Without the plan or the ports (an old run directory), the path is
  inferred from what the run measured: the traffic manager's DATA bytes per
  egress port.  Every combination of one candidate path per flow is scored by
  how far its predicted per-link bytes are from the measured ones (sum of
  absolute differences; exhaustive up to MAX_COMBINATIONS, else coordinate
  descent from the best single-flow choices), and the best is taken; the
  remaining difference, as a share of the measured bytes, is reported with it.
* Control cells (ACK, NACK, credits) of a flow: with ECMP traced as the
  receiver's flow back to the sender; otherwise inferred like ECMP data from
  the per-port control bytes when the target counts them (sprayed modes
  choose control cells' paths by their own rules), else split evenly over
  the reverse paths.

A directed link is named `node:port->peer`, as in `telemetry.links`.
"""

from __future__ import annotations

import itertools

MAX_COMBINATIONS = 1 << 14


def directed_links(path) -> list[str]:
    """A topo Path as directed link names."""
    return [f"{path.nodes[i]}:{path.ports[i][0]}->{path.nodes[i + 1]}" for i in range(len(path.links))]


def candidate_paths(topology, src: str, dst: str) -> list[list[str]]:
    return [directed_links(p) for p in topology.paths(src, dst)]


def _score(choice: dict, candidates: dict, volume: dict, measured: dict[str, float]) -> float:
    predicted = {link: 0.0 for link in measured}
    for flow, index in choice.items():
        for link in candidates[flow][index]:
            if link in predicted:
                predicted[link] += volume[flow]
    return sum(abs(measured[link] - predicted[link]) for link in measured)


def infer_single_paths(candidates: dict[str, list[list[str]]], volume: dict[str, float],
                       measured: dict[str, float]) -> tuple[dict[str, list[str]], float]:
    """One path per flow that best explains `measured` (bytes per link); returns the paths and the
    unexplained share (|measured - predicted| summed over the links any candidate uses, over the
    measured total there)."""
    considered = {link for paths in candidates.values() for path in paths for link in path
                  if sum(1 for p in paths if link in p) < len(paths)}  # links that tell the paths apart
    target = {link: float(measured.get(link, 0.0)) for link in considered}
    flows = sorted(candidates)
    total = 1
    for flow in flows:
        total *= len(candidates[flow])
    if total <= MAX_COMBINATIONS:
        best = min((dict(zip(flows, combo)) for combo in
                    itertools.product(*(range(len(candidates[f])) for f in flows))),
                   key=lambda c: _score(c, candidates, volume, target))
    else:
        best = {f: 0 for f in flows}
        improved = True
        while improved:
            improved = False
            for flow in flows:
                current = _score(best, candidates, volume, target)
                for index in range(len(candidates[flow])):
                    trial = dict(best, **{flow: index})
                    if _score(trial, candidates, volume, target) < current - 1e-9:
                        best, current, improved = trial, _score(trial, candidates, volume, target), True
    measured_total = sum(target.values())
    residual = _score(best, candidates, volume, target) / measured_total if measured_total else 0.0
    return {f: candidates[f][i] for f, i in best.items()}, residual


def cable_path_to_directed(topology, src: str, cables: list[str]) -> list[str]:
    """Cable names from `src` onwards (as the tracer returns them) as directed link names."""
    out, here = [], src
    for name in cables:
        link = topology.link(name)
        peer = link.peer_of(here)
        out.append(f"{here}:{link.port_on(here)}->{peer}")
        here = peer
    return out


def traced_paths(topology, scenario, host_stats: dict[str, dict],
                 pairs: list[tuple[str, str]]) -> dict[tuple[str, str], list[str]] | None:
    """The path flow-hash ECMP gives each (src, dst) pair's cells, from the lead's tracer
    (testbed.control.trace) on this variant's fabric plan and the UDP source port the sending
    agent used towards that peer (its stats' udp_source_ports); None when a port is unknown."""
    from testbed.control.plan import plan_fabric
    from testbed.control.trace import Flow, FabricModel

    model = FabricModel(topology, plan_fabric(topology, scenario), seed=scenario.seed)
    out = {}
    for src, dst in pairs:
        sport = ((host_stats.get(src) or {}).get("udp_source_ports") or {}).get(dst)
        if sport is None:
            return None
        out[(src, dst)] = cable_path_to_directed(topology, src, model.path(Flow(src, dst, sport=sport)))
    return out


def unexplained_share(paths: dict[str, list[str]], volume: dict[str, float], measured: dict[str, float],
                      links: set[str]) -> float:
    """|measured - predicted| over `links`, as a share of the measured bytes there."""
    predicted = dict.fromkeys(links, 0.0)
    for flow, path in paths.items():
        for link in path:
            if link in predicted:
                predicted[link] += volume[flow]
    total = sum(measured.get(link, 0.0) for link in links)
    return sum(abs(measured.get(link, 0.0) - predicted[link]) for link in links) / total if total else 0.0
