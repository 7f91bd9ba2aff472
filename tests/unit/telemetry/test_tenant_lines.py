"""The report's first lines on tenants: a simulated run's matrix, an emulated run's ping-all, and
a `testbed sim` run of a scenario with tenants that puts them there."""

from __future__ import annotations

import json

from testbed import cli
from testbed.telemetry.tenants import reachability_lines


def test_lines_from_either_check_and_none_without_tenants():
    simulated = {"reachability": {"within": 8, "within_reached": 8, "across": 22, "across_reached": 0, "broken": []}}
    emulated = {"pingall": {"pairs": 8, "failed": [], "across_tenants": 22, "crossed": ["h1->h3"]}}
    assert reachability_lines({"a": simulated, "b": emulated, "c": {"pingall": {"pairs": 30, "failed": []}}}) == [
        "- Tenants (a): reachability checked before traffic, one cell per ordered pair through the program and "
        "plan on the simulator's switches: 8/8 pairs within tenants reach, 0/22 across; as the tenants say.",
        "- Tenants (b): ping-all before traffic: 8/8 pairs within tenants answered, 1/22 across; **BROKEN**.", ""]
    broken = {"reachability": {**simulated["reachability"], "across_reached": 1,
                               "broken": ["h1 -> h3: crosses tenants, was delivered"]}}
    assert "**BROKEN** in 1 pairs (first: h1 -> h3: crosses tenants, was delivered)" in reachability_lines(
        {"a": broken})[0]
    assert reachability_lines({"a": {"pingall": None}}) == []


def test_sim_report_opens_with_the_tenants_reachability(tmp_path, capsys):
    path = tmp_path / "two.yaml"
    path.write_text("name: two\nduration_s: 5\n"
                    "topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\n"
                    "tenants: [{name: a, hosts: [h1, h3]}, {name: b, hosts: [h2, h4]}]\n"
                    "workload: [{kind: permutation, hosts: [h1, h3], message_bytes: 8192}]\n")
    assert cli.main(["sim", str(path), "--runs-dir", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    (run,) = (tmp_path / "runs" / "two").iterdir()
    report = (run / "report.md").read_text().splitlines()
    assert report[2] == ("- Tenants (base): reachability checked before traffic, one cell per ordered pair through "
                         "the program and plan on the simulator's switches: 4/4 pairs within tenants reach, 0/8 "
                         "across; as the tenants say.")
    pairs = json.loads((run / "base" / "reachability.json").read_text())["pairs"]
    assert len(pairs) == 12 and sum(p["delivered"] for p in pairs) == 4
    # the run's own traffic, per tenant, from fabric.p4's counters: only tenant a's hosts sent
    counters = json.loads((run / "base" / "result.json").read_text())["tenant_counters"]
    assert list(counters) == ["1"] and counters["1"]["admitted_packets"] > 0 and counters["1"]["dropped_packets"] == 0
