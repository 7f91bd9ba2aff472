"""Reading a run directory with its damage named, not hidden.

A killed run leaves files cut short, a failed run leaves a result that says
so, and a moved or deleted file leaves a hole. The rules every reader of a
run directory follows:

* A file that must be there (a variant's `result.json`) and is missing or
  is not valid JSON stops the reader with one line naming the file and
  what is wrong.
* A JSON-lines file whose last line is cut short (no newline, not valid
  JSON) is what a killed writer leaves: the lines before it are read and
  the cut is reported. A damaged line anywhere else stops the reader with
  the file and line number.
* What a report needs but cannot have (a failed variant, no telemetry, a
  host's records) makes the report partial: `variant_gaps` lists each gap
  in one line, and the report opens with them. A failed variant's figures
  are not computed at all.
* The switch telemetry (`telemetry.jsonl`) is partial when it is missing,
  empty, cut short (its last line), or ends before the host records do
  (`telemetry_cover`: its last sample more than one of its sample periods
  plus END_SLACK_S before the hosts' last record or NIC sample, as a killed
  run leaves it). What it covers then ends at the earliest last sample of
  the switches whose samples end with the file (a killed writer may have cut
  its last round part-way); a switch whose samples end well before the file
  does is not damage (a stopped switch writes no sample). A switch of the
  topology with no sample at all is a gap too, when the reader knows the
  topology. Every time a gap line gives is on the scenario's clock
  (telemetry.clock).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError

RUNS_DIR_VARIABLE = "TESTBED_RUNS_DIR"


def default_runs_dir() -> str:
    """Where the commands put results without --runs-dir: $TESTBED_RUNS_DIR when set (a test
    session sets its own), else runs/ under the current directory."""
    return os.environ.get(RUNS_DIR_VARIABLE) or "runs"


class RunDirError(TestbedError):
    """A run directory that cannot be read as it is."""


def load_json(path: Path) -> dict:
    """A JSON file that must be there, or one line saying why it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise RunDirError(f"{path}: missing") from None
    except OSError as error:
        raise RunDirError(f"{path}: cannot be read ({error.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise RunDirError(f"{path}: damaged, not valid JSON at line {error.lineno} column {error.colno} "
                          f"({error.msg})") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: damaged, not a JSON object")
    return data


def load_jsonl(path: Path) -> tuple[list[dict], str | None]:
    """The rows of a JSON-lines file, and a note when its last line was cut short (else None)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise RunDirError(f"{path}: cannot be read ({error.strerror})") from None
    lines = text.split("\n")
    rows, cut = [], None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            if number == len(lines) and not text.endswith("\n"):
                cut = f"{path.name}: its last line ({number}) is cut short, as a killed run leaves it; read up to it"
                break
            raise RunDirError(f"{path}:{number}: damaged, not a JSON line ({error.msg})") from None
    return rows, cut


TELEMETRY = "telemetry.jsonl"
END_SLACK_S = 0.2  # beyond one sample period: two 100 ms bins of clock and scheduling between processes


@dataclass
class TelemetryCover:
    """What a run's switch telemetry covers (times on the run's own clock).

    `rows`: its samples in time order (a cut last line left out); `gaps`: why it is partial, a line
    each, times on the scenario's clock (empty: it is whole); `links`: whether it holds any counter
    at all (a switch sampled twice or more: one sample counts nothing); `end_s`: the last instant
    every switch that ends with the file was sampled (None without counters); `records_end_s`: the
    hosts' last record or NIC sample (None without either)."""

    rows: list[dict]
    gaps: list[str]
    links: bool
    end_s: float | None
    records_end_s: float | None


def records_end(run_dir: Path) -> float | None:
    """The hosts' last word on the run's clock: the latest time in records/<host>.jsonl (a message's
    delivery or acknowledgement) or in a host's NIC series (records/<host>.stats.json's t_s)."""
    records = Path(run_dir) / "records"
    times: list[float] = []
    for path in sorted(records.glob("*.jsonl")) if records.is_dir() else []:
        for r in load_jsonl(path)[0]:
            times += [float(r[k]) / 1e6 for k in ("delivered_us", "acked_us") if isinstance(r.get(k), (int, float))]
    for path in sorted(records.glob("*.stats.json")) if records.is_dir() else []:
        series = load_json(path).get("series")
        stamps = series.get("t_s") if isinstance(series, dict) else None
        times += [float(t) for t in (stamps or [])[-1:] if isinstance(t, (int, float))]
    return max(times, default=None)


