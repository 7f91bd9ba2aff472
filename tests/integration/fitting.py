"""Fabric tests run at a clock this machine holds: the capacity check's fit with this machine's own
costs, measured once per test session into the session's calibration (tests/conftest.py gives
each session its own; the user's is never read or written).

The costs: before the first fabric test of a switch mode, a calibration run of a small fabric
(CALIBRATION_SCENARIO) in that mode records what its switches and agents spent per packet
(emulation.costs, as every run does; only a run that kept real time calibrates). Every fabric
test's own run that kept real time adds its figures too, so later tests plan with their own
fabric's. A test's clock is then fitted as `testbed run --fit` fits (capacity.fitting_rate, each
rate scale with its own load's costs), with a margin (FIT_SHARE).

When the machine cannot hold the test, it skips and says why, rather than fail on a number the
CPU made: no calibration run kept real time; this machine's costs fit the fabric more than
MAX_STRETCH times slower than the reference machine's do; or every run of the test fell behind
real time (until_real_time_kept).
"""

import dataclasses
import os
from pathlib import Path
from typing import Callable, TypeVar

import pytest

from testbed.scenario import capacity
from testbed.scenario.timescale import slowed

FIT_SHARE = 0.8  # of the rate the capacity check computes: the tests keep a margin below its edge
# A run whose switches or agents fell behind their schedule (the fidelity verdict) measured the CPU,
# not the fabric: a test judges only a run that kept real time, and runs again (into a fresh
# directory, at a slower clock) when one did not; after this many runs behind real time the test
# skips, naming the last run's lateness. A machine's stall outlasts a rerun at the same clock, so
# a rerun runs slower (docs/measurements.md, "Fabric tests behind real time", has the runs behind
# these rules).
FIDELITY_ATTEMPTS = 5
# A rerun slows the clock (every rate over, every time times the stretch: timescale.slowed, every
# ratio the tests assert kept) by the factor the last run missed its threshold by, with a margin,
# within these bounds: the threshold is one cell time, so it grows with the stretch, while the
# machine's stalls do not.
STRETCH_MARGIN = 1.2
STRETCH_STEP = (1.25, 2.0)
MAX_STRETCH = 4.0
RERUNS: list[str] = []  # one line per run that was set aside, for the session's terminal summary

# The calibration run: the transport tests' leaf-spine (3:1 oversubscribed ToR uplinks), a cross-ToR
# permutation that loads every tier, in the switch mode of the test that asks for it.
CALIBRATION_SCENARIO = """
name: calibration
duration_s: 10
seed: 1
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 3}
links: {rate_mbps: 5, delay_us: 2500, fabric: {rate_mbps: 2.5}}
fabric: {load_balancing: spray, cell_size: 1024}
transport: {cc: tita}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 65536, count: 2, cross_tor: true}
"""
CALIBRATION_ATTEMPTS = 3  # each at twice the last one's stretch
MEASURED: dict[str, str | None] = {}  # switch mode -> None (measured), or why it could not be


def measured(runs: list[dict]) -> bool:
    """Whether these calibration entries hold both a switch and an agent figure."""
    return any(r.get("switch_us_per_packet") for r in runs) and any(r.get("agent_us_per_datagram") for r in runs)


def reference_costs(mode: str) -> "capacity.Costs":
    """The reference machine's costs for switches run in `mode`."""
    return capacity.Costs(capacity.DEFAULT_SWITCH_US_PER_PACKET[mode], mode=mode)


def at_fit(variant, costs=None):
    """The variant at FIT_SHARE of the rate the capacity check fits at `costs` (None: this machine's
    calibration), or the variant itself when it fits as it is."""
    s = variant.scenario
    fits = capacity.fitting_rate(s, costs) * FIT_SHARE
    if fits >= s.links.host.rate_mbps:
        return variant
    return dataclasses.replace(variant, scenario=slowed(s, fits / s.links.host.rate_mbps))


