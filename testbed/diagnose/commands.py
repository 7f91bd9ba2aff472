"""`testbed diagnose RUN_DIR`."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diagnose", help="name the link or host that departed from a run's healthy twin",
        description="Replays the run's scenario without its faults on the simulator and compares run and twin "
                    "per link and host over time; prints the verdict, writes diagnosis.json and diagnosis.md in "
                    "each variant directory (docs/diagnose.md).")
    p.add_argument("run_dir", help="a run directory or one of its variant directories")
    p.set_defaults(func=diagnose_command)


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
