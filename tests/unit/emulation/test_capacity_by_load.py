"""The pre-flight check's costs come from the runs measured nearest the planned load, and --fit's
search stays right when the costs change with the rate scale."""

import json
import math

import pytest

from testbed.emulation import costs
from testbed.scenario import calibration, capacity, parse_scenario
from testbed.scenario.fitscale import first_crossing

MODE = "fabric/native"
SCENARIO = """
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: %s}
switch: {target: builtin, backend: native}
workload: [{kind: permutation}]
"""


def scenario(rate=5):
    return parse_scenario(SCENARIO % rate, "s.yaml")


@pytest.fixture
def calibration_file(tmp_path, monkeypatch):
    path = tmp_path / "calibration.json"
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", path)
    monkeypatch.setattr(capacity, "machine_cores", lambda: 2)
    monkeypatch.setattr(capacity, "packet_path", lambda target, backend, log_level: "native")
    return path


def save(name, switch_us, agent_us, switch_load, agent_load, packets=100_000, datagrams=40_000):
    capacity.save_costs(switch_us, agent_us, name, MODE, switch_packets=packets, agent_datagrams=datagrams,
                        load=capacity.Load(switch_load, agent_load))


def mixed_history():
    """Full-rate runs (cheap per packet) and x4-slowed runs (dear), interleaved, the slowed ones last."""
    for i in range(6):
        save(f"full {i}", 8.3, 41.0, 40_000.0, 10_000.0)
        save(f"slowed {i}", 14.0, 75.0, 10_000.0, 2_500.0)


def test_each_cost_comes_from_the_runs_nearest_its_own_planned_load(calibration_file):
    mixed_history()
    assert capacity.load_costs(MODE).agent_us_per_datagram == 75.0  # no load: the newest five, 3 of them slowed
    full = capacity.load_costs(MODE, capacity.Load(38_000.0, 9_000.0))
    assert (full.switch_us_per_packet, full.agent_us_per_datagram) == (8.3, 41.0)
    slow = capacity.load_costs(MODE, capacity.Load(9_000.0, 2_000.0))
    assert (slow.switch_us_per_packet, slow.agent_us_per_datagram) == (14.0, 75.0)
    # switch and agent costs each by their own rate
    apart = capacity.load_costs(MODE, capacity.Load(40_000.0, 2_500.0))
    assert (apart.switch_us_per_packet, apart.agent_us_per_datagram) == (8.3, 75.0)
    # above every run's load the nearest runs are the fastest (conservative: the cost falls with rate)
    above = capacity.load_costs(MODE, capacity.Load(1e6, 1e6))
    assert (above.switch_us_per_packet, above.agent_us_per_datagram) == (8.3, 41.0)
    # between the two, log distance decides: 22,000 is nearer 40,000 (x1.8) than 10,000 (x2.2)
    assert capacity.load_costs(MODE, capacity.Load(22_000.0, 4_500.0)).switch_us_per_packet == 8.3
    assert capacity.load_costs(MODE, capacity.Load(18_000.0, 4_500.0)).switch_us_per_packet == 14.0
    # more history is kept than one choice takes
    kept = json.loads(calibration_file.read_text())["runs"]
    assert len(kept) == 12 and capacity.RECENT_RUNS > calibration.NEAREST_RUNS


def test_the_nearest_runs_are_weighed_by_their_counts_and_ties_go_to_the_newer(calibration_file):
    save("old far", 50.0, 90.0, 1_000.0, 1_000.0)
    for cost, packets in ((10.0, 10_000), (11.0, 10_000), (12.0, 10_000), (13.0, 10_000), (20.0, 90_000)):
        save(f"near {cost:g}", cost, 40.0, 30_000.0, 8_000.0, packets=packets)
    assert capacity.load_costs(MODE, capacity.Load(30_000.0, 8_000.0)).switch_us_per_packet == 20.0
    # with fewer runs than NEAREST_RUNS near it, farther runs are among the chosen too
    assert capacity.load_costs(MODE, capacity.Load(1_000.0, 1_000.0)).switch_us_per_packet == 20.0
    assert "old far at 1,000/s" in capacity.load_costs(MODE, capacity.Load(1_000.0, 1_000.0)).source
    runs = [{"switch_us_per_packet": v, "switch_packets_per_s_per_process": 100.0, "from": f"r{v:g}"}
            for v in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)]  # all as far: the five newest
    assert [r["from"] for r in calibration.nearest(runs, calibration.SWITCH, 400.0)] == [
        "r2", "r3", "r4", "r5", "r6"]


