"""`testbed sim` of scenarios with a poisson and a stream phase delivers and acknowledges every
message they make, each started at its planned start (not before, and not at a later wake-up)."""

import pytest

from testbed.scenario.workload import scenario_messages
from testbed.scenario import parse_scenario
from testbed.simulation.run import simulate

SCENARIO = """
name: sim-phases
duration_s: 30
topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
links: {rate_mbps: 20, delay_us: 1000}
fabric: {load_balancing: spray}
transport: {cc: %s}
workload:
  - %s
"""
PHASES = {
    "poisson": "{kind: poisson, start_s: 0.2, load: 0.3, message_bytes: 16384, arrivals_s: 0.5}",
    "stream": "{kind: stream, start_s: 0.1, receiver: h1, senders: 2, count: 12, interval_s: 0.01}",
}


@pytest.mark.parametrize("cc", ["tita", "none"])
@pytest.mark.parametrize("kind", sorted(PHASES))
def test_sim_delivers_every_message(kind, cc):
    scenario = parse_scenario(SCENARIO % (cc, PHASES[kind]), "sim-phases.yaml")
    messages = scenario_messages(scenario)
    assert len(messages) >= 12
    net, info = simulate(scenario, messages)
    assert info["finished"], info
    delivered = {(r["src"], r["dst"], r["msg_id"]): r for r in net.records() if r["kind"] == "message_delivered"}
    assert set(delivered) == {(m.src, m.dst, m.msg_id) for m in messages}
    assert all(r["verified"] for r in delivered.values())
    sent = {(r["src"], r["dst"], r["msg_id"]): r for r in net.records() if r["kind"] == "message_sent"}
    assert set(sent) == set(delivered)  # every message acknowledged too
    assert all(sent[(m.src, m.dst, m.msg_id)]["first_tx_us"] >= m.start_us - 1 for m in messages)
    # the runner starts each message at its own wake-up: 4.06 s * 1e6 is below 4060000.0 us, and
    # such a message once waited for the next message's start (simulator, a stream every 30 ms)
    assert all(abs(sent[(m.src, m.dst, m.msg_id)]["start_us"] - m.start_us) < 1 for m in messages)


def test_a_message_whose_start_does_not_round_trip_through_seconds_starts_on_time():
    phase = "{kind: stream, start_s: 3.1, receiver: h1, senders: [h2], count: 40, interval_s: 0.03}"
    scenario = parse_scenario(SCENARIO % ("tita", phase), "sim-phases.yaml")
    messages = scenario_messages(scenario)
    assert any(m.start_us / 1e6 * 1e6 < m.start_us for m in messages)  # the case: 4.06 * 1e6 < 4060000
    net, info = simulate(scenario, messages)
    assert info["finished"], info
    starts = {r["msg_id"]: r["start_us"] for r in net.records() if r["kind"] == "message_sent"}
    assert all(abs(starts[m.msg_id] - m.start_us) < 1 for m in messages)
