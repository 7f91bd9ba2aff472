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
"""

from __future__ import annotations

import json
import os
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
    simulated = result.get("driver") == "simulator"
    telemetry = run_dir / "telemetry.jsonl"
    if not simulated:
        if not telemetry.exists():
            gaps.append("telemetry.jsonl is missing: no switch counter, link load or queue figure")
        else:
            _, cut = load_jsonl(telemetry)
            if cut:
                gaps.append(cut)
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
