"""Pre-flight capacity check, the one-run-at-a-time lock, real-time scheduling."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from testbed.emulation import realtime, runlock
from testbed.scenario import calibration, capacity, parse_scenario

SCENARIO = """
topology: {topology}
links: {{rate_mbps: {rate}}}
workload: [{{kind: permutation}}]
"""


def scenario(topology="{kind: fat_tree, k: 4}", rate=5):
    return parse_scenario(SCENARIO.format(topology=topology, rate=rate), "s.yaml")


COSTS = capacity.Costs(switch_us_per_packet=20.0, agent_us_per_datagram=40.0, source="test figures")


def test_demand_grows_with_rate_and_hops():
    slow, fast = capacity.demand(scenario(rate=5), COSTS), capacity.demand(scenario(rate=10), COSTS)
    assert fast.switch_packets_per_s == pytest.approx(2 * slow.switch_packets_per_s)
    leaf_spine = capacity.demand(scenario("{kind: leaf_spine, leaves: 8, spines: 2, hosts_per_leaf: 2}"), COSTS)
    # 16 hosts either way; a cross-pod path has 5 switches, a cross-leaf one 3
    assert slow.switch_packets_per_s == pytest.approx(leaf_spine.switch_packets_per_s * 5 / 3)


def test_a_fabric_that_fits_passes_and_one_that_does_not_is_refused_with_the_rate_that_fits():
    assert capacity.check(scenario(rate=1), COSTS, cores=2).startswith("capacity: needs about")
    with pytest.raises(capacity.CapacityError) as refused:
        capacity.check(scenario(rate=100), COSTS, cores=2)
    message = str(refused.value)
    assert "s.yaml: this fabric needs about" in message and "largest host link rate that fits" in message
    fits = float(message.split("fits is about ")[1].split(" Mbit/s")[0])
    assert capacity.check(scenario(rate=fits * 0.95), COSTS, cores=2)  # the named rate does fit
    with pytest.raises(capacity.CapacityError):
        capacity.check(scenario(rate=fits * 1.1), COSTS, cores=2)


def test_too_many_hosts_for_the_memory_is_refused():
    big = scenario("{kind: leaf_spine, leaves: 100, spines: 64, hosts_per_leaf: 64}", rate=0.01)
    with pytest.raises(capacity.CapacityError, match="GiB of memory"):
        capacity.check(big, COSTS, cores=2)


def test_calibration_is_the_median_of_recent_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    assert "reference figures" in capacity.load_costs().source
    capacity.save_costs(25.0, None, "a run")
    costs = capacity.load_costs()
    assert costs.switch_us_per_packet == 25.0
    assert costs.agent_us_per_datagram == capacity.DEFAULT_AGENT_US_PER_DATAGRAM
    for value in (30.0, 400.0, 28.0):  # one run on a busy machine
        capacity.save_costs(value, 50.0, "later")
    assert capacity.load_costs().switch_us_per_packet == 29.0  # median of 25, 30, 400, 28
    for i in range(capacity.RECENT_RUNS):
        capacity.save_costs(10.0, 20.0, f"run {i}")
    assert capacity.load_costs().switch_us_per_packet == 10.0  # only the recent runs count
    (tmp_path / "calibration.json").write_text("{not json")
    assert "reference figures" in capacity.load_costs().source


def test_a_second_run_is_refused_with_one_line_naming_the_first(run_lock_held_elsewhere):
    holder = run_lock_held_elsewhere("scenario first")
    with pytest.raises(runlock.RunInProgress) as refused:
        with runlock.hold_run_lock("scenario second"):
            pass
    assert f"pid {holder.pid}, scenario first" in str(refused.value)
    assert "\n" not in str(refused.value)
    holder.kill()
    holder.wait()
    with runlock.hold_run_lock("after"):  # the lock died with its holder
        with runlock.hold_run_lock("re-entered"):
            pass


@pytest.mark.skipif(os.geteuid() != 0, reason="real-time scheduling needs root")
def test_realtime_scheduling_and_its_guard():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert realtime.make_realtime(child.pid) is None
        assert realtime.scheduling_of(child.pid) == f"fifo {realtime.SWITCH_RT_PRIORITY}"
        import resource
        assert resource.prlimit(child.pid, resource.RLIMIT_RTTIME) == (realtime.RTTIME_SOFT_US,
                                                                         realtime.RTTIME_HARD_US)
    finally:
        child.kill()
        child.wait()
    assert realtime.make_realtime(child.pid) == f"process {child.pid} is gone"


def test_a_runaway_realtime_process_is_stopped_by_the_guard():
    if os.geteuid() != 0:
        pytest.skip("real-time scheduling needs root")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert realtime.make_realtime(spinner.pid) is None
        code = spinner.wait(timeout=10)
    finally:
        if spinner.poll() is None:
            spinner.kill()
            spinner.wait()
    assert code in (-24, -9), f"the spinning real-time process ended with {code}"  # SIGXCPU or SIGKILL


def test_fabric_and_per_switch_runs_calibrate_apart(tmp_path, monkeypatch):
    """A fabric process costs less per packet than a process per switch: one mode's runs must not
    move the other's figure, and a scenario is checked with the costs of the mode it will run in."""
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    capacity.save_costs(300.0, 100.0, "per-switch run")
    for _ in range(capacity.RECENT_RUNS + 2):
        capacity.save_costs(40.0, 90.0, "fabric run", mode="fabric")
    assert capacity.load_costs("per_switch").switch_us_per_packet == 300.0
    assert capacity.load_costs("fabric").switch_us_per_packet == 40.0
    assert "fabric switches" in capacity.load_costs("fabric").source
    s = parse_scenario("topology: {kind: fat_tree, k: 4}\nworkload: [{kind: permutation}]\n", "t.yaml")
    per_switch = parse_scenario("topology: {kind: fat_tree, k: 4}\nswitch: {target: builtin, processes: per_switch, "
                                "backend: python}\nworkload: [{kind: permutation}]\n", "t.yaml")
    assert capacity.scenario_mode(s).split("/")[0] in ("fabric", "per_switch")  # auto: bmv2 where installed
    assert capacity.scenario_mode(per_switch) == "per_switch"
    assert capacity.fitting_rate(per_switch, cores=2) < capacity.fitting_rate(
        per_switch, capacity.load_costs("fabric"), cores=2)


