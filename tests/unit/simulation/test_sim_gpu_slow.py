"""gpu_slow on both simulators: the compute placed while the GPU is slow takes `factor` times its plan,
every other compute runs as planned, and faults.jsonl records the start and the end."""

import json

import pytest

from testbed.diagnose.job import compute_ran
from tests.unit.diagnose.corpus import write_run
from tests.unit.diagnose.job_corpus import job_data


@pytest.mark.parametrize("switches", ["model", "program"])
def test_a_slow_gpu_slows_only_the_compute_placed_meanwhile(tmp_path, switches):
    faults = [{"at_s": 1.3, "kind": "gpu_slow", "target": "h3", "factor": 2.5, "duration_s": 0.5}]
    run = write_run({**job_data("job"), "faults": faults}, tmp_path, switches)
    planned = json.loads((run / "agents" / "workload.json").read_text())["messages"]
    records = [json.loads(line) for p in sorted((run / "records").glob("*.jsonl")) for line in p.read_text().splitlines()]
    ran = compute_ran(planned, records)
    slowed = {key: value for key, value in ran.items() if abs(value[1] - value[0]) > 1e-6}
    assert list(slowed) == [("job", "h3", 3)]  # placed at 1.77 s; iteration 2's at 1.18 s, before it
    assert slowed[("job", "h3", 3)][1] == pytest.approx(2.5 * slowed[("job", "h3", 3)][0])
    logged = [json.loads(line) for line in (run / "faults.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["t_s"], r["factor"]) for r in logged] == [("gpu_slow", 1.3, 2.5), ("gpu_restore", 1.8, 1.0)]


def test_the_report_counts_a_slow_gpus_compute_as_it_ran_and_recomputes(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    import yaml

    from testbed import cli
    from testbed.telemetry.training import all_timelines

    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("recompute_report", root / "tests" / "recompute_report.py")
    recompute_report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recompute_report)
    faults = [{"at_s": 1.3, "kind": "gpu_slow", "target": "h3", "factor": 2.5, "duration_s": 0.5}]
    source = tmp_path / "job.yaml"
    source.write_text(yaml.safe_dump({**job_data("job"), "faults": faults}, sort_keys=False))
    assert cli.main(["sim", str(source), "--runs-dir", str(tmp_path / "runs"), "--jobs", "1"]) == 0
    out_dir = next((tmp_path / "runs" / "job").glob("*-sim"))
    variant = out_dir / "base"
    planned = json.loads((variant / "agents" / "workload.json").read_text())["messages"]
    records = [json.loads(line) for p in sorted((variant / "records").glob("*.jsonl"))
               for line in p.read_text().splitlines()]
    rows = all_timelines(planned, records)["job"]["timeline"]
    by_rank = {h: rows[h][3]["compute_us"] for h in rows}
    others = [us for h, us in by_rank.items() if h != "h3"]
    assert by_rank["h3"] > 2.2 * max(others)  # 2.5 x its own plan; the others within their 5% jitter
    assert all(rows[h][3]["wait_us"] > 0.5 * by_rank["h3"] for h in rows if h != "h3")  # they waited for it
    capsys.readouterr()
    assert recompute_report.main([str(out_dir)]) == 0
    assert "all agree" in capsys.readouterr().out
