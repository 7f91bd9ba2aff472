"""Fabric tests run at a clock the machine holds (the capacity check's reference costs)."""

import dataclasses

from testbed.scenario import capacity
from testbed.scenario.timescale import slowed

FIT_SHARE = 0.8  # of the rate the capacity check computes: the tests keep a margin below its edge


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


def run_fitted(text: str, run_dir):
    """Run a one-variant scenario written as YAML text at a fitted clock:
    (scenario as run, VariantRun result, summary, context line for assertion messages)."""
    from pathlib import Path

    from testbed.emulation.run import VariantRun
    from testbed.scenario import expand_variants, parse_scenario
    from testbed.telemetry.summary import summarize_variant

    root = Path(__file__).resolve().parents[2]
    (variant,) = expand_variants(parse_scenario(text, f"{Path(run_dir).name}.yaml"))
    variant = fitted(variant)
    result = VariantRun(variant, run_dir, root, progress=lambda m: None).run()
    summary = summarize_variant(run_dir, variant.scenario.topo)
    context = (f"notes {result.notes}, agents {result.agents}, faults {summary['faults']}, "
               f"recovery {summary.get('recovery')}")
    return variant.scenario, result, summary, context
