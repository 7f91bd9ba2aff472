"""`testbed sim` on the committed pipeline job (scenarios/training-pipeline.yaml: 4 stages x 4
replicas, 8 micro-batches, 1F1B and GPipe): the bubble shows in GPU utilisation, the timeline is
drawn, and tests/recompute_report.py agrees."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from testbed import cli

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recompute_report)


def test_the_pipeline_job_shows_its_bubble_under_both_schedules(tmp_path, capsys):
    assert cli.main(["sim", str(ROOT / "scenarios" / "training-pipeline.yaml"), "--runs-dir", str(tmp_path),
                     "--jobs", "1"]) == 0
    out_dir = next((tmp_path / "training-pipeline").glob("*-sim"))
    summary = json.loads((out_dir / "summary.json").read_text())
    assert set(summary) == {"workload.0.pipeline.schedule=1f1b", "workload.0.pipeline.schedule=gpipe"}
    for job in (s["jobs"]["pp"] for s in summary.values()):
        assert job["gpus"] == 16 and job["iterations_finished"] == job["iterations_planned"] == 4
        # each stage computes 300 ms per iteration (a quarter of 400 + 800 ms, 5% jitter)
        assert 290 < job["compute_per_iteration_ms"] < 310
        # 8 micro-batches over 4 stages: without the links' time, 8 / 11 of an iteration computes;
        # the bubble (3 / 11) is mostly waiting for the other stages' compute
        assert 0.5 < job["gpu_utilisation"] < 8 / 11
        assert job["wait_per_iteration_ms"] > 0.8 * 3 / 8 * 300
        assert job["iteration_p50_ms"] > 11 / 8 * 300
    report = (out_dir / "report.md").read_text()
    assert "| workload.0.pipeline.schedule=1f1b | pp | 16 | 4 / 4 |" in report
    assert (out_dir / "training_timeline.png").stat().st_size > 10_000
    capsys.readouterr()
    assert recompute_report.main([str(out_dir)]) == 0
    assert "all agree" in capsys.readouterr().out
