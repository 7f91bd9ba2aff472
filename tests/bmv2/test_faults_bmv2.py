"""Faults on bmv2 as on the builtin target where bmv2 allows it: a dual-homed host's cable cut
mid-transfer (the host leaves the dead port on carrier loss, the controller reroutes over
P4Runtime, every message arrives). link_degrade needs the builtin target's link model and is
refused on bmv2 in the fault's record. Skipped by tests/conftest.py where bmv2 is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "integration"))
from fitting import run_fitted  # noqa: E402

pytestmark = [pytest.mark.bmv2, pytest.mark.integration, pytest.mark.slow]

SCENARIO = """
name: failover-bmv2
duration_s: 12
topology: {kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 1, dual_homed: true}
links: {rate_mbps: 1, delay_us: 500}
switch: {target: bmv2}
fabric: {load_balancing: spray}
transport: {cc: none}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 262144, count: 1, cross_tor: true}
faults:
  - {at_s: 1.0, kind: link_down, target: h1-leaf1}
  - {at_s: 1.5, kind: link_degrade, target: leaf3-spine1, loss: 0.1}
"""


def test_a_cut_host_link_fails_over_on_bmv2_and_a_degrade_is_refused(tmp_path):
    _scenario, result, summary, _run_dir, context = run_fitted(SCENARIO, tmp_path / "failover-bmv2")
    assert all(code == 0 for code in result.agents.values()), context
    assert summary["messages_completed"] == summary["messages_delivered_verified"] == 2, context
    (cut,) = summary["recovery"]
    assert cut["host_detect_by"] == "carrier" and cut["routes_moved"], context
    degrade = summary["faults"][1]
    assert degrade["kind"] == "link_degrade" and "needs the builtin target" in degrade["error"], context
