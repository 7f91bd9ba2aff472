"""`testbed tune`: coordinate descent against exhaustive search, on the simulator."""

import json
from pathlib import Path

import pytest

from testbed import cli

SCENARIO = """
name: tunee
duration_s: 30
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2, gpus_per_server: 2, rail_optimised: true}
links: {rate_mbps: 20, delay_us: 200, local: {rate_mbps: 80, delay_us: 20}}
fabric: {load_balancing: spray}
workload:
  - {kind: collective, op: all_reduce, sizes_bytes: [8192, 32768]}
"""


def test_tune_reports_choice_best_and_regret(tmp_path, capsys):
    path = tmp_path / "tunee.yaml"
    path.write_text(SCENARIO)
    assert cli.main(["tune", str(path), "--channels", "1,2", "--chunks", "0,512",
                     "--runs-dir", str(tmp_path / "runs")]) == 0
    (out,) = (tmp_path / "runs" / "tunee").iterdir()
    result = json.loads((out / "tuning.json").read_text())
    assert result["space"]["algorithms"] == ["ring", "tree", "hierarchical"]
    assert result["space"]["load_balancing"] == ["spray_rr_entropy", "ecmp"]  # the scenario's own first
    assert [r["size_bytes"] for r in result["rows"]] == [8192, 32768]
    for row in result["rows"]:
        size = row["size_bytes"]
        measured = [m for m in result["measurements"] if m["size_bytes"] == size]
        assert len(measured) == 3 * 2 * 2 * 2 and all(m["verified"] for m in measured)
        assert {m["load_balancing"] for m in measured} == {"spray_rr_entropy", "ecmp"}
        assert row["best_busbw_mbps"] == max(m["busbw_mbps"] for m in measured)
        assert row["regret"] == 1 - row["choice_busbw_mbps"] / row["best_busbw_mbps"] >= 0
        assert row["choice_measured_candidates"] < len(measured)
    assert [t["size_bytes"] for t in result["table"]] == [8192, 32768]
    text = (out / "tuning.md").read_text()
    assert "regret (%)" in text and "busbw (Mbit/s)" in text
    assert result["switches"] == "program" and "switches run the scenario's P4 program" in text
    assert "tuning:" in capsys.readouterr().out


def test_tune_on_the_model_measures_the_same_candidates_there(tmp_path):
    """--switches model: every candidate on the hand-written model; tuning.json says so."""
    path = tmp_path / "tunee.yaml"
    path.write_text(SCENARIO)
    assert cli.main(["tune", str(path), "--channels", "1", "--chunks", "0", "--algorithms", "ring",
                     "--load-balancing", "spray", "--switches", "model", "--runs-dir", str(tmp_path / "runs")]) == 0
    (out,) = (tmp_path / "runs" / "tunee").iterdir()
    result = json.loads((out / "tuning.json").read_text())
    assert result["switches"] == "model" and len(result["measurements"]) == 2
    assert all(m["verified"] for m in result["measurements"])
    assert "switches run the hand-written model" in (out / "tuning.md").read_text()


def test_a_scenario_uses_the_tuning_table(tmp_path):
    from testbed.scenario.workload import scenario_messages
    from testbed.scenario import ScenarioError, parse_scenario

    table = {"op": "all_reduce", "ranks": 4, "table": [
        {"size_bytes": 8192, "algorithm": "ring", "channels": 1, "chunk_bytes": 0},
        {"size_bytes": 1 << 20, "algorithm": "hierarchical", "channels": 2, "chunk_bytes": 16384}]}
    (tmp_path / "tuning.json").write_text(json.dumps(table))
    text = SCENARIO.replace("{kind: collective, op: all_reduce, sizes_bytes: [8192, 32768]}",
                            "{kind: collective, algorithm: auto, tuning: tuning.json, "
                            "sizes_bytes: [4096, 32768, 524288]}")
    scenario = parse_scenario(text, str(tmp_path / "auto.yaml"))
    # nearest size on a log scale: 32768 is nearer 8192 (x4) than 1 MiB (x32)
    assert scenario.workload[0].tuned == (("ring", 1, 0), ("ring", 1, 0), ("hierarchical", 2, 16384))
    algorithms = {m.collective: m.algorithm for m in scenario_messages(scenario)}
    assert algorithms == {"1-collective@4096B#0": "ring", "1-collective@32768B#0": "ring",
                          "1-collective@524288B#0": "hierarchical"}
    wrong = dict(table, op="all_gather")
    (tmp_path / "tuning.json").write_text(json.dumps(wrong))
    try:
        parse_scenario(text, str(tmp_path / "auto.yaml"))
    except ScenarioError as error:
        assert "tunes all_gather over 4 ranks" in str(error) and error.line == 8
    else:
        raise AssertionError("a table for another op was accepted")


