"""`testbed sim`: a scenario on the virtual-clock simulator, with its report."""

from __future__ import annotations

import time
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sim", help="run a scenario on the virtual-clock simulator (no root, no Mininet)",
        description="Every variant of the scenario on testbed.host.sim's model of its topology; writes "
                    "runs/<scenario>/<timestamp>-sim/ with records, summary.json, report.md and busbw.png.")
    p.add_argument("scenario", help="the scenario file")
    p.add_argument("--runs-dir", default="runs", help="where results go (default: runs/)")
    p.add_argument("--variant", action="append", default=None,
                   help="run only this variant (repeatable; default: all)")
    p.set_defaults(func=sim_command)


def sim_command(args) -> int:
    from testbed.errors import TestbedError
    from testbed.scenario import expand_variants, load_scenario
    from testbed.simulation.run import run_variant
    from testbed.telemetry.collectives import summarize_simulated, write_sim_report

    scenario = load_scenario(args.scenario)
    variants = expand_variants(scenario)
    if args.variant:
        unknown = sorted(set(args.variant) - {v.name for v in variants})
        if unknown:
            raise TestbedError(f"no variant {', '.join(unknown)}; variants: {', '.join(v.name for v in variants)}")
        variants = [v for v in variants if v.name in args.variant]
    out_dir = Path(args.runs_dir) / scenario.name / (time.strftime("%Y%m%d-%H%M%S") + "-sim")
    run_dirs, summaries = {}, {}
    for number, variant in enumerate(variants, start=1):
        run_dir = out_dir / variant.name.replace("=", "-").replace(",", "_")
        result = run_variant(variant, run_dir)
        run_dirs[variant.name] = run_dir
        summaries[variant.name] = summarize_simulated(run_dir, variant.scenario.topo)
        print(f"[{number}/{len(variants)} {variant.name}] {result['virtual_end_s']:.3f} s simulated in "
              f"{result['wall_s']:.1f} s, {'finished' if result['finished'] else 'NOT finished'}", flush=True)
    print(f"report: {write_sim_report(scenario, run_dirs, summaries, out_dir)}")
    return 0
