"""`testbed report RUN`: recompute a finished run's summary.json, report.md and plots.

Why: the figures come from the run directory alone, so a run made before a
fix to the report can be reported again, without running the fabric.  The
scenario is the run's own copy (`scenario.yaml` in the run directory), so
an edited, moved or deleted scenario file changes nothing; each variant is
slowed by its run's time stretch as the run was. A run older than the copy
reads the file its resolved scenario names, with a note.

Nothing a run's report had is dropped: a variant diagnosed by `--diagnose`
gets its section again from its diagnosis.json (testbed diagnose registers
the hook), and a `testbed reproduce` directory gets its claims report
(testbed reproduce registers that one), its notes kept.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from testbed.errors import TestbedError


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="write a finished run's report again from its raw files",
                              description="Recompute summary.json, report.md and the plots of a run directory "
                                          "(runs/<scenario>/<timestamp>) from its variant directories.")
    p.add_argument("run", help="the run directory, e.g. runs/default/20261201-094525")
    p.add_argument("--html", action="store_true",
                   help="also write report.html: the same report as one self-contained page, plots embedded")
    p.set_defaults(func=report_command)


def report_command(args: argparse.Namespace) -> int:
    from testbed.scenario import expand_variants
    from testbed.telemetry.report import write_report
    from testbed.telemetry.rundir import RunDirError, failure, load_json, partial_line, run_scenario, variant_gaps
    from testbed.telemetry.summary import summarize_variant

    out_dir = Path(args.run)
    if not out_dir.is_dir():
        raise TestbedError(f"{out_dir}: not a directory")
    dirs, results = {}, {}
    for path in sorted(out_dir.glob("*/result.json")):
        result = load_json(path)
        if "variant" not in result:
            raise RunDirError(f"{path}: damaged, it names no variant")
        dirs[result["variant"]] = path.parent
        results[result["variant"]] = result
    again = getattr(args, "reproduce_report", None)  # testbed reproduce registers it (a layer above)
    if not dirs and again is not None and (out_dir / "sim").is_dir() and (out_dir / "results.json").is_file():
        report = again(out_dir)  # a `testbed reproduce` directory: its claims report
        print(f"report: {report}")
        return _html(args, report)
    if not dirs:
        raise TestbedError(f"{out_dir}: not a run directory: no variant directories (*/result.json) to report")
    resolved = next(iter(dirs.values())) / "scenario.resolved.yaml"
    try:
        first = yaml.safe_load(resolved.read_text()) or {}
    except FileNotFoundError:
        raise RunDirError(f"{resolved}: missing") from None
    except yaml.YAMLError as error:
        raise RunDirError(f"{resolved}: damaged, not valid YAML ({str(error).splitlines()[0]})") from None
    scenario, stale = run_scenario(out_dir, first.get("file"))
    variants = {v.name: _as_run(v, dirs.get(v.name)) for v in expand_variants(scenario)}
    gaps = {name: variant_gaps(dirs[name], results[name]) for name in variants if name in dirs}
    if stale:
        print(f"note: {stale}")
    order = [name for name in variants if name in dirs and not failure(results[name])]
    if not any(name in dirs for name in variants):
        raise RunDirError(f"{out_dir}: its variant directories ({', '.join(sorted(dirs))}) name none of the "
                          f"scenario's variants ({', '.join(variants)})")
    if not order:
        raise RunDirError(f"{out_dir}: every variant's run failed, nothing to report: " + "; ".join(
            f"{name}: {failure(results[name])}" for name in gaps))
    partial = partial_line(gaps)
    if partial:
        print(f"partial: {partial.strip('*')}")
    simulated = results[order[0]].get("driver") == "simulator"
    if simulated:  # a `testbed sim` run: no switch counters, its own report
        from testbed.telemetry.collectives import summarize_simulated, write_sim_report

        summaries = {n: summarize_simulated(dirs[n], variants[n].scenario.topo) for n in order}
        report = write_sim_report(scenario, {n: dirs[n] for n in order}, summaries, out_dir, partial)
    else:
        summaries = {n: summarize_variant(dirs[n], variants[n].scenario.topo, variants[n].scenario) for n in order}
        report = write_report(scenario, {n: dirs[n] for n in order}, summaries, out_dir, partial)
    restore = getattr(args, "restore_diagnosis", None)  # testbed diagnose registers it (a layer above)
    if restore is not None:
        restore({n: dirs[n] for n in order}, report)
    print(f"report: {report}")
    return _html(args, report)


def _as_run(variant, run_dir: Path | None):
    """The variant as it ran: slowed by its run's time stretch (`--fit`, `--host-rate-mbps`), as the run
    summarised it."""
    import dataclasses

    from testbed.scenario.timescale import slowed
    from testbed.telemetry.clock import stretch_of

    stretch = stretch_of(run_dir) if run_dir is not None else 1.0
    if abs(stretch - 1.0) < 1e-12:
        return variant
    return dataclasses.replace(variant, scenario=slowed(variant.scenario, 1.0 / stretch))


def _html(args: argparse.Namespace, report: Path) -> int:
    if args.html:
        from testbed.telemetry.html import write_html

        print(f"html: {write_html(report)}")
    return 0
