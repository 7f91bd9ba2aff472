"""The fabric tests' rerun rule: a run behind real time is set aside, never judged, and never hidden;
its rerun runs the same scenario at a slower clock."""

from pathlib import Path

import pytest

import fitting
from testbed.scenario import expand_variants, parse_scenario

SCENARIO = """
name: fit
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 4, delay_us: 2500}
workload:
  - {kind: incast, start_s: 0.5, receiver: h1, senders: 3, message_bytes: 65536, count: 1}
"""


@pytest.fixture
def variant():
    (v,) = expand_variants(parse_scenario(SCENARIO, "fit.yaml"))
    return v


def runs(verdicts: list[bool], lateness_us: float = 2700.0):
    """A stand-in for a fabric run: the n-th call's summary is behind real time when verdicts[n];
    each call is recorded as (its out_dir, its host link rate)."""
    calls: list[tuple[Path, float]] = []

    def once(at_clock, out_dir: Path):
        behind = verdicts[len(calls)]
        calls.append((out_dir, at_clock.scenario.links.host.rate_mbps))
        fidelity = {"behind_real_time": behind, "threshold_us": 2000.0, "worst_p99_dequeue_lag_us": 100,
                    "switch": "leaf1", "worst_p99_pacer_lateness_us": lateness_us if behind else 500.0,
                    "host": "h6"}
        return (len(calls), out_dir), {"fidelity": fidelity}

    return once, calls


def test_a_run_that_kept_real_time_is_the_one_judged(tmp_path, monkeypatch, variant):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([True, False, False])
    assert fitting.until_real_time_kept(once, variant, tmp_path / "run", "x") == (2, tmp_path / "run-rerun-2")
    assert [d for d, _ in calls] == [tmp_path / "run", tmp_path / "run-rerun-2"]  # each in a directory of its own
    (line,) = fitting.RERUNS
    assert "run 1 (clock stretched 1x) fell behind real time" in line and "2700.0 us at h6" in line


def test_a_rerun_runs_slower_by_what_the_last_run_missed_its_threshold_by(tmp_path, monkeypatch, variant):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([True, True, False], lateness_us=2500.0)  # 1.25x the threshold, 1.5x with the margin
    fitting.until_real_time_kept(once, variant, tmp_path / "run", "x")
    assert [rate for _, rate in calls] == [4, pytest.approx(4 / 1.5), pytest.approx(4 / 2.25)]
    assert "the next at 1.5x" in fitting.RERUNS[0] and "the next at 2.25x" in fitting.RERUNS[1]


def test_a_stretch_keeps_every_ratio_and_is_bounded(variant):
    slower = fitting.stretched(variant, 2.0).scenario
    assert slower.links.host.rate_mbps == 2 and slower.links.host.delay_us == 5000
    assert slower.derived.bdp_cells == variant.scenario.derived.bdp_cells
    fidelity = {"threshold_us": 2000.0, "worst_p99_dequeue_lag_us": 100, "worst_p99_pacer_lateness_us": 2050.0}
    assert fitting.next_stretch(1.0, fidelity) == fitting.STRETCH_STEP[0]  # a near miss still slows enough to tell
    fidelity["worst_p99_pacer_lateness_us"] = 20000.0
    assert fitting.next_stretch(1.0, fidelity) == fitting.STRETCH_STEP[1]
    assert fitting.next_stretch(3.0, fidelity) == fitting.MAX_STRETCH


def test_after_every_attempt_behind_real_time_the_last_is_returned_for_the_test_to_fail_on(tmp_path, monkeypatch,
                                                                                             variant):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([True] * fitting.FIDELITY_ATTEMPTS)
    value, out_dir = fitting.until_real_time_kept(once, variant, tmp_path / "run", "x")
    assert value == fitting.FIDELITY_ATTEMPTS and len(calls) == fitting.FIDELITY_ATTEMPTS
    assert len(fitting.RERUNS) == fitting.FIDELITY_ATTEMPTS - 1
    assert calls[-1][1] == pytest.approx(4 / fitting.MAX_STRETCH)


def test_a_first_run_at_real_time_is_not_repeated(tmp_path, monkeypatch, variant):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([False])
    assert fitting.until_real_time_kept(once, variant, tmp_path / "run", "x") == (1, tmp_path / "run")
    assert fitting.RERUNS == [] and calls == [(tmp_path / "run", 4)]
