"""`testbed diagnose` on damaged telemetry (telemetry/rundir.py's rules): a simulated run's
telemetry.jsonl emptied, deleted, cut in half by lines, cut mid-line, or ending well before the host
records gives a partial diagnosis that says so in diagnosis.json, diagnosis.md and the printed
verdict, and names no culprit the remaining data cannot support; a fault inside the span the
counters still cover is named first."""

from __future__ import annotations

import json
import shutil

import pytest

from testbed import cli
from testbed.diagnose.core import diagnose_run
from tests.unit.diagnose.corpus import scenario_data, write_run

LINK_DOWN = [{"at_s": 1.4, "kind": "link_down", "target": "h4-leaf2"},
             {"at_s": 3.0, "kind": "link_up", "target": "h4-leaf2"}]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    return write_run(scenario_data("leafspine-permutation", "leafspine", "permutation"),
                     tmp_path_factory.mktemp("healthy"))


@pytest.fixture(scope="module")
def cable_down(tmp_path_factory):
    """h4's only cable down from 1.4 s to 3.0 s: the run's hosts go on to about 4.2 s."""
    data = scenario_data("leafspine-permutation", "leafspine", "permutation")
    return write_run({**data, "faults": LINK_DOWN}, tmp_path_factory.mktemp("down"))


def damaged(variant, tmp_path, damage):
    """A copy of the run of `variant` whose telemetry.jsonl `damage(path)` damaged: its variant dir."""
    copy = tmp_path / "run"
    shutil.copytree(variant.parent, copy)
    for name in ("diagnosis.json", "diagnosis.md", "diagnosis.png"):
        (copy / variant.name / name).unlink(missing_ok=True)
    damage(copy / variant.name / "telemetry.jsonl")
    return copy / variant.name


def keep_lines(share):
    def cut(path):
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:int(len(lines) * share)]))
    return cut


def samples_until(t_s):
    def cut(path):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["t_s"] <= t_s))
    return cut


def cut_mid_line(path):
    lines = path.read_text().splitlines(keepends=True)
    half = len(lines) // 2
    path.write_text("".join(lines[:half]) + lines[half][:40])


def diagnosed(variant):
    (diagnosis,) = diagnose_run(variant).values()
    assert json.loads((variant / "diagnosis.json").read_text()) == diagnosis
    return diagnosis


def assert_partial_and_healthy(variant, diagnosis, why, series):
    partial = diagnosis["partial"]
    assert partial is not None and any(why in line for line in partial["why"]), partial
    assert partial["series"] == series and partial["judged_from_s"] == 0.0 and partial["run_to_s"] == 8.0
    assert diagnosis["healthy"] and diagnosis["culprits"] == []
    first = (variant / "diagnosis.md").read_text().splitlines()[2]
    assert first.startswith("healthy (partial: ") and why in first and first != "healthy: no culprit"


@pytest.mark.parametrize("damage, why", [
    (lambda path: path.write_text(""), "telemetry.jsonl is empty"),
    (lambda path: path.unlink(), "telemetry.jsonl is missing"),
])
def test_no_link_telemetry_is_a_hosts_only_diagnosis(healthy, cable_down, tmp_path, damage, why):
    """Emptied (it named 16 culprits, a fabric cable `down` among them) or deleted (it said plain
    `healthy`): the hosts alone are judged, over the whole run, and no link or switch is named."""
    variant = damaged(healthy, tmp_path / "healthy", damage)
    diagnosis = diagnosed(variant)
    assert_partial_and_healthy(variant, diagnosis, why, "hosts only")
    assert diagnosis["partial"]["judged_to_s"] == 8.0
    assert "hosts only" in (variant / "diagnosis.md").read_text().splitlines()[2]
    faulted = diagnosed(damaged(cable_down, tmp_path / "down", damage))
    assert faulted["partial"]["series"] == "hosts only"
    assert faulted["culprits"] and {c["kind"] for c in faulted["culprits"]} == {"host"}, faulted["culprits"]