def calibrate(variant, run_once: Callable[[object, Path], dict] | None = None) -> str | None:
    """Measure this machine's costs in `variant`'s switch mode once per session: None when the
    session's calibration has them (measured now or before), else why not. `run_once(variant,
    out_dir) -> summary` runs a fabric (a VariantRun by default)."""
    mode = capacity.scenario_mode(variant.scenario)
    if mode in MEASURED:
        return MEASURED[mode]
    if measured(capacity.recent_runs(mode)):
        MEASURED[mode] = None
        return None
    if run_once is None:
        run_once = _run_variant
    from testbed.scenario import expand_variants, parse_scenario

    (calibration,) = expand_variants(parse_scenario(CALIBRATION_SCENARIO, "calibration.yaml"))
    # the test's switch (target, processes, back end), with the two priority queues tita's credits
    # need: a first test of its mode without credits (one queue) must not make the plan refused
    switch = variant.scenario.switch
    switch = dataclasses.replace(switch, priority_queues=max(2, switch.priority_queues))
    calibration = dataclasses.replace(
        calibration, scenario=dataclasses.replace(calibration.scenario, switch=switch))
    calibration = at_fit(calibration, reference_costs(mode))
    base = Path(os.environ.get("TESTBED_RUNS_DIR") or "runs") / "calibration" / mode.replace("/", "-")
    why = None
    for attempt in range(1, CALIBRATION_ATTEMPTS + 1):
        stretch = 2.0 ** (attempt - 1)
        summary = run_once(stretched(calibration, stretch), base / f"run-{attempt}")
        if measured(capacity.recent_runs(mode)):
            why = None
            break
        fidelity = summary.get("fidelity") or {}
        why = (f"{attempt} calibration runs in switch mode {mode} measured no cost this machine holds: the last, "
               f"at {stretch:g}x the reference machine's fitted clock, "
               + (f"fell behind real time (p99 dequeue lag {fidelity.get('worst_p99_dequeue_lag_us')} us, "
                  f"p99 pacer lateness {fidelity.get('worst_p99_pacer_lateness_us')} us, threshold "
                  f"{fidelity.get('threshold_us')} us)" if fidelity.get("behind_real_time")
                  else f"kept real time but measured too little ({(summary.get('costs') or {})})"))
    MEASURED[mode] = why
    return why


def _run_variant(variant, out_dir: Path) -> dict:
    """A VariantRun's summary, with its result.json's costs (what it measured, or why not)."""
    import json

    from testbed.emulation.run import VariantRun
    from testbed.telemetry.summary import summarize_variant

    root = Path(__file__).resolve().parents[2]
    VariantRun(variant, out_dir, root, progress=lambda m: None).run()
    summary = summarize_variant(out_dir, variant.scenario.topo, variant.scenario)
    costs = json.loads((out_dir / "result.json").read_text()).get("costs") or {}
    return {**summary, "costs": {k: v for k, v in costs.items() if "unmeasured" in k or k == "calibrates"}}


def fitted(variant):
    """The variant at a clock this machine holds, by its own measured costs (rates down, times up,
    every ratio kept); skips the test when the machine cannot measure them or they fit the fabric
    more than MAX_STRETCH times slower than the reference machine's costs do."""
    why = calibrate(variant)
    if why is not None:
        pytest.skip(f"this machine cannot hold the fabric tests' clock: {why}")
    ours, reference = at_fit(variant), at_fit(variant, reference_costs(capacity.scenario_mode(variant.scenario)))
    ours_mbps, reference_mbps = ours.scenario.links.host.rate_mbps, reference.scenario.links.host.rate_mbps
    if ours_mbps * MAX_STRETCH < reference_mbps:
        costs = capacity.CostModel(variant.scenario).at(ours_mbps / variant.scenario.links.host.rate_mbps)
        pytest.skip(f"this machine's measured costs ({costs.line()}) fit {variant.name} at "
                    f"{ours_mbps:.3g} Mbit/s, over {MAX_STRETCH:g}x slower than the reference machine's "
                    f"{reference_mbps:.3g} Mbit/s: too slow a clock for the test to run")
    return ours


T = TypeVar("T")
V = TypeVar("V")


def stretched(variant: V, stretch: float) -> V:
    """The variant with its clock `stretch` times slower (1: the variant itself)."""
    if stretch == 1:
        return variant
    return dataclasses.replace(variant, scenario=slowed(variant.scenario, 1 / stretch))


