"""The report opens with its verdict table; results.csv / messages.csv load in pandas and agree with
summary.json and the records; report.html is one self-contained page that Chromium shows whole."""

from __future__ import annotations

import base64
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pandas
import pytest
from run_fixture import CELLS, make_run

from testbed.errors import TestbedError
from testbed.host.records import read_jsonl
from testbed.scenario import load_scenario
from testbed.telemetry.export import flatten
from testbed.telemetry.html import write_html
from testbed.telemetry.report import write_report
from testbed.telemetry.summary import summarize_variant

ROOT = Path(__file__).resolve().parents[3]
NAMES = ("load_balancing=ecmp", "load_balancing=spray")


@pytest.fixture
def out(tmp_path):
    scenario = load_scenario(ROOT / "scenarios" / "default.yaml")
    dirs = {}
    for name, lb in zip(NAMES, ("ecmp", "spray_entropy")):
        run = make_run(tmp_path / lb, scenario, load_balancing=lb)
        result = json.loads((run / "result.json").read_text())
        result["variant"] = name
        (run / "result.json").write_text(json.dumps(result))
        dirs[name] = run
    summaries = {n: summarize_variant(d, scenario.topo) for n, d in dirs.items()}
    write_report(scenario, dirs, summaries, tmp_path / "report")
    return tmp_path / "report", dirs


def _same(csv_value, json_value) -> bool:
    if json_value is None:
        return isinstance(csv_value, float) and math.isnan(csv_value)
    if isinstance(json_value, bool):
        return bool(csv_value) == json_value and str(csv_value) in ("True", "False")
    if isinstance(json_value, (int, float)):
        return math.isclose(float(csv_value), json_value, rel_tol=1e-12, abs_tol=1e-12)
    return str(csv_value) == json_value


def test_the_report_opens_with_the_verdict_table(out):
    report, _ = out
    lines = (report / "report.md").read_text().splitlines()
    first_table = next(i for i, line in enumerate(lines) if line.startswith("|"))
    assert lines[first_table] == ("| variant | messages complete / planned | goodput / ideal | DATA cells lost | "
                                  "fidelity | faults |")
    summary = json.loads((report / "summary.json").read_text())
    for i, name in enumerate(NAMES):
        s = summary[name]
        want = (f"| {name} | 2 / 2 ok | {s['measured_over_ideal']['goodput']:.2f} | 3 | kept | none |")
        assert lines[first_table + 2 + i] == want
    assert first_table < next(i for i, line in enumerate(lines) if line.startswith("Topology"))


def test_results_csv_loads_in_pandas_and_matches_summary_json(out):
    report, _ = out
    table = pandas.read_csv(report / "results.csv")
    summary = json.loads((report / "summary.json").read_text())
    assert list(table["variant"]) == list(NAMES)
    checked = 0
    for _, row in table.iterrows():
        for key, value in flatten(summary[row["variant"]]).items():
            if key == "variant":
                continue
            assert _same(row[key], value), (row["variant"], key, row[key], value)
            checked += 1
    assert checked > 100  # every scalar figure, not a handful
    assert list(table["verdict/data_drops"]) == [3, 3]
    assert list(table["drops/by_type/DATA/switch_queue_drops"]) == [3, 3]


def test_messages_csv_has_every_planned_message_with_its_records(out):
    report, dirs = out
    table = pandas.read_csv(report / "messages.csv")
    assert len(table) == 4 and set(table["variant"]) == set(NAMES)
    for name, run in dirs.items():
        records = [r for p in sorted((run / "records").glob("*.jsonl")) for r in read_jsonl(p)]
        for r in (r for r in records if r["kind"] == "message_sent"):
            row = table[(table.variant == name) & (table.src == r["src"]) & (table.dst == r["dst"])
                        & (table.msg_id == r["msg_id"])]
            assert len(row) == 1
            assert row.iloc[0]["completion_us"] == pytest.approx(r["completion_us"])
            assert row.iloc[0]["retransmissions"] == r["retransmissions"]
            assert bool(row.iloc[0]["verified"]) and row.iloc[0]["cells"] == CELLS


