"""Incast N:1 and a permutation on the emulated fabric, for the claims table's emulated rows.

Each scenario is a `testbed run` of its own (the run directory and report of
`testbed run`, under emulated/), with every variant slowed by one common
factor when the machine cannot hold the links' rate (`--fit`, every ratio
kept). A scenario run `runs` times keeps its first run in emulated/NAME/ and
run K in emulated/NAME-runK/, all at that one factor. Needs root and Mininet;
without them the claims table says so.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from testbed.scenario import capacity

# The simulator's load sweep and mixed workload (experiments._run_load, _run_mixed) as scenarios
# on its leaf-spine (8 hosts): Poisson arrivals of 64 KiB messages for 1 s of model time (the
# simulator's 3 s become minutes of wall time once a run is slowed to fit), and four long flows into
# h1 (256 KiB each, where the simulator has 512 KiB: the same 1.8 s of shorts overlap them) with
# 60 short 8 KiB messages from three other hosts, one every 30 ms.
LEAF_SPINE = """
name: {name}
duration_s: 30
seed: 1
topology: {{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2}}
links: {{rate_mbps: 5, delay_us: 2500}}
fabric: {{load_balancing: spray, cell_size: 1024}}
transport: {{cc: tita}}
workload:
  - {{kind: pingall}}
{workload}
variants: {{}}
"""
LOAD_WORKLOAD = "  - {kind: poisson, start_s: 3, load: 1.0, message_bytes: 65536, arrivals_s: 1.0}"
LOADS = (0.2, 0.5, 1.0)
# Runs of the scenarios whose figures move most from run to run on this machine (incast 7:1: dcqcn's
# median sender 0.94-1.04 of tita's between two reproduces; the 2-tier permutation: tita's efficiency
# 0.74-0.79): the agreement rows hold the spread of the runs against the simulator's.
REPEATS = 3
MIXED_WORKLOAD = """  - {kind: incast, start_s: 3, receiver: h1, senders: [h2, h3, h4, h5], message_bytes: 262144}
  - {kind: stream, start_s: 3.1, receiver: h1, senders: [h6, h7, h8], message_bytes: 8192, count: 60, interval_s: 0.03}"""


def unavailable() -> str | None:
    """Why this machine cannot run the emulated part (None: it can)."""
    if os.geteuid() != 0:
        return "not root (the emulated fabric needs network namespaces)"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet is not importable (Debian's mininet package, and a venv with --system-site-packages)"
    return None


def with_pfc_variant(text: str, ccs: list[str], axes: str = "", srpt: bool = False,
                     overcommit: int = 1) -> list[str]:
    """The scenario for every cc, and (with dcqcn among them) dcqcn on a lossless fabric as it is
    deployed: the same scenario with fabric.pfc, variant cc=dcqcn,pfc=true; `axes`: more variant
    axes of both ("workload.1.load: [...]"); `srpt` (with tita among them): tita with Homa's
    credit order too, variant cc=tita,credit_order=srpt; `overcommit` K > 1: and srpt sharing the
    credits among K flows, variant cc=tita,credit_order=srpt,overcommit=K."""
    base, _, _ = text.rpartition("variants:")
    more = f", {axes}" if axes else ""
    texts = [base + "variants: {cc: [%s]%s}\n" % (", ".join(ccs), more)]
    if "dcqcn" in ccs:
        texts.append(base + "variants: {cc: [dcqcn], pfc: [true]%s}\n" % more)
    if srpt and "tita" in ccs:
        texts.append(base + "variants: {cc: [tita], credit_order: [srpt]%s}\n" % more)
        if overcommit > 1:
            texts.append(base + "variants: {cc: [tita], credit_order: [srpt], overcommit: [%d]%s}\n"
                         % (overcommit, more))
    return texts


def run_incast(senders: int, ccs: list[str], directory: Path, progress=print, runs: int = 1) -> None:
    """The N:1 scenario for every cc (and dcqcn with PFC, tita with srpt, and srpt overcommitted
    to all senders but one, the simulated frontier's point that keeps the acceptance at 7:1 and
    15:1 alike), as `testbed run`s under directory/emulated/."""
    from testbed.claims.experiments import incast_text

    text = incast_text(senders, ccs[0]) + "variants: {}\n"
    run_scenario(with_pfc_variant(text, ccs, srpt=True, overcommit=senders - 1), f"claims-incast{senders}",
                 directory, progress, runs)


def run_spread(kind: str, tiers: int, ccs: list[str], directory: Path, progress=print, runs: int = 1) -> None:
    """The simulator's permutation or all-to-all scenario on 2 or 3 tiers (experiments.scenario_text)
    for every cc (and dcqcn with PFC)."""
    from testbed.claims.experiments import scenario_text

    name = "claims-permutation" if (kind, tiers) == ("permutation", 2) else f"claims-{kind}-{tiers}tier"
    text = scenario_text(kind, tiers, ccs[0]).replace(f"name: claims-{tiers}tier", f"name: {name}")
    run_scenario(with_pfc_variant(text + "variants: {}\n", ccs), name, directory, progress, runs)


def run_load_sweep(ccs: list[str], directory: Path, progress=print) -> None:
    """Poisson offered load at each of LOADS, every cc (and dcqcn with PFC): one scenario, one fit."""
    text = LEAF_SPINE.format(name="claims-load", workload=LOAD_WORKLOAD)
    axes = "workload.1.load: [%s]" % ", ".join(f"{load:g}" for load in LOADS)
    run_scenario(with_pfc_variant(text, ccs, axes), "claims-load", directory, progress)


def run_mixed(ccs: list[str], directory: Path, progress=print) -> None:
    """Short messages among long flows into h1, every cc (and dcqcn with PFC, tita with srpt)."""
    text = LEAF_SPINE.format(name="claims-mixed", workload=MIXED_WORKLOAD)
    run_scenario(with_pfc_variant(text, ccs, srpt=True), "claims-mixed", directory, progress)


def run_scenario(texts: list[str], name: str, directory: Path, progress=print, runs: int = 1) -> None:
    """Every variant of the scenario texts (one scenario, its variants in several texts when no one
    matrix gives them), slowed by one common factor if needed, with one report; `runs` times."""
    from testbed.emulation.commands import REPO_ROOT, fitted_together
    from testbed.emulation.run import VariantRun
    from testbed.scenario import expand_variants, parse_scenario
    from testbed.telemetry.report import write_report
    from testbed.telemetry.summary import summarize_variant

    scenarios = [parse_scenario(text, f"{name}.yaml") for text in texts]
    scenario = scenarios[0]
    variants = fitted_together([v for s in scenarios for v in expand_variants(s)])
    for variant in variants:
        progress(capacity.check(variant.scenario))
    for run in range(1, runs + 1):
        what = scenario.name if run == 1 else f"{scenario.name}-run{run}"
        out_dir = directory / "emulated" / what
        run_dirs, summaries = {}, {}
        for variant in variants:
            run_dir = out_dir / variant.name.replace("=", "-").replace(",", "_")
            started = time.monotonic()
            VariantRun(variant, run_dir, REPO_ROOT, progress=lambda m: None).run()
            run_dirs[variant.name] = run_dir
            summaries[variant.name] = summarize_variant(run_dir, variant.scenario.topo, variant.scenario)
            progress(f"emulated {what} {variant.name}: done in {time.monotonic() - started:.0f} s")
        write_report(scenario, run_dirs, summaries, out_dir)
