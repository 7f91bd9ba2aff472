"""report.md, results.json and plots of a `testbed reproduce` directory, from its files alone.

`write(directory)` reads every experiment's records and counters (and every
emulated variant's run directory), computes the figures (figures.py) and the
claims table (verdicts.py), and writes them: running it again on the same
directory gives the same report, which is how a reader recomputes it.
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.claims import figures, verdicts

SCALE = ("Scale: host links of 5 Mbit/s with 2.5 ms per link (BDP 16 cells of 1024 B, 2-BDP switch buffers) on "
         "leaf-spines of 3 to 33 leaves, and a k=4 fat-tree (16 hosts, 1 ms per link) for three tiers, on the "
         "virtual-time simulator, which runs the agents' own transport code with exact wake-ups; the emulated "
         "rows run the same code as real processes on Mininet at the rate the pre-flight check lets this "
         "machine hold. The published claims come from 100-400 Gbit/s fabrics of thousands of GPUs; what "
         "carries over is the ratios (BDP in cells, buffers in BDPs, load as a fraction of the link).")


def write(directory: Path, notes: list[str] | None = None) -> Path:
    """The report of a reproduce directory; `notes` (what the run did not do, and why) are kept in
    results.json, so writing it again (notes None) keeps the first run's."""
    if notes is None:
        notes = kept_notes(directory)
    sim = figures.all_of(directory)
    emu = figures.emulated_of(directory)
    claims = verdicts.table(sim, emu)
    (directory / "results.json").write_text(json.dumps({"claims": claims, "simulated": sim, "emulated": emu,
                                                        "notes": list(notes)}, indent=1, default=str))
    lines = ["# TiTa's claims, reproduced", "", SCALE, ""]
    lines += [f"* {note}" for note in notes]
    lines += ["", "## Claims", "", "| claim | literature anchor | measured | verdict |", "|---|---|---|---|"]
    lines += [f"| {c['claim']} | {c['anchor']} | {c['measured']} | **{c['verdict']}** |" for c in claims]
    lines += ["", "Verdict rules:", ""] + [f"* {rule}" for rule in verdicts.RULES] + [""]
    lines += ["Figures:", ""] + [f"* {d}" for d in figures.DEFINITIONS] + [""]
    frontier = [r for r in sim if r.get("overcommit", 1) > 1]
    main = [r for r in sim if r not in frontier]
    plots = _plots(directory, main, sim)
    lines += _incast_table(main, emu) + _frontier_table(sim) + _load_table(main, emu) + _mixed_table(main, emu)
    lines += _spread_table(main, emu)
    lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    lines += ["Every figure above is recomputed from this directory by `testbed reproduce --report DIR`: "
              "sim/NAME/records.jsonl and counters.json for the simulator, emulated/SCENARIO/VARIANT for the "
              "emulated runs (each with its own `testbed run` report).", ""]
    path = directory / "report.md"
    path.write_text("\n".join(lines))
    return path


def kept_notes(directory: Path) -> list[str]:
    """The notes an earlier write kept in results.json (none when it has none or cannot be read)."""
    try:
        return list(json.loads((directory / "results.json").read_text()).get("notes") or [])
    except (OSError, ValueError, AttributeError):
        return []


def _labels(rows: list[dict]) -> list[str]:
    order = {"tita": 0, "tita+srpt": 1, "dcqcn": 2, "dcqcn+pfc": 3}
    return sorted({r["label"] for r in rows},
                  key=lambda label: (order.get(label.removesuffix(" emulated"), 4), label))


