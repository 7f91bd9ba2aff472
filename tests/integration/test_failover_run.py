"""A dual-homed host's ToR cable cut mid-transfer: both NIC ports carried traffic before,
the host leaves the dead port within a few RTTs, the controller moves the fabric's routes
to the host's other ToR, the surviving cable carries everything afterwards, throughput is
back within 3 RTO floors, and no message is lost: every one is delivered byte for byte."""

from __future__ import annotations

import json

import pytest

from fitting import run_fitted  # noqa: E402 (tests/integration is on sys.path)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO = """
name: failover
duration_s: 12
topology: {kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 1, dual_homed: true}
links: {rate_mbps: 2, delay_us: 500}
switch: {target: builtin}
fabric: {load_balancing: spray}
transport: {cc: CC}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 1048576, count: 1, cross_tor: true}
faults:
  - {at_s: 1.5, kind: link_down, target: h1-leaf1}
"""


@pytest.mark.parametrize("cc,lb", [("tita", "spray"), ("dcqcn", "spray"), ("dcqcn", "ecmp")])
def test_a_cut_host_link_fails_over_to_the_other_port_without_loss(tmp_path, registry, cc, lb):
    """Spraying: each cell's port is its entropy's nic digit; ECMP: each flow keeps one port, so
    the cut moves h1's flow whole (h1 has one flow: then only the surviving port ever sends)."""
    text = SCENARIO.replace("CC", cc).replace("load_balancing: spray", f"load_balancing: {lb}")
    run_dir = tmp_path / "failover"
    scenario, result, summary, run_dir, context = run_fitted(text, run_dir)
    assert all(code == 0 for code in result.agents.values()), context
    assert summary["messages_planned"] == summary["messages_completed"] == 2, context
    assert summary["messages_delivered_verified"] == 2, context
    assert not summary["fidelity"]["behind_real_time"], summary["fidelity"]

    (cut,) = summary["recovery"]
    rtt_ms = scenario.derived.base_rtt_us / 1e3
    assert cut["host"] == "h1" and cut["port"] == "h1-eth0", context
    assert cut["host_detect_ms"] is not None and cut["host_detect_ms"] < 3 * rtt_ms, context
    assert cut["routes_moved"] and cut["rerouted_ms"] < 3 * cut["rto_floor_ms"], context  # P4Runtime writes: not RTT-scaled
    for host, figures in cut["hosts"].items():
        assert figures["recovered_rto_floors"] is not None and figures["recovered_rto_floors"] <= 3, (host, context)

    stats = json.loads((run_dir / "records" / "h1.stats.json").read_text())
    series = stats["series"]
    before = [tx for t, tx in zip(series["t_s"], series["port_tx"]) if t <= cut["cut_t_s"]]
    after = [tx for t, tx in zip(series["t_s"], series["port_tx"]) if t >= cut["cut_t_s"] + 3 * rtt_ms / 1e3]
    first, last = before[0], before[-1]
    if lb == "spray":
        assert all(last[p] - first[p] > 20 for p in (0, 1)), f"both ports should carry traffic before: {before}"
    assert after[-1][0] == after[0][0], "h1 kept sending on its dead port"
    assert after[-1][1] - after[0][1] > 100, "the surviving port did not carry the traffic"
    assert summary["drops"]["data_balance"]["verdict"] in ("balances", "balances within untyped losses"), \
        summary["drops"]["data_balance"]


def test_a_crashed_tor_is_left_by_silence_and_no_message_is_lost(tmp_path, registry):
    """leaf1 dies with its cables up: no carrier tells h1 anything, so it must notice that its
    leaf1 port stopped hearing back, and use its other port until leaf1 returns."""
    text = SCENARIO.replace("CC", "tita").replace(
        "{at_s: 1.5, kind: link_down, target: h1-leaf1}", "{at_s: 1.5, kind: switch_restart, target: leaf1, duration_s: 1.5}")
    scenario, result, summary, run_dir, context = run_fitted(text, tmp_path / "failover-tor")
    assert all(code == 0 for code in result.agents.values()), context
    assert summary["messages_planned"] == summary["messages_completed"] == summary["messages_delivered_verified"] == 2
    (cut,) = summary["recovery"]  # h1 is leaf1's only host
    rtt_ms = scenario.derived.base_rtt_us / 1e3
    assert cut["host"] == "h1" and cut["host_detect_by"] == "silence", context
    assert cut["host_detect_ms"] < 6 * rtt_ms, context  # 4 RTTs of silence, judged every few cell times
    assert cut["routes_moved"], context
    # It dips and comes back (no bound on how fast: each retry of the dead port costs 4 RTTs of cells).
    for host, figures in cut["hosts"].items():
        assert figures["recovered_ms"] is not None, (host, context)
