"""Times a user reads are on the scenario's clock, also when --fit slowed the run (telemetry.clock)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import yaml

from testbed.scenario import expand_variants, load_scenario
from testbed.scenario.timescale import slowed
from testbed.telemetry.clock import clock_line, on_scenario_clock, stretch_of
from testbed.telemetry.recovery import goodput_figure
from testbed.telemetry.report import _fault_lines

ROOT = Path(__file__).resolve().parents[3]
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
    lines = _fault_lines({"cc=tita": on_scenario_clock(raw, stretch_of(run))}, {"cc=tita": run})
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
