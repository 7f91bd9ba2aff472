"""Collective figures (algbw, busbw, the link-rate ideal) of a simulator run, and their recomputation."""

import importlib.util
import json
from pathlib import Path

import pytest

from testbed import cli

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recompute_report)

SCENARIO = """
name: coll
duration_s: 30
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2, gpus_per_server: 2, rail_optimised: true}
links: {rate_mbps: 20, delay_us: 200, local: {rate_mbps: 80, delay_us: 20}}
fabric: {load_balancing: spray}
workload:
  - {kind: collective, op: all_reduce, algorithm: hierarchical, sizes_bytes: [8192, 32768], channels: 2}
  - {kind: collective, op: all_gather, sizes_bytes: [16384], start_s: 5}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sim")
    path = tmp / "coll.yaml"
    path.write_text(SCENARIO)
    assert cli.main(["sim", str(path), "--runs-dir", str(tmp / "runs")]) == 0
    (out,) = (tmp / "runs" / "coll").iterdir()
    return out


def test_figures_follow_nccl_tests_definitions(run):
    summary = json.loads((run / "summary.json").read_text())["base"]
    rows = summary["collectives"]
    assert set(rows) == {"1-collective@8192B#0", "1-collective@32768B#0", "2-collective@16384B#0"}
    for name, r in rows.items():
        assert r["verified"] and r["ranks_done"] == 4
        assert r["algbw_mbps"] == pytest.approx(r["size_bytes"] * 8 / r["time_us"])
        factor = 2 * 3 / 4 if r["op"] == "all_reduce" else 3 / 4
        assert r["busbw_mbps"] == pytest.approx(r["algbw_mbps"] * factor)
        assert 0 < r["busbw_over_ideal"] <= 1.0  # nothing beats the link-rate bound
    # all-gather of 16384 B over 4 ranks: a ring step each sends S/4 = 4 cells of 1090 B on the wire; the
    # ranks whose successor is on another server send all 3 steps over their 20 Mbit/s NIC
    ag = rows["2-collective@16384B#0"]
    assert ag["ideal_time_us"] == pytest.approx(3 * 4 * 1090 * 8 / 20)
    report = (run / "report.md").read_text()
    assert "busbw (Mbit/s)" in report and (run / "busbw.png").exists()


def test_recompute_agrees_and_catches_a_wrong_busbw(run, capsys):
    assert recompute_report.main([str(run)]) == 0
    assert "all agree" in capsys.readouterr().out
    path = run / "summary.json"
    original = path.read_text()
    data = json.loads(original)
    data["base"]["collectives"]["1-collective@32768B#0"]["busbw_mbps"] *= 1.02
    path.write_text(json.dumps(data))
    try:
        assert recompute_report.main([str(run)]) == 1
        assert "busbw_mbps" in capsys.readouterr().out
    finally:
        path.write_text(original)


def test_sim_at_a_slower_host_rate_reads_back_on_the_scenarios_clock(run, tmp_path, capsys):
    """testbed sim --host-rate-mbps R: the scenario slowed as --fit slows it (x4 here); its summary.json
    and report give the figures on the scenario's clock, so busbw and the ideal are the nominal run's
    (busbw / ideal within 2%: the rounding of slowed delays), the header gives the file's link rates and
    the run's rate is said once, on the Clock line; recompute_report agrees with every figure."""
    path = tmp_path / "coll.yaml"
    path.write_text(SCENARIO)
    assert cli.main(["sim", str(path), "--host-rate-mbps", "5", "--runs-dir", str(tmp_path / "runs")]) == 0
    (out,) = (tmp_path / "runs" / "coll").iterdir()
    summary = json.loads((out / "summary.json").read_text())["base"]
    assert summary["clock"] == {"scenario_clock": True, "run_time_stretch": 4.0}
    slow = summary["collectives"]
    nominal = json.loads((run / "summary.json").read_text())["base"]["collectives"]
    for name, r in slow.items():
        assert r["verified"]
        assert r["ideal_busbw_mbps"] == pytest.approx(nominal[name]["ideal_busbw_mbps"], rel=1e-9)
        assert r["ideal_time_us"] == pytest.approx(nominal[name]["ideal_time_us"], rel=1e-9)
        assert r["busbw_mbps"] == pytest.approx(nominal[name]["busbw_mbps"], rel=0.02)
        assert r["busbw_over_ideal"] == pytest.approx(nominal[name]["busbw_over_ideal"], rel=0.02)
    report = (out / "report.md").read_text()
    assert "host links 20 Mbit/s" in report and "host links 5 Mbit/s" not in report
    assert report.count("Clock: every variant ran x4 slower") == 1
    assert recompute_report.main([str(out)]) == 0
    assert cli.main(["sim", str(path), "--host-rate-mbps", "40", "--runs-dir", str(tmp_path / "runs")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--host-rate-mbps 40" in err[0] and "at most that" in err[0]
