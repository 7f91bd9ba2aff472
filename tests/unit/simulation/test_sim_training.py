"""`testbed sim` on the committed training job (scenarios/training-ddp.yaml: 16 GPUs on 4 servers,
rail-optimised leaf-spine, gradient buckets all-reduced under backward): the report gives iteration
time and GPU utilisation, the timeline plot is drawn, and tests/recompute_report.py agrees."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from testbed import cli

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recompute_report)


def test_the_committed_job_reports_iterations_and_utilisation_and_recomputes(tmp_path, capsys):
    assert cli.main(["sim", str(ROOT / "scenarios" / "training-ddp.yaml"), "--runs-dir", str(tmp_path),
                     "--jobs", "1"]) == 0
    out_dir = next((tmp_path / "training-ddp").glob("*-sim"))
    job = json.loads((out_dir / "summary.json").read_text())["base"]["jobs"]["ddp"]
    assert job["gpus"] == 16 and job["iterations_finished"] == job["iterations_planned"] == 5
    # each iteration: 800 ms of compute (5% jitter) and h6's 960 ms, which every other GPU waits for
    assert 900 < job["iteration_p50_ms"] <= job["iteration_p99_ms"] < 1200
    assert 0.7 < job["gpu_utilisation"] < 1 and job["gpu_lowest"] != "h6"
    assert job["wait_per_iteration_ms"] > 50 and 0 < job["exposed_per_iteration_ms"] < 200
    report = (out_dir / "report.md").read_text()
    assert "## Training jobs" in report and "](training_timeline.png)" in report
    assert (out_dir / "training_timeline.png").stat().st_size > 10_000
    capsys.readouterr()
    assert recompute_report.main([str(out_dir)]) == 0
    assert "all agree" in capsys.readouterr().out
