"""A run's CPU per packet, and that only a run that kept real time calibrates."""

import json

import pytest

from testbed.emulation import costs
from testbed.scenario import capacity


def tm(enqueued, lag_us):
    return {"tm": {"totals": {"enqueued": enqueued}, "fidelity": {"dequeue": {"p99_lag_us": lag_us}}}}


def agent(tmp_path, name, cpu_s, tx, rx, late_us):
    (tmp_path / f"{name}.stats.json").write_text(json.dumps(
        {"cpu_s": cpu_s, "tx_datagrams": tx, "rx_datagrams": rx, "pacer_lateness": {"p99_us": late_us}}))


def test_costs_per_packet_and_calibration_only_in_real_time(tmp_path, monkeypatch):
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    agent(tmp_path, "h1", 1.0, 6000, 4000, 300.0)
    out = costs.measure_costs({"s1": 2.0, "s2": 2.0}, {"s1": tm(10_000, 200), "s2": tm(10_000, 250)},
                              tmp_path, 1000.0, "run a")
    assert out == {"switch_us_per_packet": 200.0, "agent_us_per_datagram": 100.0, "agent_cost_unmeasured": None,
                   "switch_packets": 20_000,
                   "agent_datagrams": 10_000, "calibrates": True, "switch_mode": "per_switch",
                   "switch_idle_cpu_per_switch": None, "switch_window_s": None, "switch_cost_unmeasured": None,
                   "switch_packets_per_s_per_process": None, "agent_datagrams_per_s_per_process": None,
                   "planned_switch_packets_per_s_per_process": None,
                   "planned_agent_datagrams_per_s_per_process": None}
    assert capacity.load_costs().switch_us_per_packet == 200.0
    agent(tmp_path, "h1", 1.0, 6000, 4000, 5000.0)  # a host fell behind: figures kept, not calibrated
    late = costs.measure_costs({"s1": 9.0}, {"s1": tm(10_000, 200)}, tmp_path, 1000.0, "run b")
    assert late["calibrates"] is False and late["switch_us_per_packet"] == 900.0
    assert capacity.load_costs().switch_us_per_packet == 200.0
    agent(tmp_path, "h1", 1.0, 6000, 4000, 300.0)  # over several servers: figures kept, not calibrated
    spread = costs.measure_costs({"s1": 9.0}, {"s1": tm(10_000, 200)}, tmp_path, 1000.0, "run d", calibrate=False)
    assert spread["calibrates"] is False and spread["switch_us_per_packet"] == 900.0
    assert capacity.load_costs().switch_us_per_packet == 200.0
    small = costs.measure_costs({"s1": 1.0}, {"s1": tm(10, 0)}, tmp_path / "none", 1000.0, "run c")
    assert small["switch_us_per_packet"] is None and small["agent_us_per_datagram"] is None