def _tuned(tmp_path):
    from testbed.scenario import load_scenario
    from testbed.simulation.tune import tune_scenario

    path = tmp_path / "tunee.yaml"
    path.write_text(SCENARIO)
    scenario = load_scenario(str(path))
    out = tmp_path / "tune"
    tune_scenario(scenario, None, ["ring", "tree"], [1, 2], [0], out, progress=lambda m: None)
    return scenario, json.loads((out / "tuning.json").read_text()), out


def test_confirm_plans_the_choice_and_the_fixed_setting_back_to_back_within_the_budget(tmp_path):
    from testbed.scenario import load_scenario
    from testbed.simulation import confirm
    from testbed.simulation.tune import Candidate, TuneError

    scenario, result, out = _tuned(tmp_path)
    sizes, phases = confirm.plan(scenario, result, budget_s=1e6, factor=0.5)
    assert sizes == [8192, 32768]
    fixed = Candidate(**result["best_fixed"]["setting"])
    for lb, ps in phases.items():
        assert all(p["setting"].load_balancing == lb for p in ps)
        for a, b in zip(ps, ps[1:]):  # each phase starts after the previous one's simulated time, with room
            assert b["start_s"] >= a["start_s"] + 1.5 * a["sim_time_us"] / 1e6
        path = confirm.scenario_file(scenario, lb, ps, out)
        loaded = load_scenario(str(path))
        assert loaded.fabric.load_balancing == lb and not loaded.variants
        assert [(w.algorithm, w.channels, w.chunk_bytes) for w in loaded.workload] == \
            [(p["setting"].algorithm, p["setting"].channels, p["setting"].chunk_bytes) for p in ps]
    roles = {(p["size_bytes"], p["role"]) for ps in phases.values() for p in ps}
    for row in result["rows"]:
        same = Candidate(**row["choice"]) == fixed
        assert ((row["size_bytes"], "both") in roles) == same
    # a budget that holds only the first size confirms only that one; none at all is one line
    first = sum(p["sim_time_us"] * 1.5 / 1e6 + 10 * scenario.derived.base_rtt_us / 1e6
                for ps in phases.values() for p in ps if p["size_bytes"] == 8192)
    assert confirm.plan(scenario, result, budget_s=first / 0.5 * 1.01, factor=0.5)[0] == [8192]
    try:
        confirm.plan(scenario, result, budget_s=1e-6, factor=0.5)
    except TuneError as error:
        assert "over the --confirm-budget-s" in str(error) and "\n" not in str(error)
    else:
        raise AssertionError("an impossible budget was accepted")


def test_confirm_sets_emulated_beside_simulated_from_the_run_directories(tmp_path, monkeypatch):
    """The emulated run is stood in for by a simulator run at half the rate (no root here): the
    table must carry each run directory's figures as they are."""
    from testbed.emulation import commands
    from testbed.scenario import load_scenario
    from testbed.scenario.timescale import slowed
    from testbed.scenario.variants import Variant
    from testbed.simulation import confirm
    from testbed.simulation.run import run_variant
    from testbed.telemetry.collectives import summarize_simulated, write_sim_report

    scenario, result, out = _tuned(tmp_path)

    def fake_run(path, runs_dir, fit=True, what=""):
        s = slowed(load_scenario(path), 0.5)
        run_dir = Path(runs_dir) / s.name / "stamp"
        run_variant(Variant("base", (), s), run_dir / "base", result["switches"])
        write_sim_report(s, {"base": run_dir / "base"}, {"base": summarize_simulated(run_dir / "base", s.topo)},
                         run_dir)
        return run_dir

    monkeypatch.setattr(commands, "run_scenario_file", fake_run)
    monkeypatch.setattr(commands, "fit_factor", lambda variant: 0.5)
    path = confirm.confirm_on_fabric(scenario, result, out, 1e6, progress=lambda m: None)
    doc = json.loads((out / "confirm.json").read_text())
    assert doc["sizes"] == [8192, 32768]
    for row in doc["rows"]:
        assert row["rate_mbps"] == 10 and row["emulated_verified"] and row["sim_verified"]
        emu = json.loads((Path(row["emulated_run"]) / "summary.json").read_text())["base"]["collectives"]
        assert row["emulated_busbw_mbps"] == emu[row["collective"]]["busbw_mbps"]
        # on the scenario's clock: the tuner's own (nominal-rate) figure for the same setting, within 2%
        assert row["emulated_busbw_mbps"] == pytest.approx(row["tuner_sim_busbw_mbps"], rel=0.02)
        # the same file at the same rate on the same simulator (the switches the tuning ran): the same figure
        assert row["sim_busbw_mbps"] == row["emulated_busbw_mbps"]
    assert "choice / fixed, emulated" in path.read_text()
