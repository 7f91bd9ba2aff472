"""The switches' credit meters, in the simulator and in what one flow is credited.

The simulator meters credits as the emulated switches do (control.plan: the scenario's
rate_fraction, burst and queue), and a flow is credited no faster than those meters pass: above
them its credits only waited in a meter's queue and were dropped once it filled.
"""

from __future__ import annotations

import pytest

from testbed.claims.experiments import incast_text
from testbed.cli import main
from testbed.control.plan import credit_rate_pps
from testbed.simulation import simexp
from testbed.cells import wire
from testbed.host.config import ConfigError
from testbed.scenario import expand_variants, parse_scenario
from testbed.scenario.timescale import slowed
from testbed.simulation.run import build_network, run_variant, simulate, transport_config


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
            assert port.credit_rate == credit_rate_pps(port.spec.rate_bps / 1e6, scenario)
            assert (port.credit_burst, port.credit_queue) == (credits.burst_credits, credits.queue_credits)


def test_one_flow_is_credited_no_faster_than_a_meter_passes():
    scenario = _incast()
    cfg = transport_config(scenario)
    meter = credit_rate_pps(scenario.links.host.rate_mbps, scenario)
    line = cfg.link_rate_bps / 8 / cfg.data_wire_bytes
    assert cfg.max_credit_rate == meter and cfg.max_credit_rate < 0.9 * line
    # at the clocks the emulation is slowed to, in the meters' whole credits per second
    slow = slowed(scenario, 0.2 / scenario.links.host.rate_mbps)
    exact = 0.2e6 * slow.fabric.credits.rate_fraction / (slow.derived.credit_wire_bytes * 8)
    assert transport_config(slow).max_credit_rate == credit_rate_pps(0.2, slow) == 20 < exact
    # without meters (credits off, a server's local channel) a flow may fill the link
    assert cfg.with_(credit_meter_share=None).max_credit_rate == pytest.approx(line)
    local = cfg.for_local_channel(8 * cfg.link_rate_bps, 50e-6)
    assert local.max_credit_rate == pytest.approx(local.link_rate_bps / 8 / local.data_wire_bytes)
    # simexp's networks meter tita's credits with LinkSpec's default, wire.credit_link_share
    assert simexp.config("tita").credit_meter_share == wire.credit_link_share(1024)
    assert simexp.config("dcqcn").credit_meter_share is None
    with pytest.raises(ConfigError, match="credit meter share 1.5 outside"):
        cfg.with_(credit_meter_share=1.5)


def test_srpt_credits_each_sender_within_its_port_meter(tmp_path):
    """srpt credits one sender at a time. At the receiver's line rate (above the sender port's
    meter) its credits filled that meter's queue and 23 were dropped, and the 7:1 incast reached
    0.922 of the link's payload rate; within the meter none is, and the next sender takes the rest
    of the link."""
    scenario = _incast("srpt")
    net, _ = simulate(scenario)
    assert net.finished()
    assert sum(p.stats.credit_drops for p in net.ports) == 0
    (variant,) = expand_variants(scenario)
    run_variant(variant, tmp_path)
    assert simexp.from_run(tmp_path, summary={})["goodput_over_payload_rate"] >= 0.95


@pytest.mark.parametrize("share", ["0", "1", "nan", "a lot"])
def test_a_meter_share_outside_zero_to_one_is_refused_in_one_line(share, capsys):
    with pytest.raises(SystemExit):
        main(["host", "--name", "h1", "--addr", "10.0.0.1", "--peers-file", "p", "--workload-file", "w",
              "--records", "r", "--credit-meter-share", share])
    err = capsys.readouterr().err.strip().splitlines()
    assert f"--credit-meter-share: {share!r} is not a share between 0 and 1" in err[-1]