def test_older_entries_without_loads_still_load_and_count_as_before(calibration_file):
    old = [{"switch_us_per_packet": v, "agent_us_per_datagram": 40.0 + v, "from": f"old {v:g}", "mode": MODE,
            "switch_packets": 1000, "agent_datagrams": 1000} for v in (9.0, 10.0, 11.0, 12.0, 30.0, 31.0)]
    calibration_file.write_text(json.dumps({"runs": old}))
    at_load = capacity.load_costs(MODE, capacity.Load(40_000.0, 10_000.0))
    assert at_load.switch_us_per_packet == capacity.load_costs(MODE).switch_us_per_packet == 12.0  # 10 11 12 30 31
    assert "5 runs newest" in at_load.source and "old 31 at an unrecorded load" in at_load.source
    # a new entry with its load goes first; the newest old ones fill the rest
    save("new", 8.0, 41.0, 40_000.0, 10_000.0, packets=1000)
    chosen = calibration.nearest(capacity.recent_runs(MODE), calibration.SWITCH, 40_000.0)
    assert [r["from"] for r in chosen] == ["old 11", "old 12", "old 30", "old 31", "new"]
    assert capacity.load_costs(MODE, capacity.Load(40_000.0, 10_000.0)).switch_us_per_packet == 12.0
    for i in range(4):  # five entries with a load, however far from the planned one, come before any without
        save(f"newer {i}", 7.0, 40.0, 4_000.0, 1_000.0, packets=1000)
    chosen = calibration.nearest(capacity.recent_runs(MODE), calibration.SWITCH, 40_000.0)
    assert [r["from"] for r in chosen] == ["new", "newer 0", "newer 1", "newer 2", "newer 3"]


def test_the_check_line_names_the_costs_the_runs_and_their_loads(calibration_file):
    s = scenario(rate=0.5)
    planned = capacity.planned_load(s, MODE)
    for _ in range(3):
        save("fattree full, 05:30", 8.3, 41.0, planned.switch_packets_per_s_per_process * 9,
             planned.agent_datagrams_per_s_per_process * 9)
        save("fattree slowed, 05:40", 14.0, 75.0, planned.switch_packets_per_s_per_process,
             planned.agent_datagrams_per_s_per_process)
    line = capacity.check(s, cores=2)
    assert "switches 14 us/packet, agents 75 us/datagram" in line
    assert (f"nearest the planned {planned.switch_packets_per_s_per_process:,.0f} packets/s per switch process"
            in line)
    assert f"fattree slowed, 05:40 at {planned.agent_datagrams_per_s_per_process:,.0f}/s" in line
    assert "fattree full" in line  # two of the three farther runs are among the five chosen
    fast = scenario(rate=4.5)
    with pytest.raises(capacity.CapacityError) as refused:
        capacity.check(fast, cores=2)
    assert "costs at 4.5 Mbit/s: switches 8.3 us/packet, agents 41 us/datagram" in str(refused.value)


def test_first_crossing_walks_the_steps_upwards():
    def line(slopes, idle=0.0):
        """busy = scale x the slope of the step the scale is in: steps at 0.5 and 2."""
        return lambda s: (s * (slopes[0] if s < 0.5 else slopes[1] if s < 2 else slopes[2]), idle)

    assert first_crossing(line((10.0, 10.0, 10.0)), [0.5, 2.0], 4.0) == pytest.approx(0.4)
    # dearer at slow scales, cheap above 0.5: crosses in the first step though faster scales pass again
    assert first_crossing(line((8.0, 1.0, 1.0)), [0.5, 2.0], 3.0) == pytest.approx(0.375)
    # no crossing in the first step, then a step up past the budget: the step's own scale
    assert first_crossing(line((1.0, 10.0, 10.0)), [0.5, 2.0], 3.0) == pytest.approx(0.5)
    assert first_crossing(line((4.0, 1.0, 1.0)), [0.5, 2.0], 3.0) == pytest.approx(3.0)
    assert first_crossing(line((1.0, 1.0, 1.0), idle=3.0), [0.5], 3.0) == 0.0
    assert first_crossing(line((0.0, 0.0, 0.0), idle=1.0), [], 3.0) == math.inf


