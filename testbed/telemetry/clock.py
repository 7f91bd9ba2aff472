"""The scenario's clock and the run's: every time a user reads is on the scenario's.

A run slowed by `scenario.timescale.slowed` (testbed run --fit, testbed sim --host-rate-mbps) has
every rate times f and every time over f; its resolved scenario records `time_stretch` = 1/f. Its
raw files (records, faults.jsonl, reroute.jsonl, stats series) and summary.json keep the run's own
clock; the report and the plots give a time t of the run as t / time_stretch, the time the
scenario file means, and say the run's clock once, beside the factor (`clock_line`).
"""

from __future__ import annotations

from pathlib import Path

import yaml


def stretch_of(run_dir: Path) -> float:
    """The run's time_stretch (1.0 when its resolved scenario has none: an unslowed or older run)."""
    path = Path(run_dir) / "scenario.resolved.yaml"
    if not path.exists():
        return 1.0
    resolved = yaml.safe_load(path.read_text()) or {}
    return float(resolved.get("time_stretch") or 1.0)


def clock_line(run_dirs: dict[str, Path]) -> str | None:
    """One sentence giving the slow-down and the run's clock, or None when every run kept the file's."""
    stretches = {name: stretch_of(d) for name, d in run_dirs.items()}
    slowed = {name: s for name, s in stretches.items() if abs(s - 1.0) > 1e-9}
    if not slowed:
        return None
    values = sorted(set(round(s, 6) for s in slowed.values()))
    which = "every variant" if len(slowed) == len(stretches) else ", ".join(slowed)
    factor = " / ".join(f"x{s:.3g}" for s in values)
    return (f"Clock: {which} ran {factor} slower than the scenario file (every rate times "
            f"{' / '.join(f'{1 / s:.3g}' for s in values)}, every time stretched by the same factor, "
            "every ratio kept). Fault and cut times and the goodput plot (its time and its rates) are on "
            "the scenario's clock; the run's own clock, on which its raw files, summary.json and every "
            "duration (completion, detection, reroute and recovery times, a simulator's virtual time) "
            "are, runs that factor slower.")
