"""The fabric tests' rerun rule: a run behind real time is set aside, never judged, and never hidden."""

from pathlib import Path

import fitting


def runs(verdicts: list[bool]):
    """A stand-in for a fabric run: the n-th call's summary is behind real time when verdicts[n]."""
    calls: list[Path] = []

    def once(out_dir: Path):
        behind = verdicts[len(calls)]
        calls.append(out_dir)
        fidelity = {"behind_real_time": behind, "threshold_us": 2000.0, "worst_p99_dequeue_lag_us": 100,
                    "switch": "leaf1", "worst_p99_pacer_lateness_us": 2700.0 if behind else 500.0, "host": "h6"}
        return (len(calls), out_dir), {"fidelity": fidelity}

    return once, calls


def test_a_run_that_kept_real_time_is_the_one_judged(tmp_path, monkeypatch):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([True, False, False])
    assert fitting.until_real_time_kept(once, tmp_path / "run", "x") == (2, tmp_path / "run-rerun-2")
    assert calls == [tmp_path / "run", tmp_path / "run-rerun-2"]  # each run in a directory of its own
    (line,) = fitting.RERUNS
    assert "run 1 fell behind real time" in line and "2700.0 us at h6" in line


def test_after_every_attempt_behind_real_time_the_last_is_returned_for_the_test_to_fail_on(tmp_path, monkeypatch):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([True] * fitting.FIDELITY_ATTEMPTS)
    value, out_dir = fitting.until_real_time_kept(once, tmp_path / "run", "x")
    assert value == fitting.FIDELITY_ATTEMPTS and len(calls) == fitting.FIDELITY_ATTEMPTS
    assert len(fitting.RERUNS) == fitting.FIDELITY_ATTEMPTS - 1


def test_a_first_run_at_real_time_is_not_repeated(tmp_path, monkeypatch):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([False])
    assert fitting.until_real_time_kept(once, tmp_path / "run", "x") == (1, tmp_path / "run")
    assert fitting.RERUNS == []
