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
