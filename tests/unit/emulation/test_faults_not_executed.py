"""A fault the run never reached (it ended first) is listed as not executed, with why, in
result.json's faults_not_executed, summary.json and the report; never silently skipped."""

from __future__ import annotations

import time

from testbed.emulation.faults import FaultAction, FaultRunner
from testbed.telemetry.clock import summaries_on_scenario_clock
from testbed.telemetry.faults import fault_lines


def test_an_action_after_the_run_is_listed_with_why(tmp_path):
    actions = [FaultAction(at_s=0.0, kind="link_restore", target="leaf1-spine1"),
               FaultAction(at_s=100.0, kind="link_down", target="leaf1-spine1")]
    epoch = time.time()
    runner = FaultRunner(actions, epoch, tmp_path / "faults.jsonl").start()
    deadline = time.monotonic() + 5
    while runner.applied < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    runner.finish()
    skipped = runner.not_executed(time.time() - epoch)
    assert [(e["kind"], e["at_s"]) for e in skipped] == [("link_down", 100.0)]
    assert skipped[0]["reason"] == "the run ended before its planned time" and skipped[0]["run_ended_s"] < 100
    assert len((tmp_path / "faults.jsonl").read_text().splitlines()) == 1  # only what was carried out


def test_the_report_lists_it_on_the_scenario_clock(tmp_path):
    (tmp_path / "scenario.resolved.yaml").write_text("time_stretch: 2.0\n")
    summaries = {"base": {"faults": [], "faults_not_executed": [
        {"at_s": 8.0, "kind": "link_down", "target": "h1-leaf1", "run_ended_s": 5.4,
         "reason": "the run ended before its planned time"}]}}
    lines = fault_lines(summaries_on_scenario_clock({"base": tmp_path}, summaries))
    assert lines[0] == "Faults in base:"
    assert lines[1] == ("- **not executed**: link_down h1-leaf1 planned at 4 s: the run ended before its planned "
                        "time (it ended at 2.700 s)")
