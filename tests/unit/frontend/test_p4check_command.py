"""`testbed p4check A B C` checks each program: one line per bad one, the rest still checked; a
program without main is an error there, while `testbed p4info` warns as p4c does."""

from __future__ import annotations

from pathlib import Path

from testbed.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_each_program_is_checked_and_each_error_is_one_line(tmp_path, capsys):
    nomain = tmp_path / "nomain.p4"
    nomain.write_text("control c() { apply {} }\n")
    basic = ROOT / "p4src" / "basic.p4"
    assert main(["p4check", str(nomain), str(basic), str(tmp_path / "nothere.p4")]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [f"{basic}: ok"]
    errors = captured.err.strip().splitlines()
    assert len(errors) == 2 and "no 'main' package instance" in errors[0] and "nothere.p4" in errors[1]
    assert main(["p4info", str(nomain)]) == 0
    assert "p4check refuses such a program" in capsys.readouterr().err
