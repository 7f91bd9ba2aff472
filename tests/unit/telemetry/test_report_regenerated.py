"""`testbed report RUN` never drops a section: every kind of run directory (simulator runs with faults,
a cut, collectives and --diagnose; an emulated run's fixture; a `testbed reproduce` directory with its
notes) is reported again and its section headings compared with the first report's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from run_fixture import make_default_runs, make_run

from testbed.cli import main
from testbed.scenario import load_scenario
from testbed.telemetry.report import write_report
from testbed.telemetry.summary import summarize_variant

ROOT = Path(__file__).resolve().parents[3]


def sections(text: str) -> list[str]:
    """Headings, the lines that open a list ('Faults in cc=tita:') or a variant's entry ('Failover in
    cc=tita: ...'), plots, and the diagnosis and conservation lines' openings: what a reader finds a
    section by."""
    out = []
    for line in text.splitlines():
        if line.startswith(("#", "![")) or (line.endswith(":") and not line.startswith("|")):
            out.append(line)
        elif (line.startswith("- ") and ":" in line) or re.match(r"[A-Z][A-Za-z ]* in [^:|]+: ", line):
            out.append(line.split(":", 1)[0])
    return out


def _regenerated(out: Path, *argv: str) -> tuple[str, str]:
    before = (out / "report.md").read_text()
    assert main(["report", str(out), *argv]) == 0
    return before, (out / "report.md").read_text()


@pytest.mark.parametrize("scenario, flags, must", [
    ("flap.yaml", ["--diagnose"], ["## Diagnosis (testbed diagnose: run against its healthy twin)",
                                   "Faults in cc=tita:"]),
    ("failover.yaml", [], ["Faults in cc=tita:", "- DATA conservation (cc=tita)"]),
    ("gpu-collectives-small.yaml", [], ["## Collectives"]),
])
def test_a_simulator_run_keeps_every_section(scenario, flags, must, tmp_path, capsys):
    assert main(["sim", str(ROOT / "scenarios" / scenario), "--runs-dir", str(tmp_path), *flags]) == 0
    (out,) = (p.parent for p in tmp_path.rglob("summary.json"))
    before, after = _regenerated(out)
    assert sections(after) == sections(before)
    for heading in must:
        assert heading in sections(before)


def test_an_emulated_run_keeps_every_section(tmp_path):
    scenario = load_scenario(ROOT / "scenarios" / "default.yaml")
    dirs = make_default_runs(tmp_path, scenario)
    cut = dirs["load_balancing=ecmp"]  # a cut host cable and the controller's reroute: faults and failover
    (cut / "faults.jsonl").write_text(json.dumps({"at_s": 2.0, "t_s": 2.0, "kind": "link_down", "target": "h1-leaf1",
                                                  "interfaces": ["leaf1-eth1"]}) + "\n")
    (cut / "reroute.jsonl").write_text(json.dumps({"seen_t_s": 2.0, "dead_links": ["h1-leaf1"],
                                                   "changes": {"h1-leaf1": "down"}, "switches": ["leaf1"],
                                                   "routes_moved": 1, "done_t_s": 2.02, "reaction_ms": 20.0}) + "\n")
    summaries = {n: summarize_variant(d, scenario.topo) for n, d in dirs.items()}
    write_report(scenario, dirs, summaries, tmp_path)
    before, after = _regenerated(tmp_path)
    assert {"Faults in load_balancing=ecmp:", "Failover in load_balancing=ecmp"} <= set(sections(before))
    assert sections(after) == sections(before)


def test_variant_directories_the_scenario_does_not_name_are_one_line(tmp_path, capsys):
    scenario = load_scenario(ROOT / "scenarios" / "default.yaml")
    make_run(tmp_path / "ecmp", scenario)                 # its result.json names variant "ecmp"
    assert main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "name none of the scenario's variants" in err and "\n" not in err


def test_a_diagnosed_variant_keeps_its_verdict_from_diagnosis_json(tmp_path, capsys):
    assert main(["sim", str(ROOT / "scenarios" / "flap.yaml"), "--runs-dir", str(tmp_path), "--diagnose"]) == 0
    (out,) = (p.parent for p in tmp_path.rglob("summary.json"))
    lines = [line for line in (out / "report.md").read_text().splitlines() if line.startswith("- cc=")]
    assert main(["report", str(out), "--html"]) == 0
    text = (out / "report.md").read_text()
    assert [line for line in text.splitlines() if line.startswith("- cc=")] == lines
    assert "Diagnosis" in (out / "report.html").read_text()


def test_a_reproduce_directory_keeps_its_claims_and_notes(tmp_path, capsys):
    from testbed.claims import experiments, report

    (e,) = experiments.plan(["tita", "none"], quick=True)[:1]
    experiments.run(e, tmp_path)
    report.write(tmp_path, ["emulated: not run (a note the first write had)"])
    before, after = _regenerated(tmp_path)
    assert "## Claims" in sections(before) and sections(after) == sections(before)
    assert "* emulated: not run (a note the first write had)" in after
    assert main(["reproduce", "--report", str(tmp_path)]) == 0
    assert (tmp_path / "report.md").read_text() == after