def test_a_simulator_run_exports_the_same_tables(tmp_path):
    import argparse

    from testbed.simulation.commands import sim_command

    sim_command(argparse.Namespace(scenario=str(ROOT / "scenarios" / "default.yaml"), runs_dir=str(tmp_path),
                                   variant=["load_balancing=spray"], host_rate_mbps=None))
    (out_dir,) = (tmp_path / "default").iterdir()
    summary = json.loads((out_dir / "summary.json").read_text())
    table = pandas.read_csv(out_dir / "results.csv")
    row = table.iloc[0]
    for key, value in flatten(summary["load_balancing=spray"]).items():
        assert _same(row[key], value), (key, row[key], value)
    assert row["verdict/messages_complete"] == row["verdict/messages_planned"] == 16
    assert row["verdict/data_drops"] == summary["load_balancing=spray"]["simulator"]["switch_data_drops"]
    messages = pandas.read_csv(out_dir / "messages.csv")
    assert len(messages) == 16 and messages["verified"].all() and messages["acknowledged"].all()
    assert "| load_balancing=spray | 16 / 16 ok | - |" in (out_dir / "report.md").read_text()


def test_the_html_page_embeds_every_plot(out):
    report, _ = out
    page = write_html(report / "report.md").read_text()
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", (report / "report.md").read_text())
    assert len(linked) >= 2
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(linked) and "<img" not in re.sub(r'<img src="data:image/png;base64,', "", page)
    assert base64.b64decode(images[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<table>" in page and "messages complete / planned" in page


def test_the_html_title_names_the_scenario(out):
    report, _ = out
    page = write_html(report / "report.md").read_text()
    assert f"<title>default: {report.name}</title>" in page


def test_a_missing_plot_is_refused(out):
    report, _ = out
    next(report.glob("*.png")).unlink()
    with pytest.raises(TestbedError, match="is not beside it"):
        write_html(report / "report.md")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_the_html_page_opens_in_headless_chromium_with_every_plot_shown(out, tmp_path):
    report, _ = out
    page = write_html(report / "report.md")
    shot = tmp_path / "report.png"
    done = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,4000", page.as_uri())
    assert shot.is_file() and shot.stat().st_size > 10_000, done.stderr[-2000:]
    # Whether each image decoded: a copy of the page that writes, once loaded, each image's natural width
    # into the DOM Chromium dumps (the page itself carries no script).
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace(
        "</body>", "<script>window.addEventListener('load', () => { document.body.setAttribute('data-widths', "
        "[...document.images].map(i => i.complete ? i.naturalWidth : -1).join(',')); });</script></body>"))
    dom = _chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()).stdout
    widths = re.search(r'data-widths="([^"]*)"', dom)
    assert widths, dom[-2000:]
    values = [int(w) for w in widths.group(1).split(",")]
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", (report / "report.md").read_text())
    assert len(values) == len(linked) and all(w > 100 for w in values), values


def test_the_verdict_counts_fault_events_carried_out_against_those_planned():
    from testbed.telemetry.verdict_table import planned_fault_events, verdict_lines

    flap = load_scenario(ROOT / "scenarios" / "flap.yaml")
    planned = planned_fault_events(flap)
    assert planned == sum(len(f.events()) for f in flap.faults) >= 2
    base = {"messages_planned": 4, "messages_completed": 4}
    ok = {"kind": "link_down", "target": "leaf1-spine1", "t_s": 1.0}
    failed = {"kind": "link_up", "target": "leaf1-spine1", "t_s": 2.0, "error": "refused"}
    cases = {"all": ([ok] * planned, f"{planned} carried out"),
             "ended first": ([ok], f"**1 of {planned} carried out**"),
             "one failed": ([ok] * (planned - 1) + [failed],
                            f"**{planned - 1} of {planned} carried out** (failed: link_up leaf1-spine1)"),
             "simulated": ([], f"**0 of {planned} carried out**")}
    rows = verdict_lines({name: {**base, "faults": faults} for name, (faults, _) in cases.items()}, planned)[2:-1]
    for row, (name, (_, want)) in zip(rows, cases.items()):
        assert row == f"| {name} | 4 / 4 ok | - | - | - | {want} |"
    assert verdict_lines({"v": base}, 0)[2] == "| v | 4 / 4 ok | - | - | - | none |"
