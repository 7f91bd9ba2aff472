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


DEGRADE = """
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
links: {host: {rate_mbps: 4, delay_us: 300}, fabric: {rate_mbps: 8, delay_us: 500}}
workload: [{kind: pingall}]
faults:
  - {at_s: 2, kind: link_degrade, target: leaf1-spine2, duration_s: 1.5, rate_mbps: 2, extra_delay_us: 1000, loss: 0.05}
  - {at_s: 3, kind: link_degrade, target: h1-leaf1, loss: 0.1}
  - {at_s: 5, kind: agent_stall, target: h2, duration_s: 0.25}
"""


def test_a_degraded_link_is_traffic_manager_commands_on_its_switch_ends_and_undone():
    actions = faults.plan_faults(parse_scenario(DEGRADE, "d.yaml"))
    assert [(a.at_s, a.kind) for a in actions] == [(2, "link_degrade"), (3, "link_degrade"), (3.5, "link_restore"),
                                                   (5, "agent_stall"), (5.25, "agent_resume")]
    assert actions[0].tm_lines == (
        ("leaf1", "set_port_rate_bps 2000000 3"), ("leaf1", "set_port_delay_us 1500 3"),
        ("leaf1", "set_port_loss 0.05 3"),
        ("spine2", "set_port_rate_bps 2000000 1"), ("spine2", "set_port_delay_us 1500 1"),
        ("spine2", "set_port_loss 0.05 1"))
    assert actions[1].tm_lines == (("leaf1", "set_port_loss 0.1 1"),)  # a host cable: the ToR's end only
    assert actions[2].tm_lines[:3] == (("leaf1", "set_port_rate_bps 8000000 3"), ("leaf1", "set_port_delay_us 500 3"),
                                       ("leaf1", "set_port_loss 0 3"))
    assert actions[3].agent == actions[4].agent == "h2" and not actions[3].interfaces


def test_the_runner_degrades_stalls_and_lets_a_stalled_agent_go_at_the_end(tmp_path):
    import signal
    import subprocess
    import sys

    lines = []
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        actions = [a for a in faults.plan_faults(parse_scenario(DEGRADE, "d.yaml")) if a.kind != "agent_resume"]
        epoch = time.time() - 1.95
        runner = faults.FaultRunner(actions, epoch, tmp_path / "faults.jsonl", tm=lambda s, l: lines.append((s, l)),
                                    agents={"h2": agent.pid}).start()
        def state_within(wanted, seconds: float = 5.0) -> str:
            """The agent's process state once `wanted(state)` holds, or when `seconds` ran out: the
            kernel acts on SIGSTOP and SIGCONT when it next schedules the process, not at kill()."""
            end = time.time() + seconds
            while True:
                with open(f"/proc/{agent.pid}/stat") as f:
                    state = f.read().split(")")[1].split()[0]
                if wanted(state) or time.time() >= end:
                    return state
                time.sleep(0.01)

        deadline = time.time() + 5
        while "h2" not in runner.stalled and time.time() < deadline:
            time.sleep(0.05)
        assert state_within(lambda s: s == "T") == "T"  # stopped
        assert runner.finish() == []
        assert state_within(lambda s: s != "T") != "T"  # continued at the end
        assert len(lines) == 6 + 1 + 6  # degrade both ends, the host cable's ToR end, restore both ends
        records = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
        assert [r["kind"] for r in records] == ["link_degrade", "link_degrade", "link_restore", "agent_stall"]
        assert records[0]["tm_commands"][0] == "leaf1: set_port_rate_bps 2000000 3"
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()


def test_fault_fields_are_checked_against_their_kind():
    from testbed.scenario.errors import ScenarioError
    import pytest

    bad = {
        "agent_stall needs duration_s": "{at_s: 1, kind: agent_stall, target: h1}",
        "is only used by link_degrade": "{at_s: 1, kind: link_down, target: h1-leaf1, loss: 0.1}",
        "needs at least one of rate_mbps": "{at_s: 1, kind: link_degrade, target: h1-leaf1}",
        "ends after the run": "{at_s: 9, kind: link_degrade, target: h1-leaf1, loss: 0.1, duration_s: 2}",
        "is not a host": "{at_s: 1, kind: agent_stall, target: leaf1, duration_s: 1}",
    }
    for message, fault in bad.items():
        text = DEGRADE.split("faults:")[0] + f"faults:\n  - {fault}\n"
        with pytest.raises(ScenarioError, match=message):
            parse_scenario(text, "d.yaml")


GPU_SERVERS = """
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2, gpus_per_server: 2, rail_optimised: true}
workload: [{kind: pingall}]
faults:
  - {at_s: 2, kind: host_down, target: h1}
"""


def test_host_down_on_a_gpu_server_takes_its_local_channels_down_in_both_namespaces(tmp_path, monkeypatch):
    scenario = parse_scenario(GPU_SERVERS, "g.yaml")
    (action,) = faults.plan_faults(scenario)
    peer = next(p for p in scenario.topo.hosts if p != "h1" and scenario.topo.same_server("h1", p))
    link = next(x for x in scenario.topo.local_links if "h1" in (x.a, x.b))
    assert len(action.interfaces) == 1  # its one fabric cable, switch side
    assert set(action.local) == {("h1", f"h1-nv{link.b_gpu if link.a == 'h1' else link.a_gpu}"),
                                 (peer, f"{peer}-nv{link.a_gpu if link.a == 'h1' else link.b_gpu}")}
    calls = []
    monkeypatch.setattr(faults, "set_link", lambda interface, up, pid=None: calls.append((interface, up, pid)))
    pids = {"h1": 101, peer: 202}
    runner = faults.FaultRunner([action], time.time() - 2, tmp_path / "faults.jsonl", namespaces=pids).start()
    time.sleep(0.3)
    assert runner.finish() == []
    down = [c for c in calls if not c[1]]
    assert {(i, pid) for i, _, pid in down} == {(action.interfaces[0], None)} | {(i, pids[h]) for h, i in action.local}
    assert sorted(c for c in calls if c[1]) == sorted((i, True, pid) for i, _, pid in down)  # undone at the end
    event = json.loads((tmp_path / "faults.jsonl").read_text())
    assert sorted(event["local_interfaces"]) == sorted(f"{h}:{i}" for h, i in action.local)


def test_host_down_without_the_hosts_namespace_is_one_recorded_line(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "set_link", lambda interface, up, pid=None: None)
    (action,) = faults.plan_faults(parse_scenario(GPU_SERVERS, "g.yaml"))
    runner = faults.FaultRunner([action], time.time() - 2, tmp_path / "faults.jsonl").start()
    time.sleep(0.3)
    errors = runner.finish()
    assert len(errors) == 1 and "no namespace known for" in errors[0] and "\n" not in errors[0]


def test_set_link_enters_the_namespace_of_a_pid(monkeypatch):
    seen = []

    class Done:
        returncode, stderr = 0, ""

    monkeypatch.setattr(faults.subprocess, "run", lambda argv, **kw: seen.append(argv) or Done())
    faults.set_link("h1-nv1", False, 4242)
    faults.set_link("leaf1-eth1", True)
    assert seen == [["nsenter", "-t", "4242", "-n", "ip", "link", "set", "dev", "h1-nv1", "down"],
                    ["ip", "link", "set", "dev", "leaf1-eth1", "up"]]
