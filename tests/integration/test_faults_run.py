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

from fitting import fitted, run_fitted  # noqa: E402 (tests/integration is on sys.path)
from switch_modes import in_mode  # noqa: E402

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


@in_mode("per_switch", "auto")
def test_a_cut_link_loses_cells_that_are_retransmitted_and_comes_back(tmp_path, registry, processes):
    """In fabric processes the cut cable stays a veth (faults act on interfaces); the others are in memory.
    So per switch and in one fabric process: with two fabric processes the cut cable is a veth
    just the same, and the cables between the two engines carry every fabric-2 test's traffic."""
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


DEGRADED = """
name: degraded
duration_s: 14
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 2, delay_us: 500}
switch: {target: builtin}
fabric: {load_balancing: spray}
transport: {cc: tita}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 262144, count: 2, cross_tor: true}
faults:
  - {at_s: 1.0, kind: link_degrade, target: leaf1-spine2, duration_s: 1.5, rate_mbps: 1, extra_delay_us: 2000, loss: 0.2}
  - {at_s: 1.2, kind: agent_stall, target: h2, duration_s: 0.3}
"""


def test_a_degraded_link_loses_cells_a_stalled_agent_pauses_and_every_message_arrives(tmp_path, registry):
    run_dir = tmp_path / "degraded"
    scenario, result, summary, run_dir, context = run_fitted(DEGRADED, run_dir)
    assert [e["kind"] for e in summary["faults"]] == ["link_degrade", "agent_stall", "agent_resume",
                                                      "link_restore"], context
    assert not any(e.get("error") for e in summary["faults"]), context
    assert all(code == 0 for code in result.agents.values()), context
    assert summary["messages_completed"] == summary["messages_delivered_verified"] == 8, context
    lost = summary["drops"]["link_losses_by_type"]
    assert sum(lost.values()) > 0, f"a link losing 20% lost nothing: {context}"
    assert summary["drops"]["data_balance"]["verdict"] in ("balances", "balances within untyped losses"), \
        summary["drops"]["data_balance"]
    assert summary["retransmissions_cells"] >= lost.get("DATA", 0), context
    # the stall froze h2: its loop, which samples every few cell times, missed the stall's length
    series = json.loads((run_dir / "records" / "h2.stats.json").read_text())["series"]["t_s"]
    stall_s = scenario.faults[1].duration_s
    assert max(b - a for a, b in zip(series, series[1:])) >= 0.8 * stall_s, series


# The traffic (2 MiB each way at 2 Mbit/s, about 9 s) outlasts the restart by seconds: a restarted
# switch is configured again over P4Runtime, 2.0-3.3 s after its process starts on the 2-core VM
# (its program loaded again from the source the controller sends), and with 512 KiB messages the
# traffic had ended before spine2 could forward again.
RESTART = """
name: restart
duration_s: 24
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 2, delay_us: 500}
switch: {target: builtin, processes: PROCESSES}
fabric: {load_balancing: spray}
transport: {cc: tita}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 2097152, count: 1, cross_tor: true}
faults:
  - {at_s: 1.2, kind: switch_restart, target: spine2, duration_s: 1.0}
"""


@pytest.mark.parametrize("processes", ["per_switch", "auto"])
def test_a_restarted_switch_is_routed_around_configured_again_and_the_job_completes(tmp_path, registry, processes):
    run_dir = tmp_path / "restart"
    scenario, result, summary, run_dir, context = run_fitted(RESTART.replace("PROCESSES", processes), run_dir)
    stop, start = summary["faults"]
    assert (stop["kind"], start["kind"]) == ("switch_stop", "switch_start") and not stop.get("error") \
        and not start.get("error"), context
    assert stop["reroute"]["routes_moved"] > 0 and "spine2" not in stop["reroute"]["switches"], context
    assert start["reroute"]["routes_moved"] == stop["reroute"]["routes_moved"], context  # every route back
    assert all(code == 0 for code in result.agents.values()), context
    assert summary["messages_completed"] == summary["messages_delivered_verified"] == 4, context
    assert summary["drops"]["data_balance"]["verdict"] == "not checked"  # spine2's counters started again
    # spine2 forwarded again after its restart: its DATA counters moved between the restart and the end
    after = [s for s in (json.loads(line) for line in (run_dir / "telemetry.jsonl").read_text().splitlines())
             if s["switch"] == "spine2" and s["t_s"] > start["t_s"]]
    assert after and sum(p["packets"] for p in after[-1]["tx"].values()) > 50, f"spine2 idle after restart: {context}"


def test_a_fault_after_the_traffic_ended_is_reported_as_not_executed(tmp_path, registry):
    """The run ends when its messages are done, before the fault's time: the fault is listed as not
    executed with why (result.json, summary.json), and nothing is carried out."""
    text = SCENARIO.replace("""faults:
  - {at_s: 1.0, kind: link_down, target: leaf1-spine2}
  - {at_s: 2.5, kind: link_up, target: leaf1-spine2}""", """faults:
  - {at_s: 13.0, kind: link_down, target: leaf1-spine2}""")
    scenario, result, summary, run_dir, context = run_fitted(text, tmp_path / "late-fault")
    assert summary["messages_planned"] == summary["messages_completed"], context
    assert summary["faults"] == [], context
    (skipped,) = summary["faults_not_executed"]
    assert (skipped["kind"], skipped["target"]) == ("link_down", "leaf1-spine2"), context
    assert skipped["run_ended_s"] < skipped["at_s"] and "ended before" in skipped["reason"], context
    assert json.loads((run_dir / "result.json").read_text())["faults_not_executed"] == [skipped]