def next_stretch(stretch: float, fidelity: dict) -> float:
    """The stretch of the rerun after a run at `stretch` fell behind by what `fidelity` says."""
    worst_us = max(fidelity["worst_p99_dequeue_lag_us"] or 0, fidelity["worst_p99_pacer_lateness_us"] or 0)
    low, high = STRETCH_STEP
    step = min(max(STRETCH_MARGIN * worst_us / fidelity["threshold_us"], low), high)
    return round(min(stretch * step, MAX_STRETCH), 3)


def until_real_time_kept(run_once: Callable[[V, Path], tuple[T, dict]], variant: V, base_dir: Path,
                         what: str) -> T:
    """`run_once(variant at a clock, out_dir)` -> (what the test asserts on, the run's summary), run
    until the summary's fidelity says it kept real time, at most FIDELITY_ATTEMPTS times, each rerun
    at a slower clock (next_stretch); returns the value of the run that kept real time, which the
    test judges, and whose variant (the clock it ran at) run_once passes on where the test needs
    it. When none did, the test skips with the last run's lateness.
    The first run writes into base_dir, a rerun into its sibling base_dir-rerun-N (a directory of its
    own, so nothing reads one run's files as another's)."""
    stretch = 1.0

    def directory(attempt: int) -> Path:
        return base_dir if attempt == 1 else base_dir.with_name(f"{base_dir.name}-rerun-{attempt}")

    for attempt in range(1, FIDELITY_ATTEMPTS):
        value, summary = run_once(stretched(variant, stretch), directory(attempt))
        fidelity = summary["fidelity"]
        if not fidelity["behind_real_time"]:
            return value
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        following = next_stretch(stretch, fidelity)
        RERUNS.append(f"{test} ({what}): run {attempt} (clock stretched {stretch:g}x) fell behind real time "
                      f"(threshold {fidelity['threshold_us']:.0f} us; "
                      f"p99 dequeue lag {fidelity['worst_p99_dequeue_lag_us']} us at {fidelity['switch']}, "
                      f"p99 pacer lateness {fidelity['worst_p99_pacer_lateness_us']} us at {fidelity['host']}); "
                      f"the next at {following:g}x")
        stretch = following
    value, summary = run_once(stretched(variant, stretch), directory(FIDELITY_ATTEMPTS))
    fidelity = summary["fidelity"]
    if fidelity["behind_real_time"]:
        pytest.skip(f"this machine did not hold real time in {FIDELITY_ATTEMPTS} runs of {what}, the last at "
                    f"{stretch:g}x the fitted clock (threshold {fidelity['threshold_us']:.0f} us; p99 dequeue lag "
                    f"{fidelity['worst_p99_dequeue_lag_us']} us at {fidelity['switch']}, p99 pacer lateness "
                    f"{fidelity['worst_p99_pacer_lateness_us']} us at {fidelity['host']})")
    return value


def run_fitted(text: str, run_dir):
    """Run a one-variant scenario written as YAML text at a fitted clock, until a run keeps real time:
    (scenario as run, VariantRun result, summary, the run's directory, context for assertion messages)."""
    from testbed.emulation.run import VariantRun
    from testbed.scenario import expand_variants, parse_scenario
    from testbed.telemetry.summary import summarize_variant

    root = Path(__file__).resolve().parents[2]
    run_dir = Path(run_dir)
    (variant,) = expand_variants(parse_scenario(text, f"{run_dir.name}.yaml"))
    variant = fitted(variant)

    def once(at_clock, out_dir: Path):
        result = VariantRun(at_clock, out_dir, root, progress=lambda m: None).run()
        summary = summarize_variant(out_dir, at_clock.scenario.topo)
        context = (f"notes {result.notes}, agents {result.agents}, faults {summary['faults']}, "
                   f"recovery {summary.get('recovery')}, run directory {out_dir}")
        return (at_clock.scenario, result, summary, out_dir, context), summary

    return until_real_time_kept(once, variant, run_dir, run_dir.name)