def test_fit_with_rate_dependent_costs_finds_the_first_crossing_and_every_slower_rate_fits(calibration_file):
    """Slowed runs cost more per datagram. Planned with the cost of the runs nearest each scale's load,
    the CPU drops where the nearest runs turn from slowed to full-rate ones: a closed-form fit from the
    written rate's costs names a rate above scales the check refuses; the search stops below them."""
    s = scenario(rate=5)
    planned = capacity.planned_load(s, MODE)
    for i in range(3):  # full rate at the written load; x4-slowed runs at a quarter of it
        save(f"full {i}", 8.3, 41.0, planned.switch_packets_per_s_per_process,
             planned.agent_datagrams_per_s_per_process)
        save(f"slowed {i}", 14.0, 75.0, planned.switch_packets_per_s_per_process / 4,
             planned.agent_datagrams_per_s_per_process / 4)
    written = capacity.load_costs(MODE, planned)
    assert written.agent_us_per_datagram == 41.0
    closed_form = capacity.fitting_rate(s, written, cores=2)  # costs fixed at the written rate's
    fits = capacity.fitting_rate(s, cores=2)
    assert 0 < fits < closed_form
    turn = 0.5 * 5  # the scale where the nearest runs turn: the geometric mean of 1 and 1/4
    assert fits < turn * 0.99 < closed_form
    with pytest.raises(capacity.CapacityError):  # slower than the closed form's rate, and refused
        capacity.check(scenario(rate=turn * 0.99), cores=2)
    assert capacity.check(scenario(rate=turn * 1.01), cores=2)  # where the full-rate runs' costs apply
    for share in (0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.999):  # every slower rate fits
        assert capacity.check(scenario(rate=fits * share), cores=2)
    with pytest.raises(capacity.CapacityError):
        capacity.check(scenario(rate=fits * 1.01), cores=2)
    # the rate that fits is where the slowed runs' costs cross the budget: 2 cores x 0.6
    at = scenario(rate=fits)
    need = capacity.demand(at, capacity.load_costs(MODE, capacity.planned_load(at, MODE)))
    assert need.cpu == pytest.approx(2 * capacity.HEADROOM)


