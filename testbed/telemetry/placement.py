"""Which links each flow's cells used: the placement the fluid ideal is computed for.

* Spraying: a flow's DATA cells are split evenly over all its equal-cost
  paths (`topo.paths`), which is what per-cell spraying aims at.
* ECMP: each flow took one path, decided by the switches' hash.  The path is
  inferred from what the run measured: the traffic manager's DATA bytes per
  egress port.  Every combination of one candidate path per flow is scored by
  how far its predicted per-link bytes are from the measured ones (sum of
  absolute differences; exhaustive up to MAX_COMBINATIONS, else coordinate
  descent from the best single-flow choices), and the best is taken; the
  remaining difference, as a share of the measured bytes, is reported with it.
* Control cells (ACK, NACK, credits) of a flow: inferred the same way from
  the per-port control bytes when the target counts them, else split evenly
  over the reverse paths.

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
