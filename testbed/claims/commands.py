"""`testbed reproduce`: run the claims experiments and write their report (see the package)."""

from __future__ import annotations

import time
from pathlib import Path

from testbed.errors import TestbedError
from testbed.telemetry.rundir import default_runs_dir


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "reproduce", help="run the transport's claims experiments (simulator and emulated fabric), one report",
        description="Incast N:1, short messages among long flows, an offered-load sweep, permutation and "
                    "all-to-all on 2 and 3 tiers on the simulator, and on the emulated fabric (root and Mininet) "
                    "incast 7:1 and 15:1, the permutation on 2 and 3 tiers, short messages among long flows and "
                    "a load sweep (tita, dcqcn and dcqcn on a lossless fabric), for every congestion control; writes "
                    "runs/reproduce/<timestamp>/report.md with a claims table, its plots and results.json.")
    p.add_argument("--runs-dir", default=default_runs_dir(),
                   help="where results go (default: runs/, or $TESTBED_RUNS_DIR when set)")
    p.add_argument("--cc", action="append", default=None,
                   help="a congestion control to compare (repeatable; default: every one the testbed has)")
    p.add_argument("--quick", action="store_true", help="the small experiments only (a first look, minutes)")
    p.add_argument("--no-emulated", action="store_true", help="the simulator only")
    p.add_argument("--report", metavar="DIR", default=None,
                   help="instead: recompute the report of an existing reproduce directory from its files")
    from testbed.simulation import sweep

    sweep.add_options(p)  # the simulated experiments side by side (simulation/sweep.py)
    p.set_defaults(func=reproduce_command)
    report = subparsers.choices.get("report")  # testbed report DIR on a reproduce directory writes its report
    if report is not None:
        report.set_defaults(reproduce_report=report_again)


def report_again(directory: Path) -> Path:
    """A reproduce directory's report.md written again from its files (notes kept)."""
    from testbed.claims import report

    if not (directory / "sim").is_dir():
        raise TestbedError(f"{directory}: not a reproduce directory (it has no sim/)")
    return report.write(directory)


def reproduce_command(args) -> int:
    from testbed.claims import emulated, report
    from testbed.host.cc import ALGORITHMS

    if args.report:
        print(f"report: {report_again(Path(args.report))}")
        return 0
    ccs = args.cc or list(ALGORITHMS)
    unknown = [cc for cc in ccs if cc not in ALGORITHMS]
    if unknown:
        raise TestbedError(f"--cc {unknown[0]}: no such congestion control (have: {', '.join(ALGORITHMS)})")
    if "tita" not in ccs:
        raise TestbedError("--cc: the claims are TiTa's; include tita")
    why_not = "--no-emulated" if args.no_emulated else emulated.unavailable()
    if why_not:
        return _reproduce(args, ccs, why_not)
    from testbed.emulation.runlock import hold_run_lock

    # the machine's run lock before anything is written: a second run is refused at once
    with hold_run_lock("testbed reproduce"):
        return _reproduce(args, ccs, None)


def _reproduce(args, ccs: list[str], why_not: str | None) -> int:
    from testbed import progress
    from testbed.claims import experiments, report
    from testbed.simulation import sweep

    directory = Path(args.runs_dir) / "reproduce" / time.strftime("%Y%m%d-%H%M%S")
    directory.mkdir(parents=True)
    plan = experiments.plan(ccs, quick=args.quick)
    with progress.display(len(plan), "simulated experiments") as shown:
        count = 0

        def done(index: int, value: dict) -> None:
            nonlocal count
            count += 1
            print(f"[{count}/{len(plan)}] simulated {plan[index].name} in {value['wall_s']:.1f} s", flush=True)
            shown.advance(plan[index].name)

        sweep.run([sweep.Unit(experiments.run_unit, (e,)) for e in plan], getattr(args, "jobs", 1),
                  getattr(args, "cluster", None), directory, done)
        notes = [f"simulated: {len(plan)} experiments, congestion controls {', '.join(ccs)}, and dcqcn with PFC "
                 f"(XOFF/XON at {experiments.PFC_THRESHOLDS[0]}/{experiments.PFC_THRESHOLDS[1]} DATA cells per "
                 "ingress link)"]
        if why_not:
            notes.append(f"emulated: not run ({why_not})")
        else:  # each emulated run shows its own task (emulation.run) under this display
            notes.append(_emulate(directory, [cc for cc in ccs if cc in ("tita", "dcqcn")], args.quick))
    notes.append("not reproduced here: all-to-all on the emulated fabric, nscc on the emulated fabric, fabrics "
                 "of the published size, and the emulated fabric at the simulator's 5 Mbit/s (each emulated "
                 "scenario runs at the rate `--fit` finds for this machine, given in its rows and its own report)")
    print(f"report: {report.write(directory, notes)}")
    return 0


def _emulate(directory: Path, ccs: list[str], quick: bool) -> str:
    from testbed.claims import emulated

    sizes = (7,) if quick else (7, 15)
    progress = lambda m: print(m, flush=True)  # noqa: E731
    runs = 1 if quick else emulated.REPEATS  # of incast 7:1 and the 2-tier permutation
    for n in sizes:
        emulated.run_incast(n, ccs, directory, progress, runs if n == 7 else 1)
    spreads = (("permutation", 2),) if quick else (("permutation", 2), ("permutation", 3))
    for kind, tiers in spreads:
        emulated.run_spread(kind, tiers, ccs, directory, progress, runs if tiers == 2 else 1)
    if not quick:
        emulated.run_mixed(ccs, directory, progress)
        emulated.run_load_sweep(ccs, directory, progress)
    extras = []
    if "dcqcn" in ccs:
        extras.append("dcqcn on a lossless fabric (the builtin traffic manager's PFC)")
    if "tita" in ccs:
        extras.append("tita with credit_order srpt in the incasts and the mixed workload, and srpt with "
                      "overcommit N-1 in the N:1 incasts")
    also = ", and " + "; ".join(extras) if extras else ""
    more = "" if quick else (", short messages among long flows, and a load sweep at "
                             + ", ".join(f"{load:g}" for load in emulated.LOADS) + " of the link rate,")
    again = f" (incast 7:1 and the 2-tier permutation {runs} times each)" if runs > 1 else ""
    return (f"emulated: incast {' and '.join(f'{n}:1' for n in sizes)}, the permutation on "
            f"{' and '.join(f'{t} tiers' for _, t in spreads)}{more} for "
            f"{', '.join(ccs)}{also} on the builtin target{again} (each scenario's own `testbed run` report is "
            "under emulated/)")
