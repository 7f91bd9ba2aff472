"""Figures in summary.json and report.md come from the run files, computed right."""

import json
from pathlib import Path

import pytest
import yaml

from testbed.scenario import load_scenario
from testbed.telemetry.report import write_report
from testbed.telemetry.summary import jain_fairness, summarize_variant

ROOT = Path(__file__).resolve().parents[3]


def make_run(run_dir: Path, scenario, uplink_bytes: dict, lag_us: float) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "scenario.resolved.yaml").write_text(yaml.safe_dump(scenario.to_dict()))
    records = [
        {"kind": "message_sent", "src": "h1", "dst": "h3", "msg_id": 0, "bytes": 1_000_000, "cells": 977,
         "start_us": 1_000_000, "acked_us": 1_500_000, "fct_us": 500_000, "retransmissions": 2, "collective": "p"},
        {"kind": "message_sent", "src": "h2", "dst": "h4", "msg_id": 0, "bytes": 1_000_000, "cells": 977,
         "start_us": 1_000_000, "acked_us": 2_000_000, "fct_us": 1_000_000, "retransmissions": 0, "collective": "p"},
    ]
    for src, dst, end in (("h1", "h3", 2_480_000), ("h2", "h4", 3_000_000)):
        records.append({"kind": "message_delivered", "src": src, "dst": dst, "msg_id": 0, "flow_id": 1,
                        "bytes": 1_000_000, "cells": 977, "first_cell_us": 1_010_000, "delivered_us": end,
                        "cells_out_of_order": 5, "max_ooo_distance_cells": 3, "peak_reorder_buffer_cells": 4,
                        "window_overflows": 0, "duplicate_cells": 0, "ce_cells": 1, "verified": True})
    (run_dir / "records").mkdir()
    (run_dir / "records" / "all.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    samples = []
    for t, fraction in ((0.0, 0.0), (1.0, 0.0), (3.0, 1.0)):
        tx = {str(port): {"packets": 1, "bytes": int(b * fraction) + 1} for port, b in uplink_bytes.items()}
        samples.append({"t_s": t, "switch": "leaf1", "tx": tx, "rx": {}, "drops_packets": {"ttl_expired": 2},
                        "ecn_marks_packets": {"3": 7}, "max_qdepth_packets": {"3": 9}})
    (run_dir / "telemetry.jsonl").write_text("\n".join(json.dumps(s) for s in samples) + "\n")
    (run_dir / "result.json").write_text(json.dumps({
        "variant": run_dir.name, "target": "builtin", "pingall": {"pairs": 56, "failed": []}, "notes": [],
        "tm_stats": {"leaf1": {"tm": {"fidelity": {"dequeue": {"p99_lag_us": lag_us}}},
                               "queues": [{"dropped_full": 3, "max_depth": 12},
                                          {"priority": 1, "dropped_full": 4, "max_depth": 8}]}}}))
    for host, stats in (("h1", {"cnps_received": 2, "rate_cuts": 2, "min_rate_mbps": 3.5, "end_reason": "done"}),
                        ("h2", {"cnps_received": 1, "rate_cuts": 0, "min_rate_mbps": 9.0, "end_reason": "timeout"})):
        (run_dir / "records" / f"{host}.stats.json").write_text(json.dumps({"host": host, **stats}))


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(ROOT / "scenarios" / "default.yaml")


def test_summary_figures(tmp_path, scenario):
    topology = scenario.topo
    uplinks = [p.number for p in topology.ports("leaf1") if p.tier == "fabric"]
    rate_bytes_per_s = scenario.links.fabric.rate_mbps * 1e6 / 8
    make_run(tmp_path / "ecmp", scenario, {uplinks[0]: 2 * rate_bytes_per_s, uplinks[1]: 0.5 * rate_bytes_per_s}, 10)
    summary = summarize_variant(tmp_path / "ecmp", topology)
    assert summary["messages_verified"] == 2 and summary["retransmissions_cells"] == 2
    assert summary["fct_p99_ms"] == pytest.approx(1000) and summary["fct_p50_ms"] in (500, 1000)
    assert summary["goodput_mbps"] == pytest.approx(2_000_000 * 8 / (3_000_000 - 1_010_000))
    assert summary["switch_drops_packets"] == {"ttl_expired": 2, "queue_full": 3, "credit_queue_full": 4}
    assert (summary["data_drops_packets"], summary["credit_drops_packets"]) == (5, 4)
    agents = summary["agents"]
    assert (agents["cnps_received"], agents["rate_cuts"], agents["min_rate_mbps"]) == (3, 2, 3.5)
    assert agents["agents_not_done"] == ["h2 (timeout)"]
    assert summary["ecn_marks_packets"] == 7 and summary["max_queue_depth_packets"] == 12
    utilisation = summary["uplink_utilisation"]
    assert len(utilisation) == 2  # 2 s of traffic (records: 1 s to 3 s), counted from the first to the last sample
    assert sorted(utilisation.values()) == pytest.approx([0.25, 1.0], rel=0.01)
    assert summary["fidelity"]["behind_real_time"] is False


def test_report_puts_a_fidelity_warning_first(tmp_path, scenario):
    topology = scenario.topo
    uplinks = [p.number for p in topology.ports("leaf1") if p.tier == "fabric"]
    make_run(tmp_path / "a", scenario, {uplinks[0]: 1000, uplinks[1]: 1000}, 50_000)
    summaries = {"a": summarize_variant(tmp_path / "a", topology)}
    report = write_report(scenario, {"a": tmp_path / "a"}, summaries, tmp_path / "out")
    first = report.read_text().splitlines()[0]
    assert first.startswith("**Fidelity warning") and "leaf1" in first
    assert (tmp_path / "out" / "uplinks.png").stat().st_size > 1000
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["a"]["messages_verified"] == 2


def test_jain_fairness():
    assert jain_fairness([1, 1, 1, 1]) == pytest.approx(1.0)
    assert jain_fairness([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_fairness([]) is None


def test_fidelity_threshold_is_one_cell_time_on_the_host_link_at_least_1_ms():
    from testbed.telemetry.summary import fidelity_threshold_us

    slow = {"derived": {"cell_wire_bytes": 1090}, "links": {"host": {"rate_mbps": 5}}}
    fast = {"derived": {"cell_wire_bytes": 1090}, "links": {"host": {"rate_mbps": 100}}}
    assert fidelity_threshold_us(slow) == pytest.approx(1090 * 8 / 5)  # 1744 us
    assert fidelity_threshold_us(fast) == 1000.0


def test_lag_percentiles_are_exact_in_the_verdict_range():
    from testbed.p4model.tm.lag import LagStats

    lag = LagStats()
    for us in range(1, 101):
        lag.record(us * 30_000)  # 30 us .. 3000 us
    assert lag.percentile_us(0.99) == 2970
