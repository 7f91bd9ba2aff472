"""The messages of poisson and stream phases: workloads.poisson's arrivals moved to the phase's
start, and a stream's senders in turn at exact times (the claims experiments' workloads)."""

from collections import Counter

import pytest

from testbed.scenario.workload import phase_messages, scenario_messages
from testbed.host import workloads
from testbed.scenario import parse_scenario

BASE = """
name: w
duration_s: {duration}
seed: 3
topology: {{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2}}
links: {{rate_mbps: 5, delay_us: 2500}}
fabric: {{cell_size: 512}}
workload:
"""


def scenario(phases: str, duration: float = 10):
    return parse_scenario(BASE.format(duration=duration) + phases, "w.yaml")


def test_poisson_is_workloads_poisson_shifted_by_start():
    s = scenario("  - {kind: pingall}\n  - {kind: poisson, load: 0.6, start_s: 2, arrivals_s: 4, hosts: [h1, h3, h5, h7]}\n")
    phase = s.workload[1]
    direct = workloads.poisson(["h1", "h3", "h5", "h7"], 0.6, 5e6, 65536, 129 * 578, 4.0, "poisson:3:1",
                               name="2-poisson")
    got = phase_messages(phase, s.seed)
    assert len(got) > 20
    assert [(m.src, m.dst, m.msg_id, m.size_bytes, m.collective, m.collective_kind) for m in got] == \
        [(m.src, m.dst, m.msg_id, m.size_bytes, "2-poisson", "poisson") for m in direct]
    assert [m.start_us for m in got] == pytest.approx([m.start_us + 2e6 for m in direct], abs=1e-6)
    assert all(2e6 <= m.start_us < 6e6 for m in got)
    assert {m.src for m in got} == {m.dst for m in got} == {"h1", "h3", "h5", "h7"}
    assert all(m.src != m.dst for m in got)
    assert scenario_messages(s) == got  # the only phase with messages: msg_ids stay as they are


def test_poisson_arrivals_follow_the_seed_and_the_phase_index():
    one = scenario("  - {kind: poisson, load: 0.5}\n").workload[0]
    moved = scenario("  - {kind: pingall}\n  - {kind: poisson, load: 0.5}\n").workload[1]
    starts = [m.start_us for m in phase_messages(one, 3)]
    assert starts == [m.start_us for m in phase_messages(one, 3)]  # a pure function of the phase
    assert starts != [m.start_us for m in phase_messages(moved, 3)]


def test_poisson_offers_its_load_of_the_link_rate():
    arrivals_s, load = 2000.0, 0.5
    (phase,) = scenario(f"  - {{kind: poisson, load: {load}, arrivals_s: {arrivals_s:g}}}\n", duration=3000).workload
    msgs = phase_messages(phase, 3)
    per_host = Counter(m.src for m in msgs)
    assert len(per_host) == 8
    offered = {h: n * phase.message_wire_bytes * 8 / (arrivals_s * 5e6) for h, n in per_host.items()}
    # ~8400 arrivals per host: one standard deviation is ~1.1% of the load, of all hosts ~0.4%
    assert all(abs(o - load) < 0.05 * load for o in offered.values()), offered
    assert abs(sum(offered.values()) / 8 - load) < 0.02 * load
    per_flow = Counter((m.src, m.dst) for m in msgs)
    assert len(per_flow) == 56 and min(per_flow.values()) > 0.8 * max(per_flow.values())


def test_stream_senders_take_turns_at_exact_times():
    (phase,) = scenario("  - {kind: stream, start_s: 1.5, receiver: h2, senders: [h5, h7, h3], count: 7,"
                        " interval_s: 0.25, message_bytes: 3000}\n").workload
    msgs = phase_messages(phase, 3)
    assert [m.src for m in msgs] == ["h5", "h7", "h3", "h5", "h7", "h3", "h5"]
    assert [m.start_us for m in msgs] == pytest.approx([1.5e6 + k * 0.25e6 for k in range(7)], abs=1e-6)
    assert [m.msg_id for m in msgs] == [0, 0, 0, 1, 1, 1, 2]
    assert {(m.dst, m.size_bytes, m.collective, m.collective_kind) for m in msgs} == {(
        "h2", 3000, "1-stream", "stream")}


def test_stream_is_the_short_messages_of_the_claims_mixed_experiment():
    """testbed/claims/experiments.py's _run_mixed: 60 x 8 KiB from h6, h7, h8 in turn into h1,
    30 ms apart from 0.1 s, beside 512 KiB incast flows from h2..h5."""
    s = scenario("  - {kind: incast, receiver: h1, senders: [h2, h3, h4, h5], message_bytes: 524288}\n"
                 "  - {kind: stream, start_s: 0.1, receiver: h1, senders: [h6, h7, h8]}\n")
    mixed = [workloads.MessageSpec(["h6", "h7", "h8"][k % 3], "h1", k // 3, 8 * 1024, start_us=(0.1 + k * 0.03) * 1e6)
             for k in range(60)]
    shorts = [m for m in scenario_messages(s) if m.collective_kind == "stream"]
    assert [(m.src, m.dst, m.msg_id, m.size_bytes) for m in shorts] == \
        [(m.src, m.dst, m.msg_id, m.size_bytes) for m in mixed]
    assert [m.start_us for m in shorts] == pytest.approx([m.start_us for m in mixed], abs=1e-3)


def test_stream_after_an_incast_from_the_same_sender_continues_its_msg_ids():
    s = scenario("  - {kind: incast, receiver: h1, senders: [h3], count: 2}\n"
                 "  - {kind: stream, start_s: 1, receiver: h1, senders: [h3, h4], count: 4}\n")
    stream = [m for m in scenario_messages(s) if m.collective_kind == "stream"]
    assert [(m.src, m.msg_id) for m in stream] == [("h3", 2), ("h4", 0), ("h3", 3), ("h4", 1)]