def test_bmv2_cannot_be_given_fabric_processes():
    with pytest.raises(Exception, match="switch.processes.*bmv2 runs one process per switch"):
        parse_scenario("topology: {kind: fat_tree, k: 4}\nswitch: {target: bmv2, processes: 2}\n"
                       "workload: [{kind: pingall}]\n", "t.yaml")


def test_native_and_python_packet_paths_calibrate_apart(tmp_path, monkeypatch):
    """The native engine costs a fraction of the Python loop per packet: each path keeps its own
    figures, and a scenario is checked with the costs of the path it will take."""
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    capacity.save_costs(120.0, 90.0, "python fabric run", mode="fabric")
    capacity.save_costs(6.0, 90.0, "native fabric run", mode="fabric/native")
    assert capacity.load_costs("fabric").switch_us_per_packet == 120.0
    assert capacity.load_costs("fabric/native").switch_us_per_packet == 6.0
    text = "topology: {kind: fat_tree, k: 4}\nswitch: {target: builtin, backend: %s}\nworkload: [{kind: permutation}]\n"
    python = parse_scenario(text % "python", "t.yaml")
    native = parse_scenario(text % "native", "t.yaml")
    assert capacity.scenario_mode(python) == "fabric"
    assert capacity.scenario_mode(native) == "fabric/native"
    monkeypatch.setattr(capacity, "packet_path", lambda target, backend, log_level: "python")
    assert capacity.scenario_mode(native) == "fabric"  # what the machine decides is what is planned


def test_native_packet_path_refuses_bmv2():
    with pytest.raises(Exception, match="switch.backend.*bmv2 has its own"):
        parse_scenario("topology: {kind: fat_tree, k: 4}\nswitch: {backend: native, target: bmv2}\n"
                       "workload: [{kind: pingall}]\n", "t.yaml")


def test_runs_weigh_by_the_packets_they_counted(tmp_path, monkeypatch):
    """A sparse run (an incast slowed by --fit: few packets, each waking the switch alone) costs
    more per packet than a full-rate one; weighted by count, the full-rate runs decide."""
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    for cost, packets in ((50.0, 30_000), (60.0, 25_000), (45.0, 28_000)):  # slowed incasts
        capacity.save_costs(cost, 100.0, "slowed", mode="fabric/native", switch_packets=packets, agent_datagrams=9_000)
    for cost, packets in ((14.0, 240_000), (18.0, 230_000)):  # full-rate permutations
        capacity.save_costs(cost, 55.0, "full rate", mode="fabric/native", switch_packets=packets,
                            agent_datagrams=95_000)
    costs = capacity.load_costs("fabric/native")
    assert costs.switch_us_per_packet == 18.0 and costs.agent_us_per_datagram == 55.0
    assert "weighted median" in costs.source
    capacity.save_costs(16.0, 50.0, "an older record", mode="fabric/native")  # no counts: all weigh one
    assert capacity.load_costs("fabric/native").switch_us_per_packet == 18.0  # the last five, 60 45 14 18 16, weigh one
    assert calibration.weighted_median([(1.0, 1), (2.0, 1), (3.0, 1), (4.0, 1)]) == 2.5
    assert calibration.weighted_median([(1.0, 1), (9.0, 5)]) == 9.0


def test_a_reference_plan_counts_the_idle_of_switches_in_fabric_processes_per_switch():
    """With no run measured yet, a native fabric's quiet cost is its switches' in their fabric
    processes, not one switch process's each (80 of them made a k=8 fat-tree fit 0.005 Mbit/s);
    the agents' is one per agent process (the hosts shared out over one per core)."""
    k8 = scenario("{kind: fat_tree, k: 8}", rate=0.001)
    switches = len(k8.topo.switches)
    agents = capacity.machine_cores() * capacity.DEFAULT_IDLE_CPU_PER_AGENT
    for mode, per_switch in (("fabric/native", capacity.DEFAULT_IDLE_CPU_PER_SWITCH_IN_FABRIC),
                             ("fabric", capacity.DEFAULT_IDLE_CPU_PER_SWITCH_IN_FABRIC),
                             ("per_switch/native", capacity.DEFAULT_IDLE_CPU_PER_PROCESS)):
        costs = capacity.Costs(switch_us_per_packet=0.0, agent_us_per_datagram=0.0, mode=mode)
        assert capacity.demand(k8, costs).cpu == pytest.approx(switches * per_switch + agents), mode
