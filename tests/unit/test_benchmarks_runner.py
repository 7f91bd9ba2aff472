"""`python -m benchmarks`: --help, unknown names and targets missed are answered, not tracebacks."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import benchmarks.__main__ as runner
from benchmarks import targets

REPO = Path(__file__).resolve().parents[2]


def test_help_prints_usage_not_a_traceback():
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: python -m benchmarks") and "switch_bench" in done.stdout
    assert "Traceback" not in done.stderr


def test_an_unknown_benchmark_is_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        runner.parse(["no_such_bench"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "no benchmark no_such_bench" in err and "\n" not in err


def test_a_missed_target_is_said_and_recorded(monkeypatch):
    monkeypatch.setattr(targets, "missed", [])
    assert targets.at_least("x: 36.0%", 0.36, 0.5, "50%") == "x: 36.0% (target >= 50%: MISSED)"
    assert targets.at_least("y: 60.0%", 0.6, 0.5, "50%") == "y: 60.0% (target >= 50%: met)"
    assert targets.missed == ["x: 36.0%"] and targets.exit_code() == 1


@pytest.mark.parametrize("ratio, code", [(0.36, 1), (0.6, 0)])
def test_the_runner_exits_non_zero_when_a_figure_misses_its_target(monkeypatch, capsys, ratio, code):
    monkeypatch.setattr(targets, "missed", [])
    fake = types.ModuleType("benchmarks.fake_bench")
    fake.run = lambda: [targets.at_least(f"ratio {ratio:.0%}", ratio, 0.5, "50%")]
    monkeypatch.setitem(sys.modules, "benchmarks.fake_bench", fake)
    monkeypatch.setattr(runner, "discover", lambda: ["fake_bench"])
    assert runner.main([]) == code
    captured = capsys.readouterr()
    assert ("missed its target" in captured.err) == bool(code)
