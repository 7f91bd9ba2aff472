"""tests/recompute_report.py agrees with the report on a consistent run and catches a wrong figure."""

import importlib.util
import json
from pathlib import Path

import pytest
from run_fixture import make_default_runs

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
    dirs = make_default_runs(tmp_path, scenario)
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


def test_a_cores_busy_share_the_report_misstates_is_caught(out, capsys):
    summaries = json.loads((out / "summary.json").read_text())
    for name in summaries:
        result_path = next(p for p in out.glob("*/result.json") if json.loads(p.read_text())["variant"] == name)
        result = json.loads(result_path.read_text())
        result["costs"] = {"machine_cpu_samples": [[0.0, 0, 1000, 2000], [1.0, 0, 1002, 2200]]}
        result_path.write_text(json.dumps(result))
    assert recompute_report.main([str(out)]) == 1  # the report, written before, does not say it
    assert "cores busy 99% of the traffic phase, 99% in its busiest second" in capsys.readouterr().out


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


@pytest.fixture
def int_out(tmp_path):
    """Two variants, one with INT hop records from its receivers (leaf -> spine -> leaf paths)."""
    scenario = load_scenario(ROOT / "scenarios" / "default.yaml")
    topo = scenario.topo
    ids = {s: topo.node(s).device_id for s in topo.switches}
    leaves = [s for s in topo.switches if topo.node(s).kind == "leaf"]
    spines = [s for s in topo.switches if topo.node(s).kind == "spine"]
    dirs = make_default_runs(tmp_path, scenario)
    (dirs["load_balancing=ecmp"] / "records" / "int").mkdir()
    lines = []
    for i in range(40):
        hops = [[ids[leaves[0]], 3, i % 3, 5 + i], [ids[spines[i % 2]], 2, i % 5, 100 + 7 * i],
                [ids[leaves[1]], 1, 0, 2]]
        lines.append(json.dumps({"t_s": 1.0 + i, "src": "h1", "flow_id": 1, "psn": i,
                                 "overflow": int(i == 7), "hops": hops}))
    (dirs["load_balancing=ecmp"] / "records" / "int" / "h3.jsonl").write_text("\n".join(lines) + "\n")
    summaries = {n: summarize_variant(d, topo) for n, d in dirs.items()}
    write_report(scenario, dirs, summaries, tmp_path)
    return tmp_path


def test_int_figures_agree_and_a_wrong_one_is_caught(int_out, capsys):
    summary = json.loads((int_out / "summary.json").read_text())
    figures = summary["load_balancing=ecmp"]["int"]
    assert figures["cells"] == 40 and figures["overflow_cells"] == 1
    assert figures["tiers"]["leaf"]["hops"] == 80 and figures["tiers"]["spine"]["hops"] == 40
    assert figures["tiers"]["spine"]["latency_p99_us"] == 100 + 7 * 39
    assert summary["load_balancing=spray"]["int"] is None
    text = (int_out / "report.md").read_text()
    assert "INT spine hop latency p50 / p99" in text and "int_latency.png" in text
    assert (int_out / "int_latency.png").exists()
    assert recompute_report.main([str(int_out)]) == 0
    capsys.readouterr()
    spine = figures["tiers"]["spine"]
    (int_out / "report.md").write_text(text.replace(f"{spine['latency_p50_us']:.0f} / {spine['latency_p99_us']:.0f} us",
                                                    f"{spine['latency_p50_us']:.0f} / 1 us", 1))
    assert recompute_report.main([str(int_out)]) == 1
    assert "INT spine hop latency" in capsys.readouterr().out
