"""A link cut and restored while a permutation runs: the fault happens on
time, bites (cells are lost and retransmitted), is recorded and reported,
and every message still arrives intact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.emulation.run import VariantRun
from testbed.scenario import expand_variants, parse_scenario
from testbed.telemetry.summary import summarize_variant

from fitting import fitted  # noqa: E402 (tests/integration is on sys.path)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """
name: cut
duration_s: 14
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 2, delay_us: 500}
switch: {target: builtin}
fabric: {load_balancing: spray}
transport: {cc: none}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 262144, count: 2, cross_tor: true}
faults:
  - {at_s: 1.0, kind: link_down, target: leaf1-spine2}
  - {at_s: 2.5, kind: link_up, target: leaf1-spine2}
"""


def test_a_cut_link_loses_cells_that_are_retransmitted_and_comes_back(tmp_path, registry, processes):
    """In fabric processes the cut cable stays a veth (faults act on interfaces); the others are in memory."""
    scenario = parse_scenario(SCENARIO.replace("switch: {target: builtin}",
                                               f"switch: {{target: builtin, processes: {processes}}}"), "cut.yaml")
    (variant,) = expand_variants(scenario)
    variant = fitted(variant)
    scenario = variant.scenario
    result = VariantRun(variant, tmp_path / "cut", ROOT, progress=lambda m: None).run()
    summary = summarize_variant(tmp_path / "cut", scenario.topo)
    context = f"notes {result.notes}, agents {result.agents}, faults {summary['faults']}"
    events = [json.loads(line) for line in (tmp_path / "cut" / "faults.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["target"]) for e in events] == [("link_down", "leaf1-spine2"),
                                                          ("link_up", "leaf1-spine2")], context
    assert all(abs(e["t_s"] - e["at_s"]) < 0.1 for e in events), context
    assert summary["faults"] == events
    assert all(code == 0 for code in result.agents.values()), context
    assert summary["messages_completed"] == summary["messages_delivered_verified"] == 8, context
    assert summary["retransmissions_cells"] > 0, f"the cut lost nothing: {context}"