def _incast_table(sim: list[dict], emu: list[dict]) -> list[str]:
    rows = [r for r in sim if r["kind"] == "incast"]
    out = ["## Incast N:1 (simulated unless marked)", "",
           "| N | transport | goodput over payload rate | DATA drops (cells) | peak queue (cells) | Jain | "
           "last delivery over ideal | FCT p50 / p99 (ms) | retransmitted DATA cells |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["params"]["senders"], _labels(rows).index(r["label"]))):
        out.append(f"| {r['params']['senders']} | {r['label']} | {r['goodput_over_payload_rate']} | {r['data_drops']} | "
                   f"{r['peak_queue_cells']} | {r['jain']} | {r['last_over_ideal']} | "
                   f"{r['fct_p50_ms']} / {r['fct_p99_ms']} | {r['retransmissions']} |")
    for e in sorted((e for e in emu if e["kind"] == "incast"), key=lambda e: (e["senders"], e["label"], e.get("run", 1))):
        out.append(f"| {e['senders']} | {e['label']}, {figures.emulated_at(e)}{verdicts.run_note(e)} | "
                   f"{e['goodput_over_payload_rate']} | {e['data_drops']} | {e['peak_queue_cells']} | {e['jain']} | "
                   f"{e['last_over_ideal']} | {e['fct_p50_ms']} / {e['fct_p99_ms']} | {e['retransmissions']} |")
    if not any(r["pfc"] for r in rows):
        return out + [""]
    pfc = [r for r in rows if r["pfc"]]
    return out + ["", f"dcqcn+pfc drops nothing, yet retransmits: pauses hold the cells of one path and not of "
                  f"the others, so sprayed cells arrive further out of order than the receiver's reorder window "
                  f"allows and it NACKs cells that are still on their way (its incasts: "
                  f"{sum(r['nacks_received'] or 0 for r in pfc)} NACKs received, "
                  f"{sum(r['timeouts'] or 0 for r in pfc)} retransmission timeouts).", ""]


def _frontier_table(sim: list[dict], against: str = "dcqcn") -> list[str]:
    """srpt's degree of overcommitment K from 1 (tita+srpt) to N-1, and fair tita, per incast N."""
    sizes = verdicts.frontier_sizes(sim)
    if not sizes:
        return []
    out = ["## srpt's degree of overcommitment (simulated incasts)", "",
           "tita with credit_order srpt and `overcommit: K`: the K due flows with the least demand left share "
           "the receiver's credits round robin (K 1: one flow at a time; fair: tita's own order, every flow "
           "sharing). FCT ratios are over dcqcn's in the same incast; 'short of' names the acceptance checks "
           "(goodput, loss, queue, Jain, last) a point fails and whether its p50 or p99 is not below dcqcn's.", "",
           "| N | K | goodput over payload rate | Jain | peak queue (cells) | last delivery over ideal | "
           "FCT p50 / p99 (ms) | p50 / p99 over dcqcn's | short of |", "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        d = next((r for r in sim if r["name"] == f"incast{n}-{against}"), None)
        for k, r in verdicts.frontier_points(sim, n):
            ratios = (f"{r['fct_p50_ms'] / d['fct_p50_ms']:.2f} / {r['fct_p99_ms'] / d['fct_p99_ms']:.2f}"
                      if d and r.get("fct_p50_ms") and d.get("fct_p50_ms") else "")
            short = (", ".join(verdicts.frontier_checks(r, d)) or "nothing") if d else ""
            out.append(f"| {n} | {k} | {r['goodput_over_payload_rate']} | {r['jain']} | {r['peak_queue_cells']} | "
                       f"{r['last_over_ideal']} | {r['fct_p50_ms']} / {r['fct_p99_ms']} | {ratios} | {short} |")
    return out + ["", "![overcommit_frontier](overcommit_frontier.png)", ""]


def _load_table(sim: list[dict], emu: list[dict] = ()) -> list[str]:
    emulated = [{**e, "label": f"{e['label']} emulated"} for e in emu if e["kind"] == "load"]
    rows = [r for r in sim if r["kind"] == "load"] + emulated
    if not rows:
        return []
    labels = _labels([r for r in rows if r not in emulated]) + _labels(emulated)
    out = ["## Offered-load sweep (8 hosts, 2-tier, Poisson arrivals of 64 KiB messages to random hosts)", "",
           "DATA loss fraction (dropped at switch queues over DATA cells the hosts sent, retransmissions included) / FCT p99 (ms), per offered load (fraction of the "
           "host link rate):", "", "| load | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for load in sorted({r["offered_load"] for r in rows}):
        cells = []
        for label in labels:
            r = next((x for x in rows if x["label"] == label and x["offered_load"] == load), None)
            cells.append("" if r is None else f"{r['loss_fraction']} / {r.get('fct_p99_ms')}")
        out.append(f"| {load} | " + " | ".join(cells) + " |")
    highest = {label: figures.highest_zero_loss_load([r for r in rows if r["label"] == label]) for label in labels}
    out += ["", "Highest zero-loss offered load: " + ", ".join(
        f"{label} {value if value is not None else 'below the lowest tried'}" for label, value in highest.items()), ""]
    if emulated:
        late = [f"{e['label']} at {e['offered_load']:g}" for e in emulated if e["behind_real_time"]]
        out += [f"Emulated: the same 8-host leaf-spine, {figures.emulated_at(emulated[0])}, Poisson arrivals "
                "for 1 s of model time where the simulator has 3 s "
                "(their own draw, `poisson:SEED:PHASE`); fidelity "
                + (f"lost in {', '.join(late)}" if late else "kept in every run") + ".", ""]
    return out


def _mixed_table(sim: list[dict], emu: list[dict] = ()) -> list[str]:
    rows = [r for r in sim if r["kind"] == "mixed"]
    emulated = [e for e in emu if e["kind"] == "mixed"]
    if not rows and not emulated:
        return []
    out = ["## Short messages among long flows (4 x 512 KiB into h1, 60 x 8 KiB to h1 every 30 ms)", "",
           "| transport | short FCT p50 / p99 (ms) | short FCT p99 (base RTTs) | short completion p50 / p99 (ms) | "
           "long FCT p50 / p99 (ms) | DATA drops (cells) |",
           "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: _labels(rows).index(r["label"])):
        out.append(f"| {r['label']} | {r['short_fct_p50_ms']} / {r['short_fct_p99_ms']} | "
                   f"{r['short_fct_p99_rtts']} | {r['short_completion_p50_ms']} / {r['short_completion_p99_ms']} | "
                   f"{r['long_fct_p50_ms']} / {r['long_fct_p99_ms']} | {r['data_drops']} |")
    for e in sorted(emulated, key=lambda e: _labels(emulated).index(e["label"])):
        out.append(f"| {e['label']}, {figures.emulated_at(e)} (4 x 256 KiB; fidelity "
                   f"{'lost' if e['behind_real_time'] else 'kept'}) | {e.get('short_fct_p50_ms')} / "
                   f"{e.get('short_fct_p99_ms')} | {e.get('short_fct_p99_rtts')} | "
                   f"{e.get('short_completion_p50_ms')} / {e.get('short_completion_p99_ms')} | "
                   f"{e.get('long_fct_p50_ms')} / {e.get('long_fct_p99_ms')} | {e['data_drops']} |")
    return out + [""]


def _spread_table(sim: list[dict], emu: list[dict]) -> list[str]:
    rows = [r for r in sim if r["kind"] in ("permutation", "alltoall")]
    if not rows:
        return []
    out = ["## Permutation (256 KiB per host) and all-to-all (256 KiB per rank) on 2 and 3 tiers", "",
           "Efficiency: verified payload over the time from the first start to the last delivery, over every "
           "host's link payload rate together; its bound: the same if every host sent its own DATA cells back "
           "to back at its link rate and the last took one base RTT more (control cells not counted).", "",
           "| workload | tiers | transport | efficiency | its bound | DATA drops (cells) | FCT p50 / p99 (ms) |",
           "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["kind"], r["tiers"], _labels(rows).index(r["label"]))):
        out.append(f"| {r['kind']} | {r['tiers']} | {r['label']} | {r['efficiency']} | {r['efficiency_bound']} | "
                   f"{r['data_drops']} | "
                   f"{r.get('fct_p50_ms')} / {r.get('fct_p99_ms')} |")
    for e in sorted((e for e in emu if e["kind"] in ("permutation", "alltoall")),
                    key=lambda e: (e["kind"], e["tiers"], e["label"], e.get("run", 1))):
        out.append(f"| {e['kind']} | {e['tiers']} | {e['label']}, {figures.emulated_at(e)}{verdicts.run_note(e)} (fidelity "
                   f"{'lost' if e['behind_real_time'] else 'kept'}) | {e['efficiency']} | {e['efficiency_bound']} | "
                   f"{e['data_drops']} | {e.get('fct_p50_ms')} / {e.get('fct_p99_ms')} |")
    return out + [""]


def _plots(directory: Path, sim: list[dict], everything: list[dict]) -> list[Path]:
    """The incast and load-sweep plots of `sim` (the frontier's points left out), and the frontier's
    own plot (overcommit_frontier.png, linked from its table) from `everything`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    incast = [r for r in sim if r["kind"] == "incast"]
    if incast:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for label in _labels(incast):
            rows = sorted((r for r in incast if r["label"] == label), key=lambda r: r["params"]["senders"])
            ax.plot([r["params"]["senders"] for r in rows], [r["goodput_over_payload_rate"] for r in rows],
                    marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("senders N (N:1 incast)")
        ax.set_ylabel("goodput over payload rate")
        ax.set_ylim(0, 1.05)
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        out.append(directory / "incast_goodput.png")
        fig.savefig(out[-1], dpi=110)
        plt.close(fig)
    load = [r for r in sim if r["kind"] == "load"]
    if load:
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
        for label in _labels(load):
            rows = sorted((r for r in load if r["label"] == label), key=lambda r: r["offered_load"])
            a.plot([r["offered_load"] for r in rows], [r["loss_fraction"] for r in rows], marker="o", label=label)
            b.plot([r["offered_load"] for r in rows], [r.get("fct_p99_ms") for r in rows], marker="o",
                   label=label)
        a.set_xlabel("offered load (fraction of host link rate)")
        a.set_ylabel("DATA loss fraction")
        b.set_xlabel("offered load (fraction of host link rate)")
        b.set_ylabel("FCT p99 (ms)")
        for ax in (a, b):
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        out.append(directory / "load_sweep.png")
        fig.savefig(out[-1], dpi=110)
        plt.close(fig)
    _frontier_plot(directory, everything, plt)
    return out


def _frontier_plot(directory: Path, sim: list[dict], plt, against: str = "dcqcn") -> None:
    """Jain's index against the FCT p50 over dcqcn's, one line per incast N through K = 1 .. N-1
    and fair order."""
    sizes = verdicts.frontier_sizes(sim)
    if not sizes:
        return
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for n in sizes:
        d = next((r for r in sim if r["name"] == f"incast{n}-{against}"), None)
        points = [(k, r) for k, r in verdicts.frontier_points(sim, n) if d and r.get("fct_p50_ms")]
        xs = [r["fct_p50_ms"] / d["fct_p50_ms"] for _, r in points]
        ys = [r["jain"] for _, r in points]
        ax.plot(xs, ys, marker="o", ls="none", label=f"{n}:1")
        for (k, _), x, y in zip(points, xs, ys):
            ax.annotate(k, (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.axhline(0.99, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(f"FCT p50 over {against}'s (incast, simulated)")
    ax.set_ylabel("Jain's index over the senders")
    ax.legend(title="incast, points: K")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(directory / "overcommit_frontier.png", dpi=110)
    plt.close(fig)