def telemetry_cover(run_dir: Path, switches=()) -> TelemetryCover:
    """The run's switch telemetry and what it covers, by the rules of this module's docstring;
    `switches` (the topology's, when the reader knows them): one of them never sampled is a gap too."""
    from testbed.telemetry.clock import stretch_of

    run_dir = Path(run_dir)
    path = run_dir / TELEMETRY
    stretch = stretch_of(run_dir)
    hosts_end = records_end(run_dir)
    if not path.exists():
        return TelemetryCover([], [f"{TELEMETRY} is missing"], False, None, hosts_end)
    rows, cut = load_jsonl(path)
    gaps = [cut] if cut else []
    if not rows:
        return TelemetryCover([], gaps + [f"{TELEMETRY} is empty"], False, None, hosts_end)
    times: dict[str, list[float]] = {}
    for number, r in enumerate(rows, 1):
        try:
            times.setdefault(str(r["switch"]), []).append(float(r["t_s"]))
        except (KeyError, TypeError, ValueError):
            raise RunDirError(f"{path}: its sample {number} (of its lines that are not blank) has no switch or "
                              "time (t_s)") from None
    rows = sorted(rows, key=lambda r: float(r["t_s"]))
    unseen = sorted(set(switches) - set(times))
    if unseen:
        gaps.append(f"{TELEMETRY} has no sample of {', '.join(unseen)}: no counter of {'its' if len(unseen) == 1 else 'their'} ports")
    steps = sorted(b - a for ts in times.values() for a, b in zip(sorted(ts), sorted(ts)[1:]) if b > a)
    if not steps:
        return TelemetryCover(rows, gaps + [f"{TELEMETRY} has no switch sampled twice: it counts nothing"],
                              False, None, hosts_end)
    period = steps[len(steps) // 2]
    lasts = {switch: max(ts) for switch, ts in times.items()}
    file_end = max(lasts.values())
    end = min(t for t in lasts.values() if t >= file_end - period - END_SLACK_S)
    if hosts_end is not None and hosts_end > file_end + period + END_SLACK_S:
        gaps.append(f"{TELEMETRY}'s last sample is at {file_end / stretch:.1f} s, the hosts' last record at "
                    f"{hosts_end / stretch:.1f} s: its counters stop before the hosts' do")
    return TelemetryCover(rows, gaps, True, end, hosts_end)


def failure(result: dict) -> str | None:
    """Why the run of this variant failed (its result.json says so), None when it did not."""
    return result.get("failed") or None


def planned_hosts(run_dir: Path) -> set[str]:
    """Hosts that had a message to send or receive (agents/workload.json), empty when not recorded."""
    path = Path(run_dir) / "agents" / "workload.json"
    if not path.exists():
        return set()
    messages = load_json(path).get("messages") or []
    return {m[k] for m in messages for k in ("src", "dst") if m.get(k)}


def variant_gaps(run_dir: Path, result: dict) -> list[str]:
    """What this variant's report lacks, a line each (empty: nothing)."""
    run_dir = Path(run_dir)
    gaps = []
    why = failure(result)
    if why:
        return [f"the run failed ({why}); no figure is computed from it"]
    if result.get("driver") != "simulator":  # the simulator's own figures need no switch telemetry
        cover = telemetry_cover(run_dir)
        gaps += [f"{gap}: no switch counter, link load or queue figure" if not cover.links else gap
                 for gap in cover.gaps]
    records = run_dir / "records"
    missing = sorted(h for h in planned_hosts(run_dir) if not (records / f"{h}.jsonl").exists())
    if missing:
        gaps.append(f"records of {', '.join(missing)} are missing (records/<host>.jsonl): their messages "
                    "count as not delivered")
    return gaps


def partial_line(gaps: dict[str, list[str]]) -> str | None:
    """The report's first line when anything is missing, naming each variant's gaps; None when whole."""
    parts = [f"{name}: {'; '.join(lines)}" for name, lines in gaps.items() if lines]
    if not parts:
        return None
    return "**Partial report: " + " | ".join(parts) + ".**"


SCENARIO_COPY = "scenario.yaml"  # the scenario file as the run read it, in the run directory


def keep_scenario_copy(scenario, out_dir: Path) -> None:
    """Keep the scenario file's text beside the run's variants, so a report rebuilt later reads the
    scenario the run was made from, not the file as it is by then."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        text = Path(scenario.file).read_text()
    except OSError as error:
        raise RunDirError(f"{scenario.file}: cannot keep a copy of the scenario in {out_dir}: "
                          f"{error.strerror}") from None
    (out_dir / SCENARIO_COPY).write_text(text)


def run_scenario(out_dir: Path, named_file: str | None):
    """(the scenario the run was made from, a note or None): the run's own copy when it kept one,
    else the file its resolved scenario names, as it is now (an older run), with a note saying so."""
    from testbed.scenario import load_scenario

    copy = Path(out_dir) / SCENARIO_COPY
    if copy.is_file():
        return load_scenario(str(copy)), None
    source = Path(named_file or "")
    if not source.is_file():
        raise RunDirError(f"{out_dir}: the run kept no copy of its scenario ({SCENARIO_COPY}) and the file it "
                          f"names ({source}) is not there")
    return load_scenario(str(source)), (f"the run kept no copy of its scenario: read from {source} as it is "
                                        "now, which may differ from what was run")


def load_yaml(path: Path) -> dict:
    """A YAML mapping that must be there, or one line saying why it cannot be read."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise RunDirError(f"{path}: missing") from None
    except OSError as error:
        raise RunDirError(f"{path}: cannot be read ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise RunDirError(f"{path}: damaged, not valid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: damaged, not a YAML mapping")
    return data
