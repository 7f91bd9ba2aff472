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


def test_after_every_attempt_behind_real_time_the_test_skips_with_the_last_runs_lateness(tmp_path, monkeypatch,
                                                                                        variant):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([True] * fitting.FIDELITY_ATTEMPTS)
    with pytest.raises(pytest.skip.Exception) as skipped:
        fitting.until_real_time_kept(once, variant, tmp_path / "run", "x")
    assert len(calls) == fitting.FIDELITY_ATTEMPTS
    assert len(fitting.RERUNS) == fitting.FIDELITY_ATTEMPTS - 1
    assert calls[-1][1] == pytest.approx(4 / fitting.MAX_STRETCH)
    reason = str(skipped.value)
    assert f"did not hold real time in {fitting.FIDELITY_ATTEMPTS} runs of x" in reason
    assert "2700.0 us at h6" in reason and "threshold 2000 us" in reason


def test_a_first_run_at_real_time_is_not_repeated(tmp_path, monkeypatch, variant):
    monkeypatch.setattr(fitting, "RERUNS", [])
    once, calls = runs([False])
    assert fitting.until_real_time_kept(once, variant, tmp_path / "run", "x") == (1, tmp_path / "run")
    assert fitting.RERUNS == [] and calls == [(tmp_path / "run", 4)]


@pytest.fixture
def session(tmp_path, monkeypatch):
    """A calibration of this test's own, with nothing measured yet in the session."""
    from testbed.scenario import capacity

    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    monkeypatch.setattr(fitting, "MEASURED", {})
    monkeypatch.setenv("TESTBED_RUNS_DIR", str(tmp_path / "runs"))
    return capacity


def calibration_runs(capacity, outcomes: list[str], agent_us: float = 90.0):
    """A stand-in for the calibration runs: the n-th records the costs a run that kept real time
    records ('kept'), records nothing and kept real time ('few'), or fell behind ('behind')."""
    calls: list[tuple[Path, float]] = []

    def once(at_clock, out_dir: Path):
        outcome = outcomes[len(calls)]
        calls.append((out_dir, at_clock.scenario.links.host.rate_mbps))
        mode = capacity.scenario_mode(at_clock.scenario)
        if outcome == "kept":
            capacity.save_costs(4 * capacity.DEFAULT_SWITCH_US_PER_PACKET[mode], agent_us, "a calibration run",
                                mode, switch_packets=20_000, agent_datagrams=20_000)
        return {"fidelity": {"behind_real_time": outcome == "behind", "threshold_us": 2000.0,
                             "worst_p99_dequeue_lag_us": 100, "worst_p99_pacer_lateness_us": 5000.0},
                "costs": {"agent_cost_unmeasured": "12 agent datagrams are too few"}}

    return once, calls


def test_the_machine_is_measured_once_per_mode_and_its_costs_fit_the_clock(session):
    capacity = session
    (variant,) = expand_variants(parse_scenario(SCENARIO.replace("rate_mbps: 4", "rate_mbps: 100"), "fit.yaml"))
    once, calls = calibration_runs(capacity, ["kept"])
    mode = capacity.scenario_mode(variant.scenario)
    assert fitting.calibrate(variant, once) is None and len(calls) == 1
    assert calls[0][0].parts[-3:] == ("calibration", mode.replace("/", "-"), "run-1")
    assert fitting.calibrate(variant, once) is None and len(calls) == 1      # once per session and mode
    # four times the reference switch cost and twice its agent cost: a slower clock than the reference's
    ours, reference = fitting.fitted(variant), fitting.at_fit(variant, fitting.reference_costs(mode))
    assert ours.scenario.links.host.rate_mbps < reference.scenario.links.host.rate_mbps < 100
    assert ours.scenario.derived.bdp_cells == variant.scenario.derived.bdp_cells
    assert capacity.fitting_rate(variant.scenario) * fitting.FIT_SHARE == pytest.approx(
        ours.scenario.links.host.rate_mbps, rel=1e-3)


def test_a_machine_that_cannot_measure_its_costs_skips_the_fabric_tests_with_the_reason(session, variant):
    once, calls = calibration_runs(session, ["behind", "few", "behind"])
    why = fitting.calibrate(variant, once)
    assert len(calls) == fitting.CALIBRATION_ATTEMPTS
    rates = [rate for _, rate in calls]
    assert rates[1] == pytest.approx(rates[0] / 2) and rates[2] == pytest.approx(rates[0] / 4)
    assert "3 calibration runs" in why and "fell behind real time" in why and "5000.0 us" in why
    with pytest.raises(pytest.skip.Exception) as skipped:
        fitting.fitted(variant)                               # the reason is kept: no run again
    assert why in str(skipped.value) and len(calls) == fitting.CALIBRATION_ATTEMPTS


def test_costs_too_high_for_the_clock_skip_rather_than_crawl(session, variant):
    once, _calls = calibration_runs(session, ["kept"], agent_us=50_000.0)
    assert fitting.calibrate(variant, once) is None
    with pytest.raises(pytest.skip.Exception) as skipped:
        fitting.fitted(variant)
    assert "slower than the reference machine's" in str(skipped.value)


def test_a_fabric_that_fits_as_it_is_at_both_costs_is_not_skipped(session, variant):
    once, _calls = calibration_runs(session, ["kept"], agent_us=60.0)
    assert fitting.calibrate(variant, once) is None
    assert fitting.fitted(variant).scenario.links.host.rate_mbps <= variant.scenario.links.host.rate_mbps
