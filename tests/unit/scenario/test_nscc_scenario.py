"""`cc: nscc` in a scenario: accepted, defaulted from UEC's htsim model, handed to the agents'
transport and printed in the report in absolute units."""

import pytest

from testbed.scenario import ScenarioError, expand_variants, parse_scenario
from testbed.simulation.run import transport_config
from testbed.telemetry.report import nscc_parameters

BASE = """\
topology: {kind: leaf_spine}
links: {rate_mbps: 5, delay_us: 2500}
workload: [{kind: incast, receiver: h1}]
"""


def test_nscc_defaults_follow_reference_and_mark_ecn():
    s = parse_scenario(BASE + "transport: {cc: nscc}\n")
    n = s.transport.nscc
    assert (n.target_qdelay_rtt, n.max_wnd_bdp, n.md_gain, n.md_floor, n.delay_ewma, n.quick_adapt_x_target) == \
        (1.0, 1.5, 0.8, 0.5, 0.0125, 4.0)
    assert s.fabric.ecn.mode == "red"  # NSCC's second signal
    assert not s.fabric.credits.enabled and s.switch.priority_queues == 1
    cfg = transport_config(s)
    assert cfg.cc == "nscc" and cfg.nscc.max_wnd_bdp == 1.5


def test_nscc_fields_reach_the_transport_and_the_report():
    s = parse_scenario(BASE + "transport: {cc: nscc, nscc: {target_qdelay_rtt: 0.75, max_wnd_bdp: 2}}\n")
    cfg = transport_config(s)
    assert cfg.nscc.target_qdelay_rtt == 0.75 and cfg.nscc.max_wnd_bdp == 2.0 and cfg.nscc.md_floor == 0.5
    text = nscc_parameters(s.to_dict())
    rtt_ms = s.derived.base_rtt_us / 1e3
    assert f"target queueing delay {0.75 * rtt_ms:.1f} ms" in text
    assert f"maxwnd {2 * s.derived.bdp_cells:.1f} cells" in text
    assert "max(1 - 0.8 (avg - target)/avg, 0.5)" in text and "EWMA 0.0125" in text
    assert nscc_parameters(parse_scenario(BASE).to_dict()) is None


def test_nscc_is_a_variant_value_and_bad_fields_are_refused():
    s = parse_scenario(BASE + "variants:\n  cc: [tita, nscc]\n")
    assert [v.scenario.transport.cc for v in expand_variants(s)] == ["tita", "nscc"]
    with pytest.raises(ScenarioError):
        parse_scenario(BASE + "transport: {cc: nscc, nscc: {md_floor: 1.5}}\n")
    with pytest.raises(ScenarioError):
        parse_scenario(BASE + "transport: {cc: nscc, nscc: {window: 3}}\n")
