"""The scenario `testbed plan` writes for a 100K-GPU fabric runs on the emulated fabric.

The planned file is run as written but for its message size (128 KiB instead of
1 MiB, so that the k=4 fat-tree finishes in a test's time at the fitted clock):
every message of the permutation arrives and is verified.
"""

from __future__ import annotations

import pytest
import yaml

from testbed.cli import main

from fitting import run_fitted  # noqa: E402 (tests/integration is on sys.path)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_planned_100k_gpu_scenario_runs_emulated(tmp_path, registry, capsys):
    out = tmp_path / "plan.yaml"
    assert main(["plan", "--gpus", "100000", "--switch-tbps", "51.2", "--port-gbps", "400",
                 "--scenario", str(out)]) == 0
    capsys.readouterr()
    data = yaml.safe_load(out.read_text())
    assert data["topology"]["kind"] == "fat_tree"
    data["workload"][0]["message_bytes"] = 131072
    scenario, result, summary, run_dir, context = run_fitted(yaml.safe_dump(data), tmp_path / "plan-100k")
    hosts = len(scenario.topo.hosts)
    assert result.pingall.get("failed", []) == [], context
    assert all(code == 0 for code in result.agents.values()), context
    assert summary["messages_planned"] == summary["messages_completed"] == hosts, context
