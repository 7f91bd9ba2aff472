"""Fabric tests run at a clock the machine holds (the capacity check's reference costs)."""

import dataclasses
import os
from pathlib import Path
from typing import Callable, TypeVar

from testbed.scenario import capacity
from testbed.scenario.timescale import slowed

FIT_SHARE = 0.8  # of the rate the capacity check computes: the tests keep a margin below its edge
# A run whose switches or agents fell behind their schedule (the fidelity verdict) measured the CPU,
# not the fabric: a test judges only a run that kept real time, and runs again (into a fresh
# directory, at a slower clock) when one did not; after this many runs behind real time it fails on
# the last one. A machine's stall outlasts a rerun at the same clock, so a rerun runs slower
# (docs/measurements.md, "Fabric tests behind real time", has the runs behind these rules).
FIDELITY_ATTEMPTS = 5
# A rerun slows the clock (every rate over, every time times the stretch: timescale.slowed, every
# ratio the tests assert kept) by the factor the last run missed its threshold by, with a margin,
# within these bounds: the threshold is one cell time, so it grows with the stretch, while the
# machine's stalls do not.
STRETCH_MARGIN = 1.2
STRETCH_STEP = (1.25, 2.0)
MAX_STRETCH = 4.0
RERUNS: list[str] = []  # one line per run that was set aside, for the session's terminal summary

T = TypeVar("T")
V = TypeVar("V")


def fitted(variant):
    """The variant at a clock this machine holds (the reference costs, so every machine of the
    project's size runs the same test): rates down, times up, every ratio kept."""
    s = variant.scenario
    mode = capacity.scenario_mode(s)
    reference = capacity.Costs(capacity.DEFAULT_SWITCH_US_PER_PACKET[mode], mode=mode)
    fits = capacity.fitting_rate(s, reference) * FIT_SHARE
    if fits >= s.links.host.rate_mbps:
        return variant
    return dataclasses.replace(variant, scenario=slowed(s, fits / s.links.host.rate_mbps))


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
    at a slower clock (next_stretch); returns the last run's value, which the test judges, and whose
    variant (the clock it ran at) run_once passes on where the test needs it.
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
    value, _ = run_once(stretched(variant, stretch), directory(FIDELITY_ATTEMPTS))
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
