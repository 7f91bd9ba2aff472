"""The scenario's clock and the run's: every time, duration and rate a user reads is on the scenario's.

A run slowed by `scenario.timescale.slowed` (testbed run --fit, testbed sim --host-rate-mbps) has
every rate times f and every time over f; its resolved scenario records `time_stretch` = 1/f. Its
raw files (records, faults.jsonl, reroute.jsonl, stats series, telemetry.jsonl, result.json) keep
the run's own clock, and so does `telemetry.summary.summarize_variant`. What a user reads (report.md,
report.html, summary.json, results.csv, messages.csv, the plots, a diagnosis) gives a time t of the
run as t / time_stretch and a rate r as r x time_stretch: the figures the scenario file means.
Ratios (measured over ideal, utilisation, busbw over ideal) and counts are the same on both clocks.
The run's clock is said once, beside the factor (`clock_line`).

The rule that converts a summary (`on_scenario_clock`) reads each figure's unit from its key, as
every key of summary.json names it: a key ending in _s, _ms, _us or _ns is a time (divided by the
stretch), one ending in _mbps, _gbps, _kbps, _bps or _pps a rate (multiplied); a dict or list under
such a key takes its unit. `wall_s`, the machine's own time a simulator took, is on neither clock
and stays as measured.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml


def stretch_of(run_dir: Path) -> float:
    """The run's time_stretch (1.0 when its resolved scenario has none: an unslowed or older run)."""
    path = Path(run_dir) / "scenario.resolved.yaml"
    if not path.exists():
        return 1.0
    # libyaml's safe loader where PyYAML has it: a report reads this file a few times per variant
    resolved = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    return float(resolved.get("time_stretch") or 1.0)


TIME_SUFFIXES = ("_s", "_ms", "_us", "_ns")
RATE_SUFFIXES = ("_mbps", "_gbps", "_kbps", "_bps", "_pps")
MACHINE_TIME_KEYS = frozenset({"wall_s"})  # how long the machine took: no clock of the scenario's


def _unit(key: str, inherited: str | None) -> str | None:
    if key in MACHINE_TIME_KEYS:
        return "machine"
    if key.endswith(TIME_SUFFIXES):
        return "time"
    if key.endswith(RATE_SUFFIXES):
        return "rate"
    return inherited


def _convert(value, stretch: float, unit: str | None):
    if isinstance(value, dict):
        return {k: _convert(v, stretch, _unit(str(k), unit)) for k, v in value.items()}
    if isinstance(value, list):
        return [_convert(v, stretch, unit) for v in value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if unit == "time":
        return value / stretch
    if unit == "rate":
        return value * stretch
    return value


def on_scenario_clock(summary: dict, stretch: float) -> dict:
    """A copy of one variant's summary (summarize_variant: the run's clock) with every time and rate
    on the scenario's clock, and `clock` saying so: {"scenario_clock": true, "run_time_stretch": the
    stretch}. A summary that already has `clock` is returned as it is."""
    if "clock" in summary:
        return summary
    out = _convert(summary, stretch, None)
    out["clock"] = {"scenario_clock": True, "run_time_stretch": stretch}
    return out


def summaries_on_scenario_clock(run_dirs: dict[str, Path], summaries: dict[str, dict]) -> dict[str, dict]:
    """Every variant's summary on the scenario's clock, each by its own run's stretch."""
    return {name: on_scenario_clock(s, stretch_of(run_dirs[name]) if name in run_dirs else 1.0)
            for name, s in summaries.items()}


def scenario_links(resolved: dict) -> dict:
    """A resolved scenario (a dict) with its link rates, delays and base RTT on the scenario's clock
    (as the file gives them): rates times its time_stretch, delays and the RTT over it."""
    stretch = float(resolved.get("time_stretch") or 1.0)
    if abs(stretch - 1.0) < 1e-12:
        return resolved
    out = copy.deepcopy(resolved)
    for link in (out.get("links") or {}).values():
        if isinstance(link, dict):
            if link.get("rate_mbps") is not None:
                link["rate_mbps"] = link["rate_mbps"] * stretch
            if link.get("delay_us") is not None:
                link["delay_us"] = link["delay_us"] / stretch
    derived = out.get("derived") or {}
    if derived.get("base_rtt_us") is not None:
        derived["base_rtt_us"] = derived["base_rtt_us"] / stretch
    return out


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
            "every ratio kept). Every time, duration and rate in this report, its plots, summary.json, "
            "results.csv and messages.csv is on the scenario's clock, as the file gives them (the run's "
            "divided by that factor, its rates multiplied); only the run's raw files (records, faults.jsonl, "
            "reroute.jsonl, telemetry.jsonl) and the machine's wall time are on the run's own clock.")
