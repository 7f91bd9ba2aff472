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
# directory) when one did not; after this many runs behind real time it fails on the last one.
# CI on the 2-core machine failed on such a run on 2026-12-02 (test_incast_4_to_1_tita[per-switch]:
# h6's p99 pacer lateness 2.69 ms against a 2.02 ms cell time; three runs of it here the same day
# measured 0.25-1.5 ms at every host). On 2026-12-03 the machine's hypervisor took 4-15% of the CPU
# (vmstat's steal) and CI had 7 tests whose three runs all lost real time, the old code alike
# (test_short_messages_among_long_flows_finish_sooner_with_tita: 2 of 3 modes at cace117 and after).
FIDELITY_ATTEMPTS = 5
RERUNS: list[str] = []  # one line per run that was set aside, for the session's terminal summary

T = TypeVar("T")


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


def until_real_time_kept(run_once: Callable[[Path], tuple[T, dict]], base_dir: Path, what: str) -> T:
    """`run_once(out_dir)` -> (what the test asserts on, the run's summary), run until the summary's
    fidelity says it kept real time, at most FIDELITY_ATTEMPTS times; returns the last run's value.
    The first run writes into base_dir, a rerun into its sibling base_dir-rerun-N (a directory of its
    own, so nothing reads one run's files as another's)."""
    for attempt in range(1, FIDELITY_ATTEMPTS):
        value, summary = run_once(base_dir if attempt == 1 else base_dir.with_name(f"{base_dir.name}-rerun-{attempt}"))
        fidelity = summary["fidelity"]
        if not fidelity["behind_real_time"]:
            return value
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        RERUNS.append(f"{test} ({what}): run {attempt} fell behind real time (threshold {fidelity['threshold_us']:.0f} us; "
                      f"p99 dequeue lag {fidelity['worst_p99_dequeue_lag_us']} us at {fidelity['switch']}, "
                      f"p99 pacer lateness {fidelity['worst_p99_pacer_lateness_us']} us at {fidelity['host']})")
    value, _ = run_once(base_dir.with_name(f"{base_dir.name}-rerun-{FIDELITY_ATTEMPTS}"))
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

    def once(out_dir: Path):
        result = VariantRun(variant, out_dir, root, progress=lambda m: None).run()
        summary = summarize_variant(out_dir, variant.scenario.topo)
        context = (f"notes {result.notes}, agents {result.agents}, faults {summary['faults']}, "
                   f"recovery {summary.get('recovery')}, run directory {out_dir}")
        return (variant.scenario, result, summary, out_dir, context), summary

    return until_real_time_kept(once, run_dir, run_dir.name)
