"""Scenario phases become the messages the agents send."""

from testbed.scenario.workload import scenario_messages
from testbed.scenario import parse_scenario

BASE = """
name: w
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
workload:
"""


def messages(phases: str):
    return scenario_messages(parse_scenario(BASE + phases, "w.yaml"))


def test_pingall_sends_nothing_and_permutation_repeats_per_pair():
    msgs = messages("  - {kind: pingall}\n  - {kind: permutation, message_bytes: 1000, count: 3, start_s: 2}\n")
    flows = {(m.src, m.dst) for m in msgs}
    assert len(flows) == 4 and len(msgs) == 12
    assert all(m.start_us == 2e6 for m in msgs)
    for flow in flows:
        assert sorted(m.msg_id for m in msgs if (m.src, m.dst) == flow) == [0, 1, 2]


def test_ring_iterations_are_chained():
    msgs = messages("  - {kind: ring_allreduce, message_bytes: 4096, count: 2}\n")
    n = 4
    assert len(msgs) == 2 * 2 * (n - 1) * n
    by_key = {(m.src, m.msg_id): m for m in msgs}
    first_of_second = [m for m in msgs if m.msg_id == 2 * (n - 1)]
    # a rank starts iteration 2 once every message of iteration 1 to it has been applied
    for m in first_of_second:
        into = {(x.src, x.msg_id) for x in msgs if x.dst == m.src and x.collective.endswith("#0")}
        assert len(into) == 2 * (n - 1) and into <= set(m.deps)
    assert all(m.size_bytes == 1024 for m in msgs)
    assert {m.collective_kind for m in msgs} == {"all_reduce"} and all(m.op for m in msgs)
    assert len(by_key) == len(msgs)


def test_incast_targets_one_receiver():
    msgs = messages("  - {kind: incast, message_bytes: 2048, senders: 3, receiver: h1}\n")
    assert {m.dst for m in msgs} == {"h1"} and len({m.src for m in msgs}) == 3
