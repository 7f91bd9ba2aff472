"""poisson and stream phases resolve with their defaults and what their messages need, and
testbed show and the capacity check describe them."""

import pytest

from testbed.scenario import ScenarioError, parse_scenario
from testbed.scenario.capacity import _busy_hosts
from testbed.scenario.commands import summary

BASE = """
name: phases
duration_s: 10
seed: 7
topology: {kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 5, delay_us: 2500}
fabric: {cell_size: 512}
workload:
"""


def phases(text: str):
    return parse_scenario(BASE + text, "phases.yaml").workload


def test_poisson_defaults_and_resolved_rate_wire_bytes_and_seed():
    pingall, poisson = phases("  - {kind: pingall}\n  - {kind: poisson, load: 0.4, start_s: 1.5}\n")
    assert (poisson.kind, poisson.name, poisson.start_s, poisson.load) == ("poisson", "2-poisson", 1.5, 0.4)
    assert poisson.hosts == tuple(f"h{i}" for i in range(1, 9))
    assert (poisson.message_bytes, poisson.arrivals_s) == (65536, 3.0)
    assert poisson.link_rate_bps == 5e6
    # 65536 B + the 4-byte trailer in 512-byte cells: 129 cells of 512 + 66 bytes on the wire
    assert poisson.message_wire_bytes == 129 * 578
    assert poisson.arrivals_seed == "poisson:7:1"  # scenario seed 7, second phase
    assert poisson.count == 0 and poisson.senders == () and poisson.interval_s is None


def test_poisson_fields_as_given():
    (phase,) = phases("  - {kind: poisson, name: sweep, load: 1, message_bytes: 1000, arrivals_s: 9,"
                      " hosts: [h1, h8]}\n")
    assert (phase.name, phase.load, phase.message_bytes, phase.arrivals_s) == ("sweep", 1.0, 1000, 9.0)
    assert phase.hosts == ("h1", "h8") and phase.message_wire_bytes == 2 * 578


def test_stream_defaults_pick_remote_senders_first():
    (phase,) = phases("  - {kind: stream, senders: 3, receiver: h2}\n")
    assert (phase.message_bytes, phase.count, phase.interval_s) == (8192, 60, 0.03)
    assert phase.receiver == "h2"
    assert phase.senders == ("h3", "h4", "h5")  # h1 shares h2's leaf: it comes last
    assert phase.load is None and phase.arrivals_seed is None


def test_stream_senders_as_listed_and_every_other_host_by_default():
    listed, every = phases("  - {kind: stream, receiver: h1, senders: [h8, h6, h7], count: 5, interval_s: 0.5}\n"
                           "  - {kind: stream}\n")
    assert listed.senders == ("h8", "h6", "h7") and (listed.count, listed.interval_s) == (5, 0.5)
    assert every.receiver == "h1" and sorted(every.senders) == sorted(f"h{i}" for i in range(2, 9))


def test_stream_may_end_just_before_the_run_does():
    (phase,) = phases("  - {kind: stream, start_s: 9, count: 10, interval_s: 0.1}\n")  # last at 9.9 s
    assert phase.count == 10
    with pytest.raises(ScenarioError, match=r"phases.yaml:9: workload\[0\].count: the last of 11 messages"):
        phases("  - {kind: stream, start_s: 9, count: 11, interval_s: 0.1}\n")  # last at 10 s


@pytest.mark.parametrize("line, message", [
    ("{kind: poisson, load: 0.5, arrivals_s: 11}", "workload[0].arrivals_s: 11 s of arrivals from 0 s end after"),
    ("{kind: poisson, load: 0.5, start_s: 8}", "workload[0].start_s: 3 s of arrivals from 8 s end after"),
    ("{kind: poisson, load: 0.5, hosts: [h1, h9]}", "workload[0].hosts[1]: 'h9' is not a host"),
    ("{kind: stream, receiver: h9}", "workload[0].receiver: 'h9' is not a host"),
    ("{kind: stream, senders: [h2, h1]}", "workload[0].senders[1]: 'h1' is the receiver"),
    ("{kind: stream, zipf_s: 1}", "unknown key 'zipf_s' in workload[0] (stream)"),
])
def test_bad_phases_name_the_line_and_the_problem(line, message):
    with pytest.raises(ScenarioError) as caught:
        phases(f"  - {line}\n")
    assert str(caught.value).startswith(f"phases.yaml:9: {message}")
    assert "\n" not in str(caught.value)


def test_show_describes_both_kinds():
    scenario = parse_scenario(BASE + "  - {kind: poisson, load: 0.25}\n"
                              "  - {kind: stream, receiver: h1, senders: [h7, h8], start_s: 4}\n", "phases.yaml")
    text = summary(scenario)
    assert ("at 0 s 1-poisson: 8 hosts, 65536 B messages, Poisson arrivals for 3 s at 0.25 of 5 Mbit/s "
            "per host (seed poisson:7:0)") in text
    assert "at 4 s 2-stream: 8 hosts, 60 x 8192 B every 30 ms, from h7 h8 in turn into h1" in text


def test_capacity_counts_every_poisson_host_and_the_stream_senders():
    poisson, stream = phases("  - {kind: poisson, load: 0.1, hosts: [h1, h2, h3]}\n"
                             "  - {kind: stream, receiver: h1, senders: [h5, h6, h7, h8]}\n")
    assert _busy_hosts(poisson, paced=False) == _busy_hosts(poisson, paced=True) == 3
    assert _busy_hosts(stream, paced=False) == 4
    assert _busy_hosts(stream, paced=True) == 1  # the receiver's link paces them all


def test_a_load_sweep_is_a_variant_axis_and_cell_size_changes_the_wire_bytes():
    from testbed.scenario import expand_variants

    scenario = parse_scenario(BASE + "  - {kind: poisson, load: 0.1}\nvariants:\n"
                              "  workload.0.load: [0.1, 0.5, 1.0]\n  cell_size: [512, 1024]\n", "phases.yaml")
    got = {(v.scenario.workload[0].load, v.scenario.workload[0].message_wire_bytes)
           for v in expand_variants(scenario)}
    assert got == {(load, wire) for load in (0.1, 0.5, 1.0) for wire in (129 * 578, 65 * 1090)}