def test_the_idle_rate_over_the_window_is_not_charged_to_packets_and_calibrates_the_idle_demand(tmp_path,
                                                                                               monkeypatch):
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    agent(tmp_path, "h1", 1.0, 6000, 4000, 300.0)
    # one fabric process of 20 switches: 0.2 CPU-s/s idle over a 40 s window is 8 of its 10 CPU-s
    out = costs.measure_costs({"fabric0": 10.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "slow run",
                              mode="fabric", idle_rates={"fabric0": 0.2}, window_s=40.0, switches=20)
    assert out["switch_us_per_packet"] == 100.0 and out["switch_idle_cpu_per_switch"] == 0.01
    loaded = capacity.load_costs("fabric")
    assert loaded.switch_us_per_packet == 100.0 and loaded.switch_idle_cpu_per_switch == 0.01
    # an idle estimate at or above what the window shows gives no figure (and says why), never zero,
    # and what is calibrated stays the measured run's
    capped = costs.measure_costs({"fabric0": 1.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "odd run",
                                 mode="fabric", idle_rates={"fabric0": 5.0}, window_s=40.0, switches=20)
    assert capped["switch_us_per_packet"] is None and "idle rate" in capped["switch_cost_unmeasured"]
    assert capacity.load_costs("fabric").switch_us_per_packet == 100.0
    # 95% of the CPU taken by the idle estimate: too little left to measure
    thin = costs.measure_costs({"fabric0": 10.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "thin run",
                               mode="fabric", idle_rates={"fabric0": 0.2375}, window_s=40.0, switches=20)
    assert thin["switch_us_per_packet"] is None
    nothing = costs.measure_costs({}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "no cpu", mode="fabric")
    assert nothing["switch_us_per_packet"] is None and "no switch process" in nothing["switch_cost_unmeasured"]
    zero = costs.measure_costs({"fabric0": 0.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "zero", mode="fabric")
    assert zero["switch_us_per_packet"] is None and "no CPU time" in zero["switch_cost_unmeasured"]
    # an agent's loop of 100 s has 0.3 CPU-s of quiet wake-ups, not charged to its datagrams
    (tmp_path / "h1.stats.json").write_text(json.dumps(
        {"cpu_s": 1.3, "tx_datagrams": 6000, "rx_datagrams": 4000, "pacer_lateness": {"p99_us": 300.0},
         "series": {"t_s": [0.0, 50.0, 100.0]}}))
    assert costs.measure_costs({"fabric0": 1.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0,
                               "agents")["agent_us_per_datagram"] == 100.0
    # a loop stretched to 460 s (--fit x23) with 2,000 datagrams: its quiet wake-ups (1.38 CPU-s)
    # are more than its 1.4 CPU-s less a tenth: no figure, and a reason, never 0.0
    (tmp_path / "h1.stats.json").write_text(json.dumps(
        {"cpu_s": 1.4, "tx_datagrams": 1000, "rx_datagrams": 1000, "pacer_lateness": {"p99_us": 300.0},
         "series": {"t_s": [0.0, 460.0]}}))
    stretched = costs.measure_costs({"fabric0": 1.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "stretched")
    assert stretched["agent_us_per_datagram"] is None and "quiet wake-ups" in stretched["agent_cost_unmeasured"]


@pytest.mark.alone  # the busy process's share of a core is what the machine leaves it: not beside other tests
def test_the_idle_period_measures_a_quiet_and_a_busy_process():
    import subprocess
    import sys
    import time

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        probe = costs.IdlePeriod({"busy": spinner.pid, "quiet": sleeper.pid}, time.time(), 1.2).start()
        rates = probe.rates(timeout_s=5.0)
    finally:
        spinner.kill()
        sleeper.kill()
    assert rates is not None
    assert rates["quiet"] < 0.05 and rates["busy"] > 0.3, rates  # 2 cores shared with the test run
    assert costs.IdlePeriod({"x": 1}, time.time(), 0.3).start().rates() is None  # too short to measure


def test_a_group_of_agents_counts_its_process_cpu_once_and_its_members_datagrams(tmp_path, monkeypatch):
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    # one single agent as today: 1.3 CPU-s over a 100 s loop, 0.3 of them quiet, 10,000 datagrams
    (tmp_path / "h1.stats.json").write_text(json.dumps(
        {"cpu_s": 1.3, "tx_datagrams": 6000, "rx_datagrams": 4000, "pacer_lateness": {"p99_us": 300.0},
         "series": {"t_s": [0.0, 100.0]}}))
    # a group of three members over 100 s: 2.3 CPU-s in its process file, one process's quiet share
    # (0.3 CPU-s, not three times it); the members' stats have no CPU of their own
    for name, tx, rx in (("h2", 4000, 3000), ("h3", 3000, 5000), ("h4", 3000, 2000)):
        (tmp_path / f"{name}.stats.json").write_text(json.dumps(
            {"cpu_s": None, "cpu_us_per_datagram": None, "agent_process": "agents-1", "tx_datagrams": tx,
             "rx_datagrams": rx, "pacer_lateness": {"p99_us": 200.0}, "series": {"t_s": [0.0, 100.0]}}))
    (tmp_path / "agents-1.process.json").write_text(json.dumps(
        {"process": "agents-1", "members": ["h2", "h3", "h4"], "cpu_s": 2.3, "tx_datagrams": 10_000,
         "rx_datagrams": 10_000, "cpu_us_per_datagram": 115.0, "loop_wakeups": 5000, "t_s": [-0.5, 99.5]}))
    out = costs.measure_costs({"s1": 1.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "group")
    # (1.3 - 0.3) + (2.3 - 0.3) CPU-s over 10,000 + 20,000 datagrams
    assert out["agent_datagrams"] == 30_000 and out["agent_us_per_datagram"] == 100.0
    # the members' pacer lateness still decides whether the run kept real time
    (tmp_path / "h3.stats.json").write_text(json.dumps(
        {"cpu_s": None, "agent_process": "agents-1", "tx_datagrams": 3000, "rx_datagrams": 5000,
         "pacer_lateness": {"p99_us": 5000.0}}))
    assert costs.measure_costs({"s1": 1.0}, {"s1": tm(20_000, 100)}, tmp_path, 1000.0, "late")["calibrates"] is False


def test_a_host_an_agent_stall_stopped_does_not_keep_a_run_from_calibrating(tmp_path, monkeypatch):
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    agent(tmp_path, "h1", 1.0, 6000, 4000, 300.0)
    agent(tmp_path, "h2", 1.0, 6000, 4000, 400_000.0)  # its lateness is the stall's length
    judged = costs.measure_costs({"s1": 2.0}, {"s1": tm(10_000, 200)}, tmp_path, 1000.0, "stall run")
    assert judged["calibrates"] is False
    stalled = costs.measure_costs({"s1": 2.0}, {"s1": tm(10_000, 200)}, tmp_path, 1000.0, "stall run",
                                  not_judged=frozenset({"h2"}))
    assert stalled["calibrates"] is True and stalled["agent_datagrams"] == 20_000
    agent(tmp_path, "h1", 1.0, 6000, 4000, 5000.0)  # another host behind still keeps it out
    assert costs.measure_costs({"s1": 2.0}, {"s1": tm(10_000, 200)}, tmp_path, 1000.0, "stall run",
                               not_judged=frozenset({"h2"}))["calibrates"] is False
