"""`testbed tune`: coordinate descent against exhaustive search, on the simulator."""

import json

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
    assert [r["size_bytes"] for r in result["rows"]] == [8192, 32768]
    for row in result["rows"]:
        size = row["size_bytes"]
        measured = [m for m in result["measurements"] if m["size_bytes"] == size]
        assert len(measured) == 3 * 2 * 2 and all(m["verified"] for m in measured)
        assert row["best_busbw_mbps"] == max(m["busbw_mbps"] for m in measured)
        assert row["regret"] == 1 - row["choice_busbw_mbps"] / row["best_busbw_mbps"] >= 0
        assert row["choice_measured_candidates"] < len(measured)
    assert [t["size_bytes"] for t in result["table"]] == [8192, 32768]
    text = (out / "tuning.md").read_text()
    assert "regret (%)" in text and "busbw (Mbit/s)" in text
    assert "tuning:" in capsys.readouterr().out


def test_a_scenario_uses_the_tuning_table(tmp_path):
    from testbed.emulation.workload import scenario_messages
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
