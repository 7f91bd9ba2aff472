"""tests/recompute_report.py agrees with the report on a consistent run and catches a wrong figure."""

import importlib.util
import json
from pathlib import Path

import pytest
from run_fixture import make_run

from testbed.scenario import load_scenario
from testbed.telemetry.report import write_report
from testbed.telemetry.summary import summarize_variant

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recompute_report)


@pytest.fixture
def out(tmp_path):
    scenario = load_scenario(ROOT / "scenarios" / "default.yaml")
    dirs = {}
    for name, lb in (("load_balancing=ecmp", "ecmp"), ("load_balancing=spray", "spray_entropy")):
        run = make_run(tmp_path / lb, scenario, load_balancing=lb)
        result = json.loads((run / "result.json").read_text())
        result["variant"] = name
        (run / "result.json").write_text(json.dumps(result))
        dirs[name] = run
    summaries = {n: summarize_variant(d, scenario.topo) for n, d in dirs.items()}
    write_report(scenario, dirs, summaries, tmp_path)
    return tmp_path


def test_every_figure_agrees_on_a_consistent_run(out, capsys):
    assert recompute_report.main([str(out)]) == 0
    assert "all agree" in capsys.readouterr().out


def test_a_wrong_figure_in_summary_json_is_caught(out, capsys):
    summary = json.loads((out / "summary.json").read_text())
    row = next(l for l in summary["load_balancing=ecmp"]["links"] if l["link"] == "leaf1:4->spine2")
    row["utilisation"] = 0.03  # the idle link reported as 3% busy
    (out / "summary.json").write_text(json.dumps(summary))
    assert recompute_report.main([str(out)]) == 1
    assert "leaf1:4->spine2/utilisation" in capsys.readouterr().out


def test_a_cpu_steal_the_report_misstates_is_caught(out, capsys):
    summaries = json.loads((out / "summary.json").read_text())
    for name in summaries:
        result_path = next(p for p in out.glob("*/result.json") if json.loads(p.read_text())["variant"] == name)
        result = json.loads(result_path.read_text())
        result["costs"] = {"machine_cpu_steal_share": 0.05}
        result_path.write_text(json.dumps(result))
        summaries[name]["fidelity"]["cpu_steal_share"] = 0.05
    (out / "summary.json").write_text(json.dumps(summaries))
    assert recompute_report.main([str(out)]) == 1  # the report, written before, does not give the steal
    assert "CPU steal as 5.0%" in capsys.readouterr().out


def test_a_wrong_figure_in_report_md_is_caught(out, capsys):
    text = (out / "report.md").read_text()
    (out / "report.md").write_text(text.replace("| 2 / 2 |", "| 2 / 1 |", 1))
    assert recompute_report.main([str(out)]) == 1
    assert "messages planned / completed" in capsys.readouterr().out


def test_testbed_report_writes_the_report_again_from_the_raw_files(out, monkeypatch, capsys):
    from testbed.cli import main

    monkeypatch.chdir(ROOT)  # the run names its scenario file relative to the repository
    (out / "report.md").unlink()
    (out / "summary.json").write_text("{}")
    assert main(["report", str(out)]) == 0
    assert (out / "report.md").read_text().splitlines()[0].startswith("Fidelity kept")
    assert set(json.loads((out / "summary.json").read_text())) == {"load_balancing=ecmp", "load_balancing=spray"}
    assert recompute_report.main([str(out)]) == 0
