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