@pytest.mark.parametrize("damage, why", [
    (keep_lines(0.5), "its counters stop before the hosts' do"),  # cut in half by lines, as a killed run leaves it
    (cut_mid_line, "cut short"),  # ... its last line cut part-way
    (keep_lines(0.25), "its counters stop before the hosts' do"),  # ending well before the host records
])
def test_telemetry_cut_short_judges_only_what_its_counters_cover(healthy, tmp_path, damage, why):
    """Cut in half it named `switch spine1 down` and `spine2 down`: counters that merely end are not
    a silent switch. The span judged ends where every switch's samples still are, before the hosts'
    records do."""
    variant = damaged(healthy, tmp_path, damage)
    diagnosis = diagnosed(variant)
    assert_partial_and_healthy(variant, diagnosis, why, "hosts and links")
    rows = [json.loads(line) for line in (variant / "telemetry.jsonl").read_text().splitlines()
            if line.endswith("}")]
    last = max(r["t_s"] for r in rows)
    assert last - 0.1 - 1e-9 <= diagnosis["partial"]["judged_to_s"] <= last < 2.0


def test_a_switch_never_sampled_leaves_its_ports_unjudged(healthy, tmp_path):
    """spine2's samples gone from the file: its counters are missing, not zero, so none of its
    cables is read as silent or lossy; the other series are judged over the span the counters cover."""
    def drop_spine2(path):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["switch"] != "spine2"))

    variant = damaged(healthy, tmp_path, drop_spine2)
    diagnosis = diagnosed(variant)
    assert_partial_and_healthy(variant, diagnosis, "telemetry.jsonl has no sample of spine2", "hosts and links")


def test_the_printed_verdict_says_it_is_partial(healthy, tmp_path, capsys):
    variant = damaged(healthy, tmp_path, keep_lines(0.5))
    assert cli.main(["diagnose", str(variant)]) == 0
    verdict = capsys.readouterr().out.splitlines()[0]
    assert verdict.startswith("healthy (partial: telemetry.jsonl's last sample is at 1.3 s") and "judged" in verdict


@pytest.mark.parametrize("until_s, culprit", [
    (3.5, ("link", "h4-leaf2", "down")),  # the cable came back at 3.0 s, inside the span
    # cut while it was down: a cable dark to the end of what is judged is the cable, not the host
    # (`host down` needs the run's end: whether the cable mended after the counters stop is not known)
    (2.5, ("link", "h4-leaf2", "down")),
])
def test_a_fault_inside_the_covered_span_is_named_first(cable_down, tmp_path, until_s, culprit):
    variant = damaged(cable_down, tmp_path, samples_until(until_s))
    diagnosis = diagnosed(variant)
    assert diagnosis["partial"]["judged_to_s"] == until_s and diagnosis["partial"]["series"] == "hosts and links"
    first = diagnosis["culprits"][0]
    assert (first["kind"], first["target"], first["symptom"]) == culprit, diagnosis["culprits"][:3]
    assert abs(first["start_s"] - 1.4) <= 1.0 and first["end_s"] <= until_s
    assert all(c["end_s"] <= until_s for c in diagnosis["culprits"])
    assert not any(c["kind"] == "host" and c["symptom"] == "down" for c in diagnosis["culprits"])
    lines = (variant / "diagnosis.md").read_text().splitlines()
    assert lines[2].startswith("partial: telemetry.jsonl's last sample is at") and lines[3].startswith(
        "culprit: link h4-leaf2 down")


def test_a_whole_run_is_not_partial(healthy):
    (diagnosis,) = diagnose_run(healthy).values()
    assert diagnosis["partial"] is None


def test_partial_times_are_on_the_scenarios_clock(tmp_path):
    """A run slowed x4: the telemetry's end, the hosts' and the span judged are given over 4."""
    from testbed.diagnose.core import judged_bins, partial_field
    from testbed.telemetry.rundir import telemetry_cover

    (tmp_path / "scenario.resolved.yaml").write_text("time_stretch: 4.0\n")
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "h1.jsonl").write_text(json.dumps(
        {"kind": "message_delivered", "dst": "h1", "bytes": 1, "delivered_us": 8_000_000}) + "\n")
    (tmp_path / "telemetry.jsonl").write_text("".join(
        json.dumps({"t_s": round(0.1 * i, 1), "switch": "s1", "tx": {}, "rx": {}}) + "\n" for i in range(25)))
    cover = telemetry_cover(tmp_path)
    assert cover.gaps == ["telemetry.jsonl's last sample is at 0.6 s, the hosts' last record at 2.0 s: its "
                          "counters stop before the hosts' do"]
    assert cover.end_s == 2.4 and judged_bins(cover, 320) == 24
    partial = partial_field(cover, judged_bins(cover, 320), 320, 4.0)
    assert (partial["judged_to_s"], partial["run_to_s"]) == (0.6, 8.0)
