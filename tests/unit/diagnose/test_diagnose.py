"""`testbed diagnose` on small simulated runs: a healthy run has no culprit, a cable slowed by hand is
named first with its start, and bad input is one line each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.diagnose.core import DiagnoseError, departures, diagnose_run
from testbed.errors import TestbedError
from tests.unit.diagnose.corpus import write_scenarios
from tests.unit.diagnose.simulated_runs import LinkFault, write_run


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory):
    return write_scenarios(tmp_path_factory.mktemp("scenarios"))


@pytest.fixture(scope="module")
def healthy(scenarios, tmp_path_factory):
    return write_run(scenarios["leafspine-permutation"], "base", tmp_path_factory.mktemp("healthy"))


def test_healthy_run_has_no_culprit(healthy):
    result = diagnose_run(healthy.parent)
    (diagnosis,) = result.values()
    assert diagnosis["healthy"] and diagnosis["culprits"] == []
    written = json.loads((healthy / "diagnosis.json").read_text())
    assert written["healthy"] is True and written["wall_s"] < 60
    assert (healthy / "diagnosis.md").read_text().splitlines()[2] == "healthy: no culprit"
    assert (healthy / "diagnosis.png").stat().st_size > 0


@pytest.mark.parametrize("target,at_s,factor", [("leaf3-spine1", 1.7, 0.001), ("h4-leaf2", 1.4, 0.001)])
def test_a_cable_slowed_by_hand_is_the_first_culprit(scenarios, tmp_path, target, at_s, factor):
    fault = LinkFault(target, at_s, 2.0, factor)
    name = "leafspine-incast" if target.startswith("leaf") else "leafspine-permutation"
    run = write_run(scenarios[name], "base", tmp_path / "run", fault)
    (diagnosis,) = diagnose_run(run).values()
    first = diagnosis["culprits"][0]
    assert (first["kind"], first["target"]) == ("link", target)
    assert abs(first["start_s"] - at_s) <= 1.0
    assert not diagnosis["healthy"]


def test_diagnose_never_reads_the_faults(scenarios, tmp_path):
    """The run's scenario names a fault on another cable; the twin is the scenario without it, so the
    verdict of a healthy run whose scenario copy lists a fault is still healthy."""
    run = write_run(scenarios["leafspine-permutation"], "base", tmp_path / "run")
    copy = run.parent / "scenario.yaml"
    copy.write_text(copy.read_text() + "faults:\n- {kind: link_degrade, target: h1-leaf1, at_s: 1, duration_s: 2}\n")
    (diagnosis,) = diagnose_run(run).values()
    assert diagnosis["healthy"]


def test_departure_window_starts_at_onset():
    twin = [10.0] * 50
    run = [10.0] * 10 + [0.0] * 20 + [10.0] * 20
    ((start, _, peak, crossed),) = departures(run, twin)
    assert start == 10 and crossed > start and peak > 0.15
    assert departures(twin, twin) == []


def test_not_a_run_directory(tmp_path):
    with pytest.raises(DiagnoseError, match="not a run directory"):
        diagnose_run(tmp_path)
    with pytest.raises(DiagnoseError, match="not a directory"):
        diagnose_run(tmp_path / "nothing")


def test_a_run_killed_half_way(healthy, tmp_path):
    killed = tmp_path / "killed"
    shutil.copytree(healthy.parent, killed)
    (killed / healthy.name / "result.json").unlink()
    with pytest.raises(DiagnoseError, match="killed before it finished"):
        diagnose_run(killed)
    (killed / healthy.name / "result.json").write_text('{"variant": "ba')
    with pytest.raises(TestbedError, match="damaged, not valid JSON"):
        diagnose_run(killed)


def test_a_run_with_no_telemetry(healthy, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(healthy.parent, bare)
    shutil.rmtree(bare / healthy.name / "records")
    (bare / healthy.name / "telemetry.jsonl").unlink()
    with pytest.raises(DiagnoseError, match="no telemetry"):
        diagnose_run(bare)


def test_command_line_is_one_line_on_bad_input(tmp_path):
    done = subprocess.run([sys.executable, "-m", "testbed.cli", "diagnose", str(tmp_path)],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[3])
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_slowed_runs_culprits_are_on_the_scenarios_clock(tmp_path):
    """A run slowed x4 (testbed sim --host-rate-mbps, as --fit slows one) with a cable degraded at 1.4 s of
    the scenario file: its culprit starts near 1.4 s, not near the run's 5.6 s, in diagnosis.json, the
    printed verdict and diagnosis.md, which says the run's slow-down once."""
    import yaml

    from testbed import cli
    from tests.unit.diagnose.corpus import scenario_text

    data = yaml.safe_load(scenario_text("slowed", "leafspine", "permutation"))
    data["faults"] = [{"kind": "link_degrade", "target": "h4-leaf2", "at_s": 1.4, "duration_s": 2.0,
                       "rate_mbps": 0.005}]
    path = tmp_path / "slowed.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert cli.main(["sim", str(path), "--host-rate-mbps", "1.25", "--runs-dir", str(tmp_path / "runs")]) == 0
    (run,) = (tmp_path / "runs" / "slowed").iterdir()
    assert yaml.safe_load((run / "base" / "scenario.resolved.yaml").read_text())["time_stretch"] == 4.0
    (diagnosis,) = diagnose_run(run).values()
    first = diagnosis["culprits"][0]
    assert (first["kind"], first["target"]) == ("link", "h4-leaf2")
    assert abs(first["start_s"] - 1.4) <= 0.2 and first["end_s"] < 3.4, first
    md = (run / "base" / "diagnosis.md").read_text()
    assert f"from {first['start_s']:.1f} s to {first['end_s']:.1f} s" in md.splitlines()[2]
    assert md.count("the run ran x4 slower") == 1 and diagnosis["run_time_stretch"] == 4.0
