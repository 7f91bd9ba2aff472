"""Times a user reads are on the scenario's clock, also when --fit slowed the run (telemetry.clock)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas
import pytest
import yaml

from testbed.host.records import read_jsonl

from testbed.scenario import expand_variants, load_scenario
from testbed.scenario.timescale import slowed
from testbed.telemetry.clock import clock_line, on_scenario_clock, stretch_of
from testbed.telemetry.recovery import goodput_figure
from testbed.telemetry.faults import fault_lines

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recompute_report)
FACTOR = 1 / 4.96  # the slow-down of a reported example: a cut at 3 s showed at 14.9 s


def _run_dir(tmp_path: Path, factor: float) -> tuple[Path, float]:
    variant = expand_variants(load_scenario(ROOT / "scenarios" / "failover.yaml"))[0]
    slow = slowed(variant.scenario, factor)
    run = tmp_path / ("slow" if factor < 1 else "nominal")
    (run / "records").mkdir(parents=True)
    (run / "scenario.resolved.yaml").write_text(yaml.safe_dump(slow.to_dict(), sort_keys=False))
    fault = slow.faults[0]
    cut_run_s = fault.at_s + 0.004  # carried out 4 ms of the run's clock late
    (run / "faults.jsonl").write_text(json.dumps(
        {"kind": fault.kind, "target": fault.target, "at_s": fault.at_s, "t_s": cut_run_s}) + "\n")
    t = [i * 0.5 for i in range(int(4 * cut_run_s))]
    series = {"t_s": t, "in_order_cells": [100 * i for i in range(len(t))], "port_tx": [[0]] * len(t),
              "period_s": 0.5, "data_cell_payload_bytes": 1024}
    (run / "records" / "h1.stats.json").write_text(json.dumps({"host": "h1", "series": series}))
    return run, cut_run_s


def test_the_fault_marker_sits_at_the_scenario_time_under_a_fit_factor(tmp_path):
    run, cut_run_s = _run_dir(tmp_path, FACTOR)
    assert abs(stretch_of(run) - 4.96) < 1e-9
    assert cut_run_s > 9.9  # on the run's clock the cut is at 9.924 s
    figure = goodput_figure({"cc=tita": run})
    ax = figure.axes[0]
    red = [line for line in ax.get_lines() if line.get_color() == "red"]
    assert len(red) == 1
    assert abs(red[0].get_xdata()[0] - 2.0 - 0.004 / 4.96) < 1e-9  # the file's 2.0 s (+ the lateness, scaled)
    goodput = next(line for line in ax.get_lines() if line.get_label() == "h1")
    assert abs(max(goodput.get_xdata()) * 4.96 - max(json.loads((run / "records" / "h1.stats.json").read_text())
                                                    ["series"]["t_s"])) < 1e-9
    # 100 cells of 1024 B a half second of the run: 1.6384 Mbit/s there, 4.96 times that on the scenario's clock
    assert abs(max(goodput.get_ydata()) - 1.6384 * 4.96) < 1e-9
    assert ax.get_xlabel() == "time on the scenario's clock (s)"
    plt.close(figure)

    raw = {"faults": [json.loads((run / "faults.jsonl").read_text())]}
    lines = fault_lines({"cc=tita": on_scenario_clock(raw, stretch_of(run))})
    assert lines[1] == "- link_down h1-leaf1 at 2.001 s (planned 2 s)"
    line = clock_line({"cc=tita": run})
    assert line.startswith("Clock: every variant ran x4.96 slower than the scenario file (every rate times 0.202")


def test_an_unslowed_run_says_nothing_of_clocks(tmp_path):
    run, cut = _run_dir(tmp_path, 1.0)
    assert stretch_of(run) == 1.0 and clock_line({"base": run}) is None
    figure = goodput_figure({"base": run})
    red = [line for line in figure.axes[0].get_lines() if line.get_color() == "red"]
    assert red[0].get_xdata()[0] == cut == 2.004
    plt.close(figure)


def _nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def test_a_slowed_runs_report_summary_and_tables_are_on_the_scenarios_clock(tmp_path):
    """The hand-worked run directory (run_fixture) as a run slowed x4 would leave it (its resolved scenario
    slowed, time_stretch 4): completion times, the traffic window and messages.csv read as the records'
    over 4, goodput times 4, the ideal back at the file's rates, the link clause at the file's rates, the
    Clock line once; unslowed, the same records read as they are. recompute_report agrees with both."""
    from run_fixture import make_run

    from testbed.telemetry.report import write_report
    from testbed.telemetry.summary import summarize_variant

    scenario = load_scenario(ROOT / "scenarios" / "default.yaml")
    out = {}
    for name, factor in (("nominal", 1.0), ("slowed", 0.25)):
        run = make_run(tmp_path / name / "base", slowed(scenario, factor) if factor != 1 else scenario)
        result = json.loads((run / "result.json").read_text())
        (run / "result.json").write_text(json.dumps({**result, "variant": "base"}))
        write_report(scenario, {"base": run}, {"base": summarize_variant(run, scenario.topo)}, tmp_path / name)
        assert recompute_report.main([str(tmp_path / name)]) == 0
        out[name] = tmp_path / name
    records = [r for p in sorted((out["slowed"] / "base" / "records").glob("*.jsonl")) for r in read_jsonl(p)]
    sent = [r for r in records if r["kind"] == "message_sent"]
    p50 = _nearest_rank([r["completion_us"] / 1000 for r in sent], 50)
    p99 = _nearest_rank([r["completion_us"] / 1000 for r in sent], 99)
    nominal = json.loads((out["nominal"] / "summary.json").read_text())["base"]
    slow = json.loads((out["slowed"] / "summary.json").read_text())["base"]
    assert (nominal["completion_p50_ms"], nominal["completion_p99_ms"]) == (p50, p99)
    assert (slow["completion_p50_ms"], slow["completion_p99_ms"]) == (p50 / 4, p99 / 4)
    assert slow["traffic_window_s"] == [1.0 / 4, 3.0 / 4] and nominal["traffic_window_s"] == [1.0, 3.0]
    assert slow["goodput_mbps"] == pytest.approx(4 * nominal["goodput_mbps"], rel=1e-12)
    assert slow["ideal"]["goodput_mbps"] == pytest.approx(nominal["ideal"]["goodput_mbps"], rel=1e-9)
    assert slow["clock"] == {"scenario_clock": True, "run_time_stretch": 4.0}

    text = {name: (d / "report.md").read_text() for name, d in out.items()}
    row = next(line for line in text["slowed"].splitlines() if line.startswith("| completion p50 / p99 (ms)"))
    assert row.split(" | ")[1].startswith(f"{p50 / 4:.1f} / {p99 / 4:.1f} (n=2")
    row = next(line for line in text["nominal"].splitlines() if line.startswith("| completion p50 / p99 (ms)"))
    assert row.split(" | ")[1].startswith(f"{p50:.1f} / {p99:.1f} (n=2")
    assert text["slowed"].count("Clock:") == 1 and "Clock: every variant ran x4 slower" in text["slowed"]
    assert "Clock:" not in text["nominal"]
    assert "host links 5 Mbit/s" in text["slowed"] and "base RTT" in text["slowed"]
    assert (text["slowed"].split("base RTT ")[1].split(" us")[0] == text["nominal"].split("base RTT ")[1].split(" us")[0])

    table = pandas.read_csv(out["slowed"] / "results.csv")
    assert table.loc[0, "completion_p50_ms"] == pytest.approx(p50 / 4) and table.loc[0, "clock/run_time_stretch"] == 4
    messages = pandas.read_csv(out["slowed"] / "messages.csv")
    for r in sent:
        row = messages[(messages.src == r["src"]) & (messages.dst == r["dst"]) & (messages.msg_id == r["msg_id"])]
        assert row.iloc[0]["completion_us"] == pytest.approx(r["completion_us"] / 4)
        assert row.iloc[0]["start_us"] == pytest.approx(r["start_us"] / 4) and row.iloc[0]["run_time_stretch"] == 4


def test_failover_durations_and_rates_are_on_the_scenarios_clock():
    """A recovery entry as summarize_variant gives it (the run's clock, x4 slower) reads in report.md as
    the scenario's: times and durations over 4, goodputs times 4, RTO floors (a ratio) as they were."""
    from testbed.telemetry.report import _recovery_lines

    run_clock = {"messages_planned": 2, "messages_completed": 2, "retransmissions_cells": 5, "recovery": [{
        "fault": "link_down h1-leaf1", "cut_t_s": 8.0, "host": "h1", "port": 1, "host_detect_ms": 40.0,
        "host_detect_by": "carrier", "fabric_detect_ms": 80.0, "routes_moved": 3, "rerouted_ms": 120.0,
        "rto_floor_ms": 160.0, "link_payload_mbps": 1.0,
        "hosts": {"h1": {"recovered_ms": 200.0, "recovered_rto_floors": 1.25, "before_mbps": 1.0, "ports": 2,
                         "one_port_mbps": 0.5, "after_mbps": 0.45, "after_over_link_payload": 0.45}}}]}
    lines = _recovery_lines({"v": on_scenario_clock(run_clock, 4.0)})
    assert lines[0] == "Failover in v: link_down h1-leaf1 at 2.000 s"
    assert "left its port 1 10.0 ms after the cut" in lines[1]
    assert "after 20.0 ms" in lines[1] and "by 30.0 ms" in lines[1]
    assert ("4.000 before the cut on 2 port(s), so 2.000 per port; 1.800 after it (0.45 of the 4.000 a host link "
            "carries); back to 90% of one port's share: 50.0 ms = 1.25 RTO floors of 40.0 ms") in lines[2]
