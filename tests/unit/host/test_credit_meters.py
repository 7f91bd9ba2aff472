"""The switches' credit meters, in the simulator: as the emulated switches have them (control.plan:
the scenario's rate_fraction, burst and queue)."""

from __future__ import annotations

import pytest

from testbed.claims.experiments import incast_text
from testbed.control.plan import credit_rate_pps
from testbed.host import wire
from testbed.scenario import parse_scenario
from testbed.simulation.run import build_network


def _incast(credit_order: str = "fair", credits: str = ""):
    text = incast_text(7, "tita", credit_order=credit_order)
    if credits:
        text = text.replace("cell_size: 1024,", f"cell_size: 1024, credits: {{{credits}}},")
    return parse_scenario(text, "incast7.yaml")


def test_the_simulator_meters_credits_at_the_rate_the_switches_are_given():
    for extra in ("", "rate_fraction: 0.08, burst_credits: 4, queue_credits: 5"):
        scenario = _incast(credits=extra)
        credits = scenario.fabric.credits
        assert credits.rate_fraction == (0.08 if extra else wire.credit_link_share(1024))
        net = build_network(scenario)
        metered = [p for p in net.ports if p.limit]
        assert metered and all(p.name.split("->")[0].startswith(("leaf", "spine")) for p in metered)
        for port in metered:
            # the switches' meter, in whole credits per second (control.plan)
            assert port.credit_rate == pytest.approx(credit_rate_pps(port.spec.rate_bps / 1e6, scenario), abs=1)
            assert (port.credit_burst, port.credit_queue) == (credits.burst_credits, credits.queue_credits)
