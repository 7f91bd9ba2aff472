"""Faults as interface actions, and the runner's timing, record and undo."""

from __future__ import annotations

import json
import time

from testbed.emulation import faults
from testbed.scenario import parse_scenario

SCENARIO = """
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
workload: [{kind: pingall}]
faults:
  - {at_s: 4, kind: link_up, target: leaf1-spine2}
  - {at_s: 2, kind: link_down, target: leaf1-spine2}
  - {at_s: 3, kind: host_down, target: h2}
"""


def test_faults_become_switch_side_interface_actions_in_time_order():
    actions = faults.plan_faults(parse_scenario(SCENARIO, "f.yaml"))
    assert [(a.at_s, a.kind, a.up) for a in actions] == [(2, "link_down", False), (3, "host_down", False),
                                                           (4, "link_up", True)]
    assert actions[0].interfaces == ("leaf1-eth3", "spine2-eth1")  # both switch ends of the cable
    assert actions[1].interfaces == ("leaf2-eth1",)  # h2's only cable, switch side


def test_the_runner_acts_on_time_records_and_undoes(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(faults, "set_link", lambda interface, up: calls.append((interface, up, time.time())))
    actions = faults.plan_faults(parse_scenario(SCENARIO, "f.yaml"))[:2]  # down, down; never up
    epoch = time.time() - 1.9  # the first fault is due in 0.1 s
    runner = faults.FaultRunner(actions, epoch, tmp_path / "faults.jsonl").start()
    time.sleep(1.4)
    assert runner.finish() == []
    assert [(i, up) for i, up, _ in calls[:3]] == [("leaf1-eth3", False), ("spine2-eth1", False), ("leaf2-eth1", False)]
    assert abs(calls[0][2] - (epoch + 2)) < 0.05 and abs(calls[2][2] - (epoch + 3)) < 0.05
    assert sorted((i, up) for i, up, _ in calls[3:]) == [("leaf1-eth3", True), ("leaf2-eth1", True),
                                                         ("spine2-eth1", True)]  # undone at the end
    events = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["target"]) for e in events] == [("link_down", "leaf1-spine2"), ("host_down", "h2")]
    assert abs(events[0]["t_s"] - 2) < 0.05


def test_a_fault_that_fails_is_recorded_not_raised(tmp_path, monkeypatch):
    def refuse(interface, up):
        raise faults.FaultError(f"ip link set dev {interface} down failed: Cannot find device")

    monkeypatch.setattr(faults, "set_link", refuse)
    actions = faults.plan_faults(parse_scenario(SCENARIO, "f.yaml"))[:1]
    runner = faults.FaultRunner(actions, time.time() - 2, tmp_path / "faults.jsonl").start()
    time.sleep(0.2)
    errors = runner.finish()
    assert errors and "Cannot find device" in errors[0]
    assert "error" in json.loads((tmp_path / "faults.jsonl").read_text())
