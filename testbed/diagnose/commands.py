"""`testbed diagnose RUN_DIR`."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diagnose", help="name the link, host, switch or GPU that departed from a run's healthy twin",
        description="Replays the run's scenario without its faults on the simulator and compares run and twin "
                    "per link and host over time, and a training job's iterations against the twin's (which "
                    "stalled, and whether a GPU's compute or the network held it); prints the verdict, writes "
                    "diagnosis.json and diagnosis.md in each variant directory (docs/diagnose.md).")
    p.add_argument("run_dir", help="a run directory or one of its variant directories")
    p.set_defaults(func=diagnose_command)
    for name in ("run", "sim"):  # registered before this module (testbed.cli's order)
        parser = subparsers.choices.get(name)
        if parser is not None:
            parser.add_argument("--diagnose", action="store_true",
                                help="after the variants, run testbed diagnose on each and add its verdict to "
                                     "report.md")
            parser.set_defaults(diagnose_report=report_section)
    report = subparsers.choices.get("report")  # testbed report RUN keeps the section a --diagnose run had
    if report is not None:
        report.set_defaults(restore_diagnosis=restore_section)


def report_section(run_dirs: dict, report: Path) -> None:
    """Diagnose every variant and append the verdicts to the run's report.md (a variant that cannot be
    diagnosed says why in its line)."""
    from testbed.diagnose.core import diagnose_variant, verdict_lines
    from testbed.errors import TestbedError

    verdicts = {}
    for name, run_dir in run_dirs.items():
        try:
            verdicts[name] = verdict_lines(diagnose_variant(Path(run_dir)))
        except TestbedError as error:
            verdicts[name] = [f"not diagnosed: {error}"]
        print(f"[{name}] " + "; ".join(verdicts[name]), flush=True)
    _append(report, run_dirs, verdicts)


def restore_section(run_dirs: dict, report: Path) -> None:
    """`testbed report RUN`: when any variant was diagnosed (its diagnosis.json is there), append the
    section again from those files, without replaying the twin; a variant without one says so."""
    from testbed.diagnose.core import verdict_lines
    from testbed.telemetry.rundir import load_json

    found = {name: Path(d) / "diagnosis.json" for name, d in run_dirs.items()}
    if not any(path.is_file() for path in found.values()):
        return
    verdicts = {name: (verdict_lines(load_json(path)) if path.is_file()
                       else ["not diagnosed: no diagnosis.json in its directory"]) for name, path in found.items()}
    _append(report, run_dirs, verdicts)


def _append(report: Path, run_dirs: dict, verdicts: dict[str, list[str]]) -> None:
    lines = ["", "## Diagnosis (testbed diagnose: run against its healthy twin)", ""]
    for name, run_dir in run_dirs.items():
        lines += [f"- {name}: " + "; ".join(verdicts[name]) + f" ([diagnosis]({Path(run_dir).name}/diagnosis.md))"]
    with Path(report).open("a") as out:
        out.write("\n".join(lines) + "\n")


def diagnose_command(args) -> int:
    from testbed.diagnose.core import diagnose_run, verdict_lines

    results = diagnose_run(Path(args.run_dir))
    for path, d in results.items():
        if len(results) > 1:
            print(f"[{Path(path).name}]")
        for line in verdict_lines(d):
            print(line)
        print(f"diagnosis: {Path(path) / 'diagnosis.md'} ({d['wall_s']:.1f} s)")
    return 0
