"""`testbed validate` refuses, at the line to change, a scenario that cannot run as written."""

from __future__ import annotations

import pytest

from testbed import cli, targets
from testbed.scenario import load_scenario
from testbed.scenario.errors import ScenarioError

BASE = """name: feasible
duration_s: {duration}
topology: {{kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}}
links: {{rate_mbps: 20, delay_us: {delay}}}
{extra}workload:
  - {{kind: incast, receiver: h1, senders: [h2, h3, h4], message_bytes: 4194304, start_s: {start}}}
"""


def write(tmp_path, duration=5, delay=1000, start=0.5, extra=""):
    path = tmp_path / "s.yaml"
    path.write_text(BASE.format(duration=duration, delay=delay, start=start, extra=extra))
    return path


def validate(path, capsys):
    code = cli.main(["validate", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


def test_a_feasible_scenario_is_ok(tmp_path, capsys):
    code, out, err = validate(write(tmp_path, duration=10), capsys)
    assert code == 0 and "ok (1 variant)" in out, err


def test_messages_that_cannot_finish_are_refused_at_their_phase(tmp_path, capsys):
    code, out, err = validate(write(tmp_path, start=4.9), capsys)  # 4 MiB at 20 Mbit/s takes 1.7 s
    assert code == 1 and "\n" not in err
    assert err.startswith(f"{tmp_path / 's.yaml'}:6:") and "cannot finish before duration_s 5 s" in err


def test_a_run_shorter_than_one_round_trip_is_refused(tmp_path, capsys):
    code, out, err = validate(write(tmp_path, duration=1, delay=200_000), capsys)
    assert code == 1 and ":2:" in err and "shorter than one base round trip" in err


def test_a_missing_program_is_refused_at_its_line(tmp_path, capsys):
    code, out, err = validate(write(tmp_path, duration=10, extra="switch: {program: nothere.p4}\n"), capsys)
    assert code == 1 and ":5:" in err and "nothere.p4 does not exist" in err


def test_a_variant_value_listed_twice_is_refused(tmp_path):
    path = write(tmp_path, duration=10, extra="variants: {cc: [tita, dcqcn, tita]}\n")
    with pytest.raises(ScenarioError, match="listed twice") as info:
        load_scenario(str(path))
    assert info.value.line == 5


def test_bmv2_where_none_is_usable_is_refused_at_the_variant(tmp_path, capsys, monkeypatch):
    path = write(tmp_path, duration=10, extra="variants: {target: [builtin, bmv2]}\n")
    monkeypatch.setattr(targets, "bmv2_problem", lambda: "not on PATH: simple_switch_grpc")
    code, out, err = validate(path, capsys)
    assert code == 1 and ":5:" in err and "bmv2, which is not usable here: not on PATH" in err
    monkeypatch.setattr(targets, "bmv2_problem", lambda: None)
    code, out, err = validate(path, capsys)
    assert code == 0, err


def test_sim_exits_non_zero_when_messages_are_left_unfinished(tmp_path, capsys):
    path = tmp_path / "late.yaml"
    path.write_text("""name: late
duration_s: 2
topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
links: {rate_mbps: 20, delay_us: 1000}
workload:
  - {kind: incast, receiver: h1, senders: [h2, h3, h4], message_bytes: 2000000, start_s: 0.1}
""")
    code = cli.main(["sim", str(path), "--runs-dir", str(tmp_path / "runs")])
    captured = capsys.readouterr()
    assert code == 1 and "left unfinished" in captured.err and "report:" in captured.out


def test_a_fabric_too_large_for_memory_says_so_and_the_largest_that_fits(tmp_path, capsys, monkeypatch):
    from testbed.scenario import capacity

    monkeypatch.setattr(capacity, "machine_memory_bytes", lambda: 23 << 30)
    path = tmp_path / "k16.yaml"
    path.write_text("name: k16\ntopology: {kind: fat_tree, k: 16}\nlinks: {rate_mbps: 1}\nworkload:\n"
                    "  - {kind: permutation, message_bytes: 100000}\n")
    code, out, err = validate(path, capsys)
    assert code == 0  # what the machine cannot hold is a note, not a refusal
    note = next(line for line in out.splitlines() if "note:" in line)
    assert "GiB of memory" in note and "memory, not CPU, decides" in note
    assert "the largest that fits is k 10 (125 switches, 250 hosts" in note


def test_fit_says_memory_decides_not_idle_processes(tmp_path, monkeypatch):
    from testbed.emulation.commands import fit_factor
    from testbed.errors import TestbedError
    from testbed.scenario import capacity, expand_variants, load_scenario

    monkeypatch.setattr(capacity, "machine_memory_bytes", lambda: 23 << 30)
    path = tmp_path / "k16.yaml"
    path.write_text("name: k16\ntopology: {kind: fat_tree, k: 16}\nlinks: {rate_mbps: 1}\nworkload:\n"
                    "  - {kind: permutation, message_bytes: 100000}\n")
    (variant,) = expand_variants(load_scenario(str(path)))
    with pytest.raises(TestbedError, match="memory, not CPU, decides; no slower clock helps"):
        fit_factor(variant)
