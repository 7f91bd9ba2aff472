"""In-band telemetry figures: per-hop queueing latency and queue depth, per switch tier.

Inputs: `records/int/<host>.jsonl`, written by the agents when the scenario sets `fabric.int`
(one line per DATA cell that arrived with INT hop records: `hops` in path order, each
`[switch_id, egress_port, enq_qdepth, hop_latency_us]`; p4src/README.md, "In-band telemetry").
A hop's tier is the kind of the switch whose device id it names (leaf, spine, edge, aggregation,
core). Percentiles are nearest-rank. `int_figures` keeps the run's own clock (microseconds the cell
waited in that switch's egress queue), as summary.py does; the report and its plot give them on the
scenario's clock (telemetry.clock: a slowed run's latencies over its time_stretch).
"""

from __future__ import annotations

import math
from pathlib import Path

from testbed.host.records import read_jsonl


def int_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "records" / "int"


def nearest_rank(values: list, q: float):
    """The q-th percentile (0 < q <= 100) by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def hops_by_tier(run_dir: Path, topology) -> tuple[dict[str, list[tuple[int, int]]], int, int, list[int]]:
    """({tier: [(hop_latency_us, enq_qdepth)]}, cells, cells with overflow, unknown switch ids)."""
    kinds = {topology.node(s).device_id: topology.node(s).kind for s in topology.switches}
    tiers: dict[str, list[tuple[int, int]]] = {}
    cells = overflowed = 0
    unknown: set[int] = set()
    for path in sorted(int_dir(run_dir).glob("*.jsonl")):
        for record in read_jsonl(path):
            cells += 1
            overflowed += record["overflow"] > 0
            for switch_id, _port, qdepth, latency in record["hops"]:
                kind = kinds.get(switch_id)
                if kind is None:
                    unknown.add(switch_id)
                    continue
                tiers.setdefault(kind, []).append((latency, qdepth))
    return tiers, cells, overflowed, sorted(unknown)


def int_figures(run_dir: Path, topology) -> dict | None:
    """summary.json's `int`: None when the run has no INT records (fabric.int off, or the simulator)."""
    if not int_dir(run_dir).is_dir():
        return None
    tiers, cells, overflowed, unknown = hops_by_tier(run_dir, topology)
    out: dict = {"cells": cells, "overflow_cells": overflowed, "unknown_switch_ids": unknown, "tiers": {}}
    for kind, hops in sorted(tiers.items()):
        latency = [h[0] for h in hops]
        depth = [h[1] for h in hops]
        out["tiers"][kind] = {
            "hops": len(hops),
            "latency_p50_us": nearest_rank(latency, 50), "latency_p99_us": nearest_rank(latency, 99),
            "latency_max_us": max(latency),
            "qdepth_p50_packets": nearest_rank(depth, 50), "qdepth_p99_packets": nearest_rank(depth, 99),
        }
    return out


TIER_ORDER = ("leaf", "edge", "spine", "aggregation", "core")


def report_lines(summaries: dict[str, dict]) -> list[str]:
    """The report's INT table: one row per tier, p50 / p99 hop latency and queue depth per variant
    (`summaries` on the scenario's clock, as the report hands them)."""
    if not any(s.get("int") for s in summaries.values()):
        return []
    names = list(summaries)  # every variant a column, as in the report's main table ('-': no INT)
    with_int = [n for n in names if summaries[n].get("int")]
    tiers = [t for t in TIER_ORDER if any(t in summaries[n]["int"]["tiers"] for n in with_int)]
    lines = ["In-band telemetry (`fabric.int`): per hop, the microseconds a sampled DATA cell waited in "
             "the switch's egress queue and the packets queued ahead of it, by the tier of the switch "
             "(nearest-rank percentiles over every hop record the receivers kept; the scenario's clock).", "",
             "| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for tier in tiers:
        cells = []
        for n in names:
            t = (summaries[n].get("int") or {"tiers": {}})["tiers"].get(tier)
            cells.append("-" if t is None else
                         f"{t['latency_p50_us']:.0f} / {t['latency_p99_us']:.0f} us, q {t['qdepth_p50_packets']} / "
                         f"{t['qdepth_p99_packets']} (n={t['hops']})")
        lines.append(f"| INT {tier} hop latency p50 / p99, queue p50 / p99 | " + " | ".join(cells) + " |")
    lines.append("| INT cells with records / stack full | " + " | ".join(
        f"{summaries[n]['int']['cells']} / {summaries[n]['int']['overflow_cells']}" if summaries[n].get("int")
        else "-" for n in names) + " |")
    lines.append("")
    return lines


def plot_latency(run_dirs: dict[str, Path], summaries: dict[str, dict], topology_of, path: Path) -> bool:
    """CDF of hop latency per tier (one line per variant and tier); False when no variant has INT."""
    import matplotlib.pyplot as plt

    from testbed.telemetry.clock import stretch_of

    names = [n for n, s in summaries.items() if s.get("int") and n in run_dirs]
    if not names:
        return False
    figure, axes = plt.subplots(figsize=(7, 4))
    drawn = False
    for name in names:
        tiers = hops_by_tier(run_dirs[name], topology_of(name))[0]
        stretch = stretch_of(run_dirs[name])
        for tier in TIER_ORDER:
            values = sorted(h[0] / stretch for h in tiers.get(tier, ()))
            if not values:
                continue
            ys = [(i + 1) / len(values) for i in range(len(values))]
            axes.step(values, ys, where="post", label=f"{name} {tier}" if len(names) > 1 else tier)
            drawn = True
    if not drawn:
        plt.close(figure)
        return False
    axes.set_xlabel("hop latency: microseconds in the egress queue (the scenario's clock)")
    axes.set_ylabel("share of hops")
    axes.set_xscale("symlog", linthresh=10)
    axes.set_ylim(0, 1.02)
    axes.set_title("In-band telemetry: hop latency per tier")
    axes.legend(loc="lower right", fontsize=7)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return True
