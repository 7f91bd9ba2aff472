"""`testbed report` on damaged run directories: one line naming the file and what is wrong, or a
report whose first line says it is partial and what is missing; never a traceback, and no figure
from a variant whose run failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from run_fixture import make_run

from testbed.cli import main
from testbed.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]
NAMES = ("load_balancing=ecmp", "load_balancing=spray")


@pytest.fixture
def run(tmp_path):
    scenario = load_scenario(str(ROOT / "scenarios" / "default.yaml"))
    out = tmp_path / "run"
    for name, lb in zip(NAMES, ("ecmp", "spray_rr_entropy")):
        d = make_run(out / name.replace("=", "-"), scenario, load_balancing=lb)
        result = json.loads((d / "result.json").read_text())
        result["variant"] = name
        (d / "result.json").write_text(json.dumps(result))
        resolved = yaml.safe_load((d / "scenario.resolved.yaml").read_text())
        resolved["file"] = str(ROOT / "scenarios" / "default.yaml")
        (d / "scenario.resolved.yaml").write_text(yaml.safe_dump(resolved))
    return out


def report(run, capsys):
    code = main(["report", str(run)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


def first_line(run) -> str:
    return (run / "report.md").read_text().splitlines()[0]


def test_a_whole_run_is_not_marked_partial(run, capsys):
    code, out, err = report(run, capsys)
    assert code == 0 and err == ""
    assert not first_line(run).startswith("**Partial")


def test_a_telemetry_file_cut_short_gives_a_partial_report(run, capsys):
    path = run / "load_balancing-ecmp" / "telemetry.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # a killed run stopped mid-line
    code, out, err = report(run, capsys)
    assert code == 0, err
    line = first_line(run)
    assert line.startswith("**Partial report:") and "telemetry.jsonl" in line and "cut short" in line


def test_an_empty_telemetry_file_gives_a_partial_report(run, capsys):
    """An emptied telemetry.jsonl counts nothing, as a missing one (telemetry/rundir.py's rules, which
    testbed diagnose follows too)."""
    (run / "load_balancing-ecmp" / "telemetry.jsonl").write_text("")
    code, out, err = report(run, capsys)
    assert code == 0, err
    assert "telemetry.jsonl is empty: no switch counter, link load or queue figure" in first_line(run)


def test_telemetry_ending_before_the_host_records_gives_a_partial_report(run, capsys):
    path = run / "load_balancing-ecmp" / "telemetry.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]  # samples at 0.5, 2.0 and 3.5 s
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["t_s"] <= 0.5)
                    + "".join(json.dumps({**r, "t_s": 0.6}) + "\n" for r in rows if r["t_s"] == 2.0))
    code, out, err = report(run, capsys)
    assert code == 0, err
    assert ("telemetry.jsonl's last sample is at 0.6 s, the hosts' last record at 3.0 s: its counters stop "
            "before the hosts' do") in first_line(run)


def test_a_damaged_line_inside_telemetry_is_one_line(run, capsys):
    path = run / "load_balancing-ecmp" / "telemetry.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:10]
    path.write_text("\n".join(lines) + "\n")
    code, out, err = report(run, capsys)
    assert code == 1 and "\n" not in err
    assert "telemetry.jsonl:2: damaged" in err


def test_a_corrupt_result_is_one_line(run, capsys):
    (run / "load_balancing-spray" / "result.json").write_text('{"variant": "load_balancing=spray", ')
    code, out, err = report(run, capsys)
    assert code == 1 and "\n" not in err and "result.json: damaged, not valid JSON" in err


def test_missing_records_are_named_in_the_first_line(run, capsys):
    (run / "load_balancing-ecmp" / "records" / "h1.jsonl").unlink()
    code, out, err = report(run, capsys)
    assert code == 0, err
    assert "records of h1 are missing" in first_line(run)


def test_a_failed_variant_is_named_and_gives_no_figures(run, capsys):
    path = run / "load_balancing-spray" / "result.json"
    result = json.loads(path.read_text())
    result["failed"] = "switch leaf1: cannot load p4src/nothere.p4"
    path.write_text(json.dumps(result))
    code, out, err = report(run, capsys)
    assert code == 0, err
    line = first_line(run)
    assert "load_balancing=spray: the run failed (switch leaf1: cannot load p4src/nothere.p4)" in line
    summary = json.loads((run / "summary.json").read_text())
    assert list(summary) == ["load_balancing=ecmp"]


def test_every_variant_failed_is_one_line(run, capsys):
    for name in ("load_balancing-ecmp", "load_balancing-spray"):
        path = run / name / "result.json"
        result = json.loads(path.read_text())
        result["failed"] = "ping-all failed"
        path.write_text(json.dumps(result))
    code, out, err = report(run, capsys)
    assert code == 1 and "\n" not in err and "every variant's run failed" in err


def test_not_a_run_directory_is_one_line(tmp_path, capsys):
    code, out, err = report(tmp_path, capsys)
    assert code == 1 and "\n" not in err and "not a run directory" in err
    code, out, err = report(tmp_path / "nothere", capsys)
    assert code == 1 and "not a directory" in err


SMALL = """name: small
description: as run
duration_s: 3
topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
links: {rate_mbps: 20, delay_us: 500}
workload:
  - {kind: permutation, start_s: 0.1, message_bytes: 65536, cross_tor: true}
variants: {load_balancing: [ecmp, spray]}
"""


def test_a_report_rebuilt_after_the_scenario_file_changed_equals_the_original(tmp_path, capsys):
    source = tmp_path / "small.yaml"
    source.write_text(SMALL)
    assert main(["sim", str(source), "--runs-dir", str(tmp_path / "runs")]) == 0
    (run,) = (tmp_path / "runs" / "small").iterdir()
    original = (run / "report.md").read_text()
    source.write_text(SMALL.replace("as run", "edited since").replace("[ecmp, spray]", "[spray]"))
    capsys.readouterr()
    assert main(["report", str(run)]) == 0
    assert (run / "report.md").read_text() == original
    source.unlink()  # moved or deleted: the run's own copy is enough
    assert main(["report", str(run)]) == 0
    assert (run / "report.md").read_text() == original


def test_a_run_without_its_copy_reads_the_named_file_and_says_so(run, capsys):
    code, out, err = report(run, capsys)  # the fixture run kept no copy of its scenario
    assert code == 0 and "note: the run kept no copy of its scenario" in out
