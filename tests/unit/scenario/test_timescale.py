"""A slowed scenario keeps every ratio and stretches every time."""

import pytest

from testbed.scenario import capacity, parse_scenario
from testbed.scenario.timescale import slowed

SCENARIO = """
duration_s: 20
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: 10, delay_us: 400, fabric: {rate_mbps: 5}}
transport: {cc: dcqcn}
workload:
  - {kind: pingall}
  - {kind: permutation, start_s: 2, message_bytes: 65536}
faults:
  - {at_s: 5, kind: link_down, target: agg1_1-core1}
"""


def test_rates_down_times_up_ratios_kept():
    s = parse_scenario(SCENARIO, "s.yaml")
    slow = slowed(s, 0.25)
    assert (slow.links.host.rate_mbps, slow.links.fabric.rate_mbps) == (2.5, 1.25)
    assert (slow.links.host.delay_us, slow.links.fabric.delay_us) == (1600, 1600)
    assert slow.duration_s == 80 and slow.workload[1].start_s == 8 and slow.faults[0].at_s == 20
    assert slow.derived.base_rtt_us == pytest.approx(4 * s.derived.base_rtt_us)
    # the same experiment, resolved from scratch at the slow rates, has the same derived ratios
    again = parse_scenario(SCENARIO.replace("rate_mbps: 10, delay_us: 400, fabric: {rate_mbps: 5}",
                                            "rate_mbps: 2.5, delay_us: 1600, fabric: {rate_mbps: 1.25}"), "s.yaml")
    assert again.derived == slow.derived
    assert (again.fabric, again.transport, again.links) == (slow.fabric, slow.transport, slow.links)
    with pytest.raises(ValueError):
        slowed(s, 1.5)


def test_a_slowed_scenario_fits_where_the_original_did_not():
    s = parse_scenario(SCENARIO, "s.yaml")
    costs = capacity.Costs(100.0, 80.0, "test")
    with pytest.raises(capacity.CapacityError, match="--fit"):
        capacity.check(s, costs, cores=2)
    fits = capacity.fitting_rate(s, costs, cores=2)
    assert capacity.check(slowed(s, 0.9 * fits / s.links.host.rate_mbps), costs, cores=2)


def test_the_local_gpu_channel_is_slowed_with_the_fabric():
    s = parse_scenario("""
topology: {kind: leaf_spine, hosts_per_leaf: 2, gpus_per_server: 2}
links: {rate_mbps: 10, delay_us: 400, local: {rate_mbps: 80, delay_us: 40}}
workload: [{kind: collective}]
""", "g.yaml")
    slow = slowed(s, 0.25)
    assert (slow.links.local.rate_mbps, slow.links.local.delay_us) == (20, 160)
    assert slowed(parse_scenario(SCENARIO, "s.yaml"), 0.5).links.local is None


def test_poisson_and_stream_send_the_same_messages_at_their_times_over_f():
    from testbed.scenario.workload import phase_messages

    s = parse_scenario("""
duration_s: 10
topology: {kind: leaf_spine}
workload:
  - {kind: poisson, start_s: 1, load: 0.5, arrivals_s: 2}
  - {kind: stream, start_s: 4, receiver: h1, senders: 3, count: 20, interval_s: 0.05}
""", "p.yaml")
    slow = slowed(s, 0.25)
    poisson, stream = slow.workload
    assert (poisson.arrivals_s, poisson.link_rate_bps, stream.interval_s) == (8, 5e6, 0.2)
    assert poisson.load == 0.5 and poisson.message_wire_bytes == s.workload[0].message_wire_bytes
    for fast, slow_phase in zip(s.workload, slow.workload):
        before, after = phase_messages(fast, s.seed), phase_messages(slow_phase, s.seed)
        assert len(before) > 10
        assert [(m.src, m.dst, m.msg_id) for m in after] == [(m.src, m.dst, m.msg_id) for m in before]
        assert [m.start_us for m in after] == pytest.approx([4 * m.start_us for m in before])
