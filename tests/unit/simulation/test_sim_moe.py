"""`testbed sim` on the committed MoE job (scenarios/training-moe.yaml: 16 GPUs, expert-parallel over
all of them, on a 2:1 oversubscribed rail-optimised leaf-spine) under ECMP and under spraying: both
variants report iteration time and GPU utilisation side by side, the timeline is drawn, and
tests/recompute_report.py agrees."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from testbed import cli

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recompute_report)


def test_the_moe_job_under_ecmp_and_spraying_side_by_side(tmp_path, capsys):
    assert cli.main(["sim", str(ROOT / "scenarios" / "training-moe.yaml"), "--runs-dir", str(tmp_path),
                     "--jobs", "1"]) == 0
    out_dir = next((tmp_path / "training-moe").glob("*-sim"))
    summary = json.loads((out_dir / "summary.json").read_text())
    jobs = {variant: s["jobs"]["moe"] for variant, s in summary.items()}
    assert set(jobs) == {"load_balancing=ecmp", "load_balancing=spray"}
    for job in jobs.values():
        assert job["gpus"] == 16 and job["iterations_finished"] == job["iterations_planned"] == 4
        # 120 ms of compute per iteration (5% jitter), then 8 all-to-alls none of which compute hides:
        # each GPU sends 9 of its 15 blocks of 4 KiB over the 2:1 uplinks, at least 30 ms each
        assert 115 < job["compute_per_iteration_ms"] < 125
        assert job["exposed_per_iteration_ms"] > 8 * 30
        assert job["iteration_p50_ms"] > 120 + 8 * 30
        assert 0 < job["gpu_utilisation"] < 120 / (120 + 8 * 30)
    ecmp, spray = jobs["load_balancing=ecmp"], jobs["load_balancing=spray"]
    # Spraying spreads every flow over both spines; ECMP pins each GPU pair's flow to one, and flows
    # that collide on an uplink share it while the other idles. Spraying may lose to it only by the
    # cost of its reordering (the receiver reassembles out-of-order cells: no retransmission), which
    # the 5% allows; this run's figures are in docs/measurements.md.
    assert spray["iteration_p50_ms"] <= 1.05 * ecmp["iteration_p50_ms"]
    assert spray["gpu_utilisation"] >= 0.95 * ecmp["gpu_utilisation"]
    report = (out_dir / "report.md").read_text()
    assert "## Training jobs" in report and "| load_balancing=spray | moe | 16 | 4 / 4 |" in report
    assert (out_dir / "training_timeline.png").stat().st_size > 10_000
    capsys.readouterr()
    assert recompute_report.main([str(out_dir)]) == 0
    assert "all agree" in capsys.readouterr().out
