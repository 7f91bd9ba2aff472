"""`testbed run --fit` slows every variant of a scenario by one factor, so they share their links."""

from pathlib import Path

from testbed.emulation import commands
from testbed.scenario import expand_variants, load_scenario

ROOT = Path(__file__).resolve().parents[3]


def test_every_variant_takes_the_factor_of_the_most_demanding_one(monkeypatch):
    variants = expand_variants(load_scenario(ROOT / "scenarios" / "incast.yaml"))
    assert len(variants) == 4
    # the credit variant needs little (the receiver paces), the others a quarter of the rate
    needs = {"cc=tita": 0.8, "cc=dcqcn": 0.25, "cc=nscc": 0.3, "cc=none": 0.3}
    monkeypatch.setattr(commands, "fit_factor", lambda v: needs[v.name])
    slowed = commands.fitted_together(variants)
    rates = {v.name: v.scenario.links.host.rate_mbps for v in slowed}
    assert rates == {name: variants[0].scenario.links.host.rate_mbps * 0.25 for name in needs}
    assert len({v.scenario.derived.base_rtt_us for v in slowed}) == 1
    assert all(v.scenario.derived.bdp_cells == variants[0].scenario.derived.bdp_cells for v in slowed)


def test_variants_that_fit_are_left_as_written(monkeypatch):
    variants = expand_variants(load_scenario(ROOT / "scenarios" / "incast.yaml"))
    monkeypatch.setattr(commands, "fit_factor", lambda v: 1.0)
    assert commands.fitted_together(variants) == variants
