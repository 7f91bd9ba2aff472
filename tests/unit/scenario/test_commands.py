"""`testbed validate` and `testbed show`, and the shipped scenarios."""

import re
from pathlib import Path

import pytest
import yaml

from testbed import cli, targets
from testbed.scenario import expand_variants, load_scenario
from testbed.scenario.schema import SCHEMA

ROOT = Path(__file__).parents[3]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


def test_shipped_scenarios_validate(capsys, monkeypatch, tmp_path):
    from testbed.scenario import capacity

    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "none.json")  # the reference costs
    monkeypatch.setattr(capacity, "machine_cores", lambda: 2)  # the machine the scenarios are sized for
    monkeypatch.setattr(targets, "bmv2_problem", lambda: None)  # targets.yaml's bmv2 variant needs one
    assert {p.name for p in SCENARIOS} >= {"default.yaml", "incast.yaml"}
    assert cli.main(["validate", *map(str, SCENARIOS)]) == 0
    lines = capsys.readouterr().out.splitlines()
    out = [line for line in lines if not line.startswith("  ")]  # a check's line or note under each file
    assert out[0] == f"{SCENARIOS[0]}: ok ({len(expand_variants(load_scenario(SCENARIOS[0])))} variants)"
    assert len(out) == len(SCENARIOS)
    checked = [line for line in lines if line.startswith("  ") and not line.startswith("  note:")]
    assert checked and all("capacity: needs about" in line and "us/packet" in line and "us/datagram" in line
                           and "from reference figures" in line for line in checked)


def test_default_and_incast_are_what_the_brief_asks():
    default = load_scenario(ROOT / "scenarios" / "default.yaml")
    assert default.switch.target == "builtin"
    # Rates are scaled to what 2 cores keep up with; the dimensionless ratios are what must hold.
    assert 16 <= default.derived.bdp_cells <= 32
    assert default.links.host.buffer_packets == 2 * default.derived.bdp_cells
    assert [p.kind for p in default.workload] == ["pingall", "permutation"]
    assert [v.name for v in expand_variants(default)] == ["load_balancing=ecmp", "load_balancing=spray"]
    incast = load_scenario(ROOT / "scenarios" / "incast.yaml")
    assert [v.name for v in expand_variants(incast)] == ["cc=tita", "cc=dcqcn", "cc=nscc", "cc=none"]
    phase = incast.workload[-1]
    assert phase.kind == "incast" and len(phase.senders) in (4, 7, 8)


def test_validate_mixes_ok_and_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("topology: {kind: leaf_spine}\nworkload: [{kind: pingal}]\n")
    assert cli.main(["validate", str(SCENARIOS[0]), str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out.strip().splitlines()[0].endswith("ok (2 variants)")
    assert err.strip() == f"{bad}:2: workload[0].kind: 'pingal' is not one of: pingall, incast, " \
                          "permutation, all_to_all, ring_allreduce, collective, poisson, stream, training"


def test_show_prints_counts_ports_addresses_and_paths(capsys):
    assert cli.main(["show", str(ROOT / "scenarios" / "default.yaml")]) == 0
    out = capsys.readouterr().out
    assert "8 hosts, 6 switches (4 leaf, 2 spine), 16 links (8 host, 8 fabric)" in out
    assert re.search(r"leaf1\s+id 1\s+grpc 9559\s+1:h1:1 2:h2:1 3:spine1:1 4:spine2:1", out)
    assert "h8    10.4.0.2" in out
    assert "h1 -> h8: 2 path(s) of 4 links" in out
    assert "variants (2): load_balancing=ecmp, load_balancing=spray" in out


def test_show_of_a_bad_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("topology: {kind: fat_tree, k: 3}\nworkload: [{kind: pingall}]\n")
    assert cli.main(["show", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:1: topology.k: 3 must be an even integer" in err


def _leaf_fields(schema, prefix=""):
    for key, sub in schema.get("properties", {}).items():
        if key == "kind" and not sub:
            continue
        yield prefix + key
        yield from _leaf_fields(sub, prefix + key + ".")
    for branch in schema.get("allOf", []):
        yield from _leaf_fields(branch.get("then", {}), prefix)
    if isinstance(schema.get("items"), dict):
        yield from _leaf_fields(schema["items"], prefix)


def test_readme_documents_every_field_and_its_examples_validate(tmp_path):
    readme = (ROOT / "scenarios" / "README.md").read_text()
    missing = sorted({f.split(".")[-1] for f in _leaf_fields(SCHEMA)} - set(re.findall(r"`([a-z_]+)`", readme)))
    assert not missing, f"scenarios/README.md does not document: {missing}"
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    assert any("topology:" in b and "workload:" in b for b in blocks), "no complete example"
    for i, block in enumerate(blocks):
        # fragments are completed with the two required sections, then must load
        data = yaml.safe_load(block)
        data.setdefault("topology", {"kind": "leaf_spine"})
        data.setdefault("workload", [{"kind": "pingall"}])
        path = tmp_path / f"example{i}.yaml"
        path.write_text(yaml.safe_dump(data))
        try:
            load_scenario(path)
        except Exception as error:
            pytest.fail(f"README example {i + 1} does not load: {error}")


def test_show_lists_link_names_and_one_variant(capsys):
    path = str(ROOT / "scenarios" / "default.yaml")
    assert cli.main(["show", path, "--variant", "load_balancing=spray"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("variant load_balancing=spray\n") and "fabric: spray_rr_entropy" in out
    assert "links (the names fault targets use):" in out
    assert re.search(r"^  leaf1-spine2 +fabric +leaf1:4 - spine2:1", out, re.M)
    assert cli.main(["show", path, "--variant", "nope"]) == 1
    assert "no variant nope; variants: load_balancing=ecmp, load_balancing=spray" in capsys.readouterr().err


def test_show_keeps_a_large_permutation_readable(tmp_path, capsys):
    path = tmp_path / "k8.yaml"
    path.write_text("name: k8\ntopology: {kind: fat_tree, k: 8}\nworkload:\n  - {kind: permutation, message_bytes: 1000}\n")
    assert cli.main(["show", str(path)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "permutation" in x]
    assert line.endswith("... and 112 more") and len(line) < 400


@pytest.mark.parametrize("backend, level, noted", [("native", "debug", True), ("native", "trace", True),
                                                   ("native", "info", False), ("auto", "debug", False),
                                                   ("python", "debug", False)])
def test_validate_notes_that_native_writes_no_per_packet_log(backend, level, noted, tmp_path, capsys):
    path = tmp_path / "native.yaml"
    path.write_text("name: nat\nduration_s: 3\ntopology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
                    f"switch: {{backend: {backend}, log_level: {level}}}\n"
                    "workload:\n  - {kind: permutation, start_s: 1, message_bytes: 10000}\n")
    assert cli.main(["validate", str(path)]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "per-packet log" in line]
    if noted:
        assert notes == [f"  note: {path}:4: switch.log_level: {level} asks for every packet, but switch.backend "
                         "native writes no per-packet log (only the Python packet path does: backend python or auto)"]
    else:
        assert notes == []
