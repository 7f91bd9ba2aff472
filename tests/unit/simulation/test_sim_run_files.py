"""`testbed sim` on a scenario with faults: the run directory holds what an emulated run's readers read."""

from __future__ import annotations

import json

import yaml

from testbed import cli
from testbed.scenario import expand_variants, load_scenario
from testbed.scenario.timescale import slowed
from testbed.simulation.run import run_variant
from testbed.telemetry.links import link_loads
from testbed.telemetry.rundir import load_jsonl

SCENARIO = """
name: simfaults
duration_s: 20
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
links: {rate_mbps: 10, delay_us: 500}
fabric: {load_balancing: spray_rr_entropy}
workload:
  - {kind: permutation, start_s: 0.1, message_bytes: 600000, cross_tor: true}
faults:
  - {at_s: 0.3, kind: link_degrade, target: leaf1-spine1, duration_s: 0.2, loss: 0.1}
  - {at_s: 0.4, kind: host_slow, target: h1, duration_s: 0.2, rate_mbps: 5}
  - {at_s: 19, kind: link_down, target: leaf2-spine2}
"""


def test_sim_with_faults_writes_the_emulated_files_and_reports_them(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    assert cli.main(["sim", str(path), "--runs-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    report = next((tmp_path / "runs" / "simfaults").glob("*-sim/report.md")).read_text()
    assert "Faults in base:" in report and "- link_degrade leaf1-spine1 at 0.300 s" in report
    assert "**not executed**: link_down leaf2-spine2 planned at 19 s" in report
    assert "report:" in out and "](goodput.png)" in report
    assert next((tmp_path / "runs" / "simfaults").glob("*-sim/goodput.png")).stat().st_size > 1000
    run_dir = next((tmp_path / "runs" / "simfaults").glob("*-sim/base"))
    faults = [json.loads(x) for x in (run_dir / "faults.jsonl").read_text().splitlines()]
    assert [f["kind"] for f in faults] == ["link_degrade", "host_slow", "link_restore", "host_restore"]
    assert faults[0]["tm_commands"][0].startswith("leaf1: set_port_loss 0.1")
    assert faults[1]["rate_mbps"] == 5 and faults[1]["delay_ms"] == 0
    result = json.loads((run_dir / "result.json").read_text())
    assert [f["kind"] for f in result["faults_not_executed"]] == ["link_down"]
    stats = json.loads((run_dir / "records" / "h1.stats.json").read_text())
    assert stats["series"]["period_s"] == 0.1 and stats["series"]["t_s"][:2] == [0.0, 0.1]
    assert len(stats["series"]["tx_bytes"]) == len(stats["series"]["t_s"])


def test_one_reader_serves_both_link_loads_from_the_simulators_telemetry(tmp_path):
    scenario = load_scenario_text(tmp_path)
    (variant,) = expand_variants(scenario)
    run_variant(variant, tmp_path / "v")
    samples, damaged = load_jsonl(tmp_path / "v" / "telemetry.jsonl")
    assert damaged is None
    resolved = yaml.safe_load((tmp_path / "v" / "scenario.resolved.yaml").read_text())
    loads = {x.link: x for x in link_loads(scenario.topo, resolved, samples, {}, {}, 1.0)}
    up = scenario.topo.link("leaf1-spine1")
    last = [s for s in samples if s["switch"] == "leaf1"][-1]
    assert loads[f"leaf1:{up.a_port}->spine1"].total_bytes == last["tx"][str(up.a_port)]["bytes"] > 0


def test_a_slowed_simulation_samples_every_100_ms_of_the_scenarios_clock(tmp_path):
    scenario = slowed(load_scenario_text(tmp_path), 0.5)
    (variant,) = expand_variants(scenario)
    run_variant(variant, tmp_path / "slow")
    samples, _ = load_jsonl(tmp_path / "slow" / "telemetry.jsonl")
    assert sorted({s["t_s"] for s in samples})[:3] == [0.0, 0.2, 0.4]  # the run's clock, twice as slow
    faults = [json.loads(x) for x in (tmp_path / "slow" / "faults.jsonl").read_text().splitlines()]
    assert faults[0]["t_s"] == 0.6  # at_s 0.3 on the scenario's clock


def load_scenario_text(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    return load_scenario(path)
