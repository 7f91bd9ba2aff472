"""`testbed tune --confirm`: the tuner's choice and the best fixed setting on the emulated fabric.

For the sizes whose simulated times fit `budget_s` once `--fit` has slowed them
(smallest first), every (size, setting) of the choice and of the best single
fixed setting runs as a collective phase of its own, back to back (each starts
1.5 x its simulated time plus ten base RTTs after the previous one, at the
nominal rates), in one scenario per load balancing mode they use
(`confirm-<mode>.yaml` in the tuning directory: the scenario's topology,
links, fabric and transport, this workload, no variants).  Each scenario runs
emulated with `--fit` (its own run directory under `confirm/`, report and
`summary.json` as any run), then on the simulator at the rate the emulated run
used (the same file slowed by the same factor, `confirm/<name>-sim/`, on the
switches the tuning ran, tuning.json's `switches`).
`confirm.json` and `confirm.md` set side by side, per size and setting: the
tuner's simulated busbw at the nominal rates, the simulated and emulated busbw
at the emulated rate, both over their ideal (the schedule's link-rate bound,
which scales with the rate), and the choice over the fixed setting in each.
Every figure is copied from the two run directories' `summary.json`
(collectives rows), so `tests/recompute_report.py` checks the emulated ones;
like every summary.json they are on the scenario's clock (telemetry.clock:
the slowed runs' busbw times their slow-down), so the tuner's nominal figure
stands beside them as it is, and `rate_mbps` is the rate the runs used.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path

import yaml

from testbed.simulation.tune import Candidate, TuneError, scenario_data
from testbed.telemetry.cells import fixed

SPACING = 1.5  # a phase's slot: its simulated time times this, plus GAP_RTTS base RTTs
GAP_RTTS = 10


def _phase_name(role: str, size: int) -> str:
    return f"{role}{size}"


def plan(scenario, result: dict, budget_s: float, factor: float) -> tuple[list[int], dict[str, list[dict]]]:
    """Sizes confirmed and, per load balancing mode, the phases ({role, size, setting, start_s, sim_us})."""
    if not result.get("best_fixed"):
        raise TuneError("no single fixed setting is valid and verified at every size; nothing to confirm against")
    fixed = Candidate(**result["best_fixed"]["setting"])
    time_of = {(m["size_bytes"], Candidate(m["algorithm"], m["channels"], m["chunk_bytes"], m["load_balancing"])):
               m.get("time_us") for m in result["measurements"]}
    gap_s = GAP_RTTS * scenario.derived.base_rtt_us / 1e6
    sizes, spent = [], 0.0
    for row in sorted(result["rows"], key=lambda r: r["size_bytes"]):
        size = row["size_bytes"]
        settings = dict.fromkeys([Candidate(**row["choice"]), fixed])
        slots = [SPACING * time_of[(size, c)] / 1e6 + gap_s for c in settings]
        if spent + sum(slots) / factor > budget_s and sizes:
            break
        if spent + sum(slots) / factor > budget_s:
            raise TuneError(f"the smallest size ({size} B) needs about {sum(slots) / factor:.0f} s emulated at the "
                            f"fitted rate, over the --confirm-budget-s of {budget_s:g}")
        spent += sum(slots) / factor
        sizes.append(size)
    phases: dict[str, list[dict]] = {}
    at: dict[str, float] = {}
    choice_of = {r["size_bytes"]: Candidate(**r["choice"]) for r in result["rows"]}
    for size in sizes:
        choice = choice_of[size]
        roles = {"both": choice} if choice == fixed else {"choice": choice, "fixed": fixed}
        for role, c in roles.items():
            t = at.get(c.load_balancing, 0.0)
            sim_us = time_of[(size, c)]
            phases.setdefault(c.load_balancing, []).append(
                {"role": role, "size_bytes": size, "setting": c, "start_s": round(t, 6), "sim_time_us": sim_us})
            at[c.load_balancing] = t + SPACING * sim_us / 1e6 + gap_s
    for lb, ps in phases.items():
        for p in ps:
            p["duration_s"] = at[lb]
    return sizes, phases


def scenario_file(scenario, lb: str, phases: list[dict], out: Path) -> Path:
    """confirm-<lb>.yaml: the scenario with this workload and load balancing, no variants or faults."""
    data = scenario_data(scenario)
    data.pop("faults", None)
    data["name"] = f"{scenario.name}-confirm-{lb}"
    data["description"] = (f"testbed tune --confirm of {scenario.name}: the tuner's choice and the best fixed "
                           f"setting, back to back, under load_balancing {lb}.")
    data.setdefault("fabric", {})["load_balancing"] = lb
    raw = next(p for p in data["workload"] if p.get("kind") == "collective")
    workload = []
    for p in phases:
        c = p["setting"]
        phase = {k: v for k, v in copy.deepcopy(raw).items() if k not in ("tuning", "count", "start_s", "name")}
        phase.update({"name": _phase_name(p["role"], p["size_bytes"]), "op": raw.get("op", "all_reduce"),
                      "algorithm": c.algorithm, "channels": c.channels, "chunk_bytes": c.chunk_bytes,
                      "sizes_bytes": [p["size_bytes"]], "start_s": p["start_s"]})
        workload.append(phase)
    data["workload"] = workload
    data["duration_s"] = round(1.2 * phases[0]["duration_s"] + 1.0, 3)
    path = out / f"confirm-{lb}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _rows(summary: dict) -> dict[str, dict]:
    (variant,) = summary.values()  # one variant: base
    return variant.get("collectives") or {}


def confirm_on_fabric(scenario, result: dict, out: Path, budget_s: float, progress=print) -> Path:
    from testbed.emulation.commands import fit_factor, run_scenario_file
    from testbed.scenario import load_scenario
    from testbed.scenario.timescale import slowed
    from testbed.scenario.variants import Variant
    from testbed.simulation.run import run_variant
    from testbed.simulation.tune import with_balancing
    from testbed.telemetry.collectives import summarize_simulated, write_sim_report

    balancings = result["space"]["load_balancing"]
    factor = min(fit_factor(Variant("base", (), with_balancing(scenario, lb))) for lb in balancings)
    sizes, phases = plan(scenario, result, budget_s, factor)
    progress(f"confirm: sizes {', '.join(map(str, sizes))} B on the emulated fabric "
             f"(about x{1 / factor:.3g} slower than nominal)")
    runs = out / "confirm"
    runs.mkdir(parents=True, exist_ok=True)
    rows = []
    for lb, ps in phases.items():
        path = scenario_file(scenario, lb, ps, out)
        emu_dir = run_scenario_file(str(path), str(runs), fit=True, what="testbed tune --confirm")
        emu = _rows(json.loads((emu_dir / "summary.json").read_text()))
        confirm_scenario = load_scenario(str(path))
        resolved = yaml.safe_load((emu_dir / "base" / "scenario.resolved.yaml").read_text())
        rate = resolved["links"]["host"]["rate_mbps"]
        f = rate / confirm_scenario.links.host.rate_mbps
        slow = slowed(confirm_scenario, f) if f < 1 else confirm_scenario
        sim_dir = runs / f"{confirm_scenario.name}-sim"
        run_variant(Variant("base", (), slow), sim_dir / "base", result.get("switches", "model"))
        sim_summary = {"base": summarize_simulated(sim_dir / "base", slow.topo)}
        write_sim_report(slow, {"base": sim_dir / "base"}, sim_summary, sim_dir)
        sim = _rows(json.loads((sim_dir / "summary.json").read_text()))
        for p in ps:
            name = f"{_phase_name(p['role'], p['size_bytes'])}@{p['size_bytes']}B#0"
            e, s = emu.get(name, {}), sim.get(name, {})
            tuned = next(m for m in result["measurements"] if m["size_bytes"] == p["size_bytes"]
                         and Candidate(m["algorithm"], m["channels"], m["chunk_bytes"], m["load_balancing"])
                         == p["setting"])
            rows.append({"size_bytes": p["size_bytes"], "role": p["role"], "setting": asdict(p["setting"]),
                         "collective": name, "emulated_run": str(emu_dir), "simulated_run": str(sim_dir),
                         "rate_mbps": rate, "tuner_sim_busbw_mbps": tuned.get("busbw_mbps"),
                         "tuner_sim_rate_mbps": scenario.links.host.rate_mbps,
                         "sim_busbw_mbps": s.get("busbw_mbps"), "sim_busbw_over_ideal": s.get("busbw_over_ideal"),
                         "sim_verified": s.get("verified", False),
                         "emulated_busbw_mbps": e.get("busbw_mbps"),
                         "emulated_busbw_over_ideal": e.get("busbw_over_ideal"),
                         "emulated_verified": e.get("verified", False),
                         "emulated_ranks_done": e.get("ranks_done", 0), "ranks": e.get("ranks", s.get("ranks"))})
    rows.sort(key=lambda r: (r["size_bytes"], r["role"]))
    doc = {"sizes": sizes, "rows": rows, "comparison": _compare(rows)}
    (out / "confirm.json").write_text(json.dumps(doc, indent=1))
    path = out / "confirm.md"
    path.write_text(markdown(doc))
    return path


def _compare(rows: list[dict]) -> list[dict]:
    """Per size: choice over fixed, emulated and simulated (1 when they are the same setting)."""
    out = []
    for size in sorted({r["size_bytes"] for r in rows}):
        mine = {r["role"]: r for r in rows if r["size_bytes"] == size}
        if "both" in mine:
            out.append({"size_bytes": size, "same_setting": True, "emulated_choice_over_fixed": 1.0,
                        "sim_choice_over_fixed": 1.0})
            continue
        c, f = mine.get("choice", {}), mine.get("fixed", {})

        def ratio(key):
            a, b = c.get(key), f.get(key)
            return a / b if a and b else None

        out.append({"size_bytes": size, "same_setting": False,
                    "emulated_choice_over_fixed": ratio("emulated_busbw_mbps"),
                    "sim_choice_over_fixed": ratio("sim_busbw_mbps")})
    return out


def markdown(doc: dict) -> str:
    rows = doc["rows"]
    rate = rows[0]["rate_mbps"] if rows else None
    lines = ["# The tuner's choice on the emulated fabric", "",
             f"Each setting ran as its own collective phase, back to back, emulated with `--fit` (host links "
             f"{fixed(rate, 4)} Mbit/s: the run's clock) and on the simulator at that same rate; the tuner's own "
             f"figure is the simulator at the scenario's nominal {rows[0]['tuner_sim_rate_mbps'] if rows else '-'} "
             "Mbit/s. busbw in Mbit/s of payload (nccl-tests' factors) on the scenario's clock (the runs' busbw "
             "times their slow-down); / ideal: over the schedule's link-rate bound (a ratio, the same on both clocks). role: choice = the tuner's per-size choice, fixed = the best single fixed "
             "setting, both = the two are the same setting.", "",
             "| size (B) | role | setting | tuner busbw, sim nominal | sim busbw | sim / ideal | emulated busbw | "
             "emulated / ideal | emulated verified |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = Candidate(**r["setting"])
        lines.append(f"| {r['size_bytes']} | {r['role']} | {c.label()} | {fixed(r['tuner_sim_busbw_mbps'], 3)} | "
                     f"{fixed(r['sim_busbw_mbps'], 4)} | {fixed(r['sim_busbw_over_ideal'], 3)} | "
                     f"{fixed(r['emulated_busbw_mbps'], 4)} | {fixed(r['emulated_busbw_over_ideal'], 3)} | "
                     f"{'yes' if r['emulated_verified'] else 'NO'} ({r['emulated_ranks_done']}/{r['ranks']} ranks) |")
    lines += ["", "| size (B) | choice / fixed, emulated | choice / fixed, simulated |", "|---|---|---|"]
    for c in doc["comparison"]:
        note = " (same setting)" if c["same_setting"] else ""
        lines.append(f"| {c['size_bytes']} | {fixed(c['emulated_choice_over_fixed'], 3)}{note} | "
                     f"{fixed(c['sim_choice_over_fixed'], 3)}{note} |")
    runs = sorted({(r["emulated_run"], r["simulated_run"]) for r in rows})
    lines += ["", "Run directories: " + "; ".join(f"emulated `{e}`, simulated `{s}`" for e, s in runs), ""]
    return "\n".join(lines) + "\n"
