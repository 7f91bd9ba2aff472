"""The side-by-side report of a scenario's variants: report.md, plots, summary.json.

The first line says whether every switch kept up with real time; a run
whose switches fell behind says so before any number.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROWS = [
    ("messages delivered / sent", lambda s: f"{s.get('messages_verified', 0)} / {s.get('messages_sent', 0)}"),
    ("goodput (Mbit/s)", lambda s: _num(s.get("goodput_mbps"), 2)),
    ("message completion p50 (ms)", lambda s: _num(s.get("fct_p50_ms"), 1)),
    ("message completion p99 (ms)", lambda s: _num(s.get("fct_p99_ms"), 1)),
    ("switch drops, data (packets)", lambda s: _drops({k: v for k, v in (s.get("switch_drops_packets") or {}).items()
                                                       if k not in ("credit_over_rate", "credit_queue_full")})),
    ("credits dropped by switches (ExpressPass limiting)", lambda s: str(s.get("credit_drops_packets", "n/a"))),
    ("max queue depth (packets)", lambda s: str(s.get("max_queue_depth_packets", "n/a"))),
    ("ECN marks (packets)", lambda s: str(s.get("ecn_marks_packets", "n/a"))),
    ("retransmitted cells", lambda s: str(s.get("retransmissions_cells", "n/a"))),
    ("sender timeouts (RTO)", lambda s: str((s.get("agents") or {}).get("timeouts", "n/a"))),
    ("CNPs received / rate cuts", lambda s: _cnps(s.get("agents") or {})),
    ("cells out of order", lambda s: str(s.get("cells_out_of_order", "n/a"))),
    ("largest out-of-order distance (cells)", lambda s: str(s.get("max_ooo_distance_cells", "n/a"))),
    ("peak reorder buffer (cells)", lambda s: str(s.get("peak_reorder_buffer_cells", "n/a"))),
    ("uplink utilisation min / max (%)", lambda s: _range(s)),
    ("uplink utilisation Jain fairness", lambda s: _num(s.get("uplink_jain_fairness"), 3)),
]


def _num(value, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _drops(drops: dict) -> str:
    total = sum(drops.values())
    if not total:
        return "0"
    return f"{total} (" + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())) + ")"


def _cnps(agents: dict) -> str:
    if not agents.get("cnps_received") and not agents.get("rate_cuts"):
        return "0"
    low = agents.get("min_rate_mbps")
    return (f"{agents.get('cnps_received', 0)} / {agents.get('rate_cuts', 0)}"
            + (f" (lowest rate {low:.2f} Mbit/s)" if low is not None else ""))


def _range(summary: dict) -> str:
    if summary.get("uplink_utilisation_min") is None:
        return "n/a"
    return f"{100 * summary['uplink_utilisation_min']:.0f} / {100 * summary['uplink_utilisation_max']:.0f}"


def _plot_uplinks(summaries: dict[str, dict], path: Path) -> bool:
    names = [n for n, s in summaries.items() if s.get("uplink_utilisation")]
    if not names:
        return False
    links = sorted({k for n in names for k in summaries[n]["uplink_utilisation"]})
    width = 0.8 / len(names)
    figure, axes = plt.subplots(figsize=(max(6, 0.5 * len(links) + 2), 4))
    for i, name in enumerate(names):
        values = [100 * summaries[name]["uplink_utilisation"].get(link, 0.0) for link in links]
        axes.bar([x + i * width for x in range(len(links))], values, width, label=name)
    axes.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(links))])
    axes.set_xticklabels([link.replace(":", "\n") for link in links], fontsize=7)
    axes.set_ylabel("utilisation while traffic flowed (%)")
    axes.set_ylim(0, 105)
    axes.set_title("ToR uplink utilisation")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=len(names), frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def _plot_fct(run_dirs: dict[str, Path], path: Path) -> bool:
    from testbed.telemetry.summary import _records

    figure, axes = plt.subplots(figsize=(6, 4))
    plotted = False
    for name, run_dir in run_dirs.items():
        fct = sorted(r["fct_us"] / 1000 for r in _records(run_dir) if r["kind"] == "message_sent")
        if fct:
            axes.plot(fct, [(i + 1) / len(fct) for i in range(len(fct))], label=name)
            plotted = True
    if plotted:
        axes.set_xlabel("message completion time (ms)")
        axes.set_ylabel("fraction of messages")
        axes.set_title("Message completion time CDF")
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=110)
    plt.close(figure)
    return plotted


def write_report(scenario, run_dirs: dict[str, Path], summaries: dict[str, dict], out_dir: Path) -> Path:
    """report.md + summary.json + plots in out_dir; returns the report's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(summaries, indent=2, default=str))
    behind = [f"{n} ({s['fidelity']['switch']}: p99 dequeue lag {s['fidelity']['worst_p99_dequeue_lag_us']:.0f} us"
              f" > {s['fidelity']['threshold_us']:.0f} us)"
              for n, s in summaries.items() if s.get("fidelity", {}).get("behind_real_time")]
    lines = []
    if behind:
        lines.append("**Fidelity warning: switches fell behind real time in " + "; ".join(behind)
                     + ". Timings in those variants reflect the CPU, not the modelled links.**")
    else:
        lags = [f"{n}: {s['fidelity']['worst_p99_dequeue_lag_us']:.0f} us" for n, s in summaries.items()
                if s.get("fidelity", {}).get("worst_p99_dequeue_lag_us") is not None]
        threshold = next((s["fidelity"]["threshold_us"] for s in summaries.values() if "fidelity" in s), None)
        lines.append("Fidelity: every switch kept its queues' departure schedule within one cell time "
                     + (f"({threshold:.0f} us) at p99 (worst p99 lag " + ", ".join(lags) + ")." if lags
                        else "(this target does not report its lag)."))
    lines += ["", f"# {scenario.name}", "", scenario.description or "", ""]
    d = scenario.derived
    lines.append(f"Topology {scenario.topology.kind}, {scenario.topo.counts.hosts} hosts, "
                 f"{scenario.topo.counts.switches} switches; host links {scenario.links.host.rate_mbps} Mbit/s, "
                 f"base RTT {d.base_rtt_us:.0f} us, BDP {d.bdp_cells} cells of {scenario.fabric.cell_size} B.")
    lines.append("")
    names = list(summaries)
    lines.append("| | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for label, render in ROWS:
        lines.append(f"| {label} | " + " | ".join(render(summaries[n]) for n in names) + " |")
    lines.append("")
    if _plot_uplinks(summaries, out_dir / "uplinks.png"):
        lines += ["![ToR uplink utilisation](uplinks.png)", ""]
    if _plot_fct(run_dirs, out_dir / "fct_cdf.png"):
        lines += ["![Message completion time CDF](fct_cdf.png)", ""]
    for name in names:
        notes = summaries[name].get("notes") or []
        if notes:
            lines.append(f"Notes for {name}:")
            lines += [f"- {note}" for note in notes]
            lines.append("")
    lines.append("Run directories: " + ", ".join(f"`{p}`" for p in run_dirs.values()))
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