def test_a_run_records_its_load_per_process_and_the_next_check_finds_it(calibration_file, tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    series = {"t_s": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "tx_bytes": [0, 0, 10, 20, 30, 30],
              "rx_bytes": [0, 0, 0, 10, 40, 40]}
    # h1 alone: traffic from 1 s to 4 s; h2 and h3 in one group, h3 busy from 0.5 s to 4.5 s
    (records / "h1.stats.json").write_text(json.dumps(
        {"cpu_s": 1.0, "tx_datagrams": 5000, "rx_datagrams": 5000, "pacer_lateness": {"p99_us": 100.0},
         "series": series}))
    late = dict(series, t_s=[t - 0.5 for t in series["t_s"]])
    for name, s in (("h2", series), ("h3", late)):
        (records / f"{name}.stats.json").write_text(json.dumps(
            {"cpu_s": None, "agent_process": "agents-1", "tx_datagrams": 5000, "rx_datagrams": 5000,
             "pacer_lateness": {"p99_us": 100.0}, "series": s}))
    (records / "agents-1.process.json").write_text(json.dumps({"cpu_s": 2.0, "t_s": [0.0, 5.0]}))
    tm = {"tm": {"totals": {"enqueued": 30_000}, "fidelity": {"dequeue": {"p99_lag_us": 100.0}}}}
    out = costs.measure_costs({"fabric0": 3.0, "fabric1": 3.0}, {"s1": tm}, records, 1000.0, "run",
                              mode=MODE, window_s=10.0, switches=20, planned=capacity.Load(3000.0, 8000.0))
    # 30,000 packets over 10 s in 2 processes; 30,000 datagrams over 0.5-4 s (3.5 s) in 2 processes
    assert out["switch_packets_per_s_per_process"] == 1500.0
    assert out["agent_datagrams_per_s_per_process"] == pytest.approx(30_000 / 3.5 / 2, abs=0.1)
    kept = json.loads(calibration_file.read_text())["runs"][-1]  # the planned load, which checks compare
    assert kept["switch_packets_per_s_per_process"] == 3000.0
    assert kept["agent_datagrams_per_s_per_process"] == 8000.0
    assert "at 3,000/s" in capacity.load_costs(MODE, capacity.Load(3000.0, 8000.0)).source
    # without a planned load the entry keeps none: the measured one must not stand in for it
    costs.measure_costs({"fabric0": 3.0}, {"s1": tm}, records, 1000.0, "run", mode=MODE, window_s=10.0)
    unplanned = json.loads(calibration_file.read_text())["runs"][-1]
    assert unplanned["switch_packets_per_s_per_process"] is None
    assert unplanned["agent_datagrams_per_s_per_process"] is None
    # no window, no span: no load recorded, and the entry still calibrates as an old one
    assert costs.traffic_span({"t_s": [0.0, 1.0], "tx_bytes": [0, 0], "rx_bytes": [0, 0]}) is None
    assert costs.measured_load(30_000, None, 2, 0.0, [None], 0) == capacity.Load(None, None)


def test_a_run_keeps_the_load_the_check_planned_for_it_and_reports_the_measured_one(calibration_file, tmp_path):
    """A check compares planned loads with planned loads: the busiest moment's switch rate is about
    twice a window's average, so a measured load would pair a plan with faster, cheaper runs."""
    records = tmp_path / "records"
    records.mkdir()
    series = {"t_s": [0.0, 1.0, 2.0, 3.0], "tx_bytes": [0, 10, 20, 20], "rx_bytes": [0, 10, 20, 20]}
    (records / "h1.stats.json").write_text(json.dumps(
        {"cpu_s": 1.0, "tx_datagrams": 5000, "rx_datagrams": 5000, "pacer_lateness": {"p99_us": 100.0},
         "series": series}))
    tm = {"tm": {"totals": {"enqueued": 30_000}, "fidelity": {"dequeue": {"p99_lag_us": 100.0}}}}
    out = costs.measure_costs({"fabric0": 3.0}, {"s1": tm}, records, 1000.0, "run", mode=MODE, window_s=10.0,
                              switches=20, planned=capacity.Load(6000.0, 7000.0))
    assert out["switch_packets_per_s_per_process"] == 3000.0  # measured: 30,000 packets over 10 s
    assert (out["planned_switch_packets_per_s_per_process"], out["planned_agent_datagrams_per_s_per_process"]) == (
        6000.0, 7000.0)
    kept = json.loads(calibration_file.read_text())["runs"][-1]
    assert (kept["switch_packets_per_s_per_process"], kept["agent_datagrams_per_s_per_process"]) == (6000.0, 7000.0)


def test_a_fabrics_own_runs_come_first_and_a_new_fabric_borrows_the_others(calibration_file):
    """A leaf-spine's switch packets (mostly veths) cost more than a fat-tree's (mostly cables in
    memory) at the same load: a check of the fat-tree takes its own runs even when a leaf-spine's
    are nearer its load, and a fabric without runs borrows the others', saying so."""
    fat_tree = capacity.fabric_signature(scenario())
    for i in range(3):
        capacity.save_costs(27.0, 76.0, f"leaf-spine {i}", MODE, switch_packets=100_000, agent_datagrams=40_000,
                            load=capacity.Load(17_000.0, 5_700.0), fabric="leaf_spine of 6 switches and 8 hosts")
        capacity.save_costs(10.0, 54.0, f"fat-tree {i}", MODE, switch_packets=100_000, agent_datagrams=40_000,
                            load=capacity.Load(57_000.0, 11_000.0), fabric=fat_tree)
    own = capacity.load_costs(MODE, capacity.Load(17_000.0, 5_700.0), fat_tree)
    assert (own.switch_us_per_packet, own.agent_us_per_datagram) == (10.0, 54.0)
    assert f"of this fabric ({fat_tree})" in own.source and "leaf-spine" not in own.source
    borrowed = capacity.load_costs(MODE, capacity.Load(17_000.0, 5_700.0), "fat_tree of 80 switches and 128 hosts")
    assert (borrowed.switch_us_per_packet, borrowed.agent_us_per_datagram) == (27.0, 76.0)  # nearest load
    assert "of other fabrics (none of fat_tree of 80 switches and 128 hosts yet)" in borrowed.source
    # the check plans a scenario with its own fabric's runs
    assert capacity.CostModel(scenario()).at(0.3).switch_us_per_packet == 10.0
