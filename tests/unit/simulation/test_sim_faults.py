"""Each fault kind on the simulator changes what it should, seen through the run's own telemetry."""

from __future__ import annotations

import json

import pytest

from testbed.scenario import parse_scenario
from testbed.scenario.workload import scenario_messages
from testbed.simulation.run import simulate
from testbed.simulation.telemetry import Sampler

FABRIC = """
duration_s: {duration}
topology: {{kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}}
links: {{rate_mbps: 10, delay_us: 500}}
fabric: {{load_balancing: spray_rr_entropy}}
transport: {{cc: tita}}
workload:
{workload}
"""
PERMUTATION = "  - {kind: permutation, start_s: 0.1, message_bytes: 1500000, cross_tor: true}"
RING = "  - {kind: ring_allreduce, start_s: 0.1, message_bytes: 96000, count: 3}"


def run(faults: str = "", workload: str = PERMUTATION, duration: float = 30, tmp_path=None):
    text = FABRIC.format(duration=duration, workload=workload) + (f"faults:\n{faults}\n" if faults else "")
    scenario = parse_scenario(text, "s.yaml")
    net, info = simulate(scenario, run_dir=tmp_path, sampler=lambda n: Sampler(n, 0.1))
    return scenario, net, info, info["sampler"]


def series(sampler, switch: str, port: int, key: str = "tx", field: str = "packets") -> list[tuple[float, int]]:
    return [(s["t_s"], s[key][port][field]) for s in sampler.samples if s["switch"] == switch]


def grown(points, start: float, end: float) -> int:
    """How much a cumulative counter grew between the samples at `start` and `end`."""
    at = dict(points)
    return at[round(end, 6)] - at[round(start, 6)]


def delivered(net) -> list[dict]:
    return [r for r in net.records() if r["kind"] == "message_delivered"]


def test_healthy_telemetry_has_the_emulated_shape_every_100_ms_and_changes_nothing(tmp_path):
    scenario, net, info, sampler = run(tmp_path=tmp_path)
    assert info["finished"] and all(r["verified"] for r in delivered(net))
    times = sorted({s["t_s"] for s in sampler.samples})
    assert times[:3] == [0.0, 0.1, 0.2] and times[-1] == round(info["virtual_end_s"], 6)
    sample = sampler.samples[-1]
    assert set(sample) >= {"t_s", "switch", "tx", "rx", "drops_packets", "ecn_marks_packets", "max_qdepth_packets"}
    leaf1 = [s for s in sampler.samples if s["switch"] == "leaf1"][-1]
    up = [p.number for p in scenario.topo.ports("leaf1") if p.peer.startswith("spine")]
    assert all(leaf1["tx"][p]["packets"] > 0 for p in up)  # sprayed over both spines
    assert leaf1["tx_by_type"][up[0]]["DATA"]["packets"] > 0
    # one direction's tx is the other end's rx (nothing lost on a healthy cable)
    spine1 = [s for s in sampler.samples if s["switch"] == "spine1"][-1]
    port = scenario.topo.ports("leaf1")[up[0] - 1]
    assert spine1["rx"][port.peer_port] == leaf1["tx"][up[0]]
    without, _ = simulate(scenario)  # no sampler: the same run, event for event
    assert without.sim.events == net.sim.events and without.sim.now == net.sim.now


def test_link_down_stops_that_cable_spraying_moves_around_it_and_it_comes_back(tmp_path):
    faults = ("  - {at_s: 0.6, kind: link_down, target: leaf1-spine2}\n"
              "  - {at_s: 1.2, kind: link_up, target: leaf1-spine2}")
    scenario, net, info, sampler = run(faults, tmp_path=tmp_path)
    assert info["finished"] and all(r["verified"] for r in delivered(net)) and len(delivered(net)) == 4
    link = scenario.topo.link("leaf1-spine2")
    other = scenario.topo.link("leaf1-spine1")
    to_spine2 = series(sampler, "leaf1", link.a_port)
    into_spine2 = series(sampler, "spine2", link.b_port, "rx")
    to_spine1 = series(sampler, "leaf1", other.a_port)
    assert grown(to_spine2, 0.3, 0.6) > 50  # in use before
    assert grown(into_spine2, 0.6, 1.2) == 0  # nothing crosses the cut cable
    assert grown(to_spine2, 0.7, 1.2) == 0  # and once rerouted (20 ms) nothing is sent into it
    assert grown(to_spine1, 0.7, 1.2) > 1.5 * grown(to_spine1, 0.3, 0.6) * 0.5 * (0.5 / 0.3)  # moved over
    assert grown(to_spine2, 1.3, 1.6) > 50  # back after link_up
    lost = sum(s["drops_packets"].get("link_down", 0) for s in sampler.samples if s["t_s"] == 1.2)
    assert lost > 0  # what was on the cable, or sent during the reaction, was lost
    records = [json.loads(x) for x in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["t_s"], r["interfaces"]) for r in records] == [
        ("link_down", 0.6, [f"leaf1-eth{link.a_port}", "spine2-eth1"]),
        ("link_up", 1.2, [f"leaf1-eth{link.a_port}", "spine2-eth1"])]
    reroutes = [json.loads(x) for x in (tmp_path / "reroute.jsonl").read_text().splitlines()]
    assert reroutes[0]["dead_links"] == ["leaf1-spine2"] and reroutes[0]["routes_moved"] > 0
    assert reroutes[1]["dead_links"] == []


def test_link_degrade_cuts_the_cables_rate_and_loses_packets():
    target = "leaf1-spine1"
    faults = f"  - {{at_s: 0.5, kind: link_degrade, target: {target}, duration_s: 1, rate_mbps: 2, loss: 0.05}}"
    scenario, net, info, sampler = run(faults)
    healthy = run()[3]
    link = scenario.topo.link(target)
    degraded_bytes = grown(series(sampler, "leaf1", link.a_port, field="bytes"), 0.6, 1.4)
    healthy_bytes = grown(series(healthy, "leaf1", link.a_port, field="bytes"), 0.6, 1.4)
    assert degraded_bytes <= 2e6 / 8 * 0.8 * 1.02 + 1600  # at most 2 Mbit/s over 0.8 s
    assert healthy_bytes > 2.5 * degraded_bytes
    losses = sum(s["port_drops_packets"][link.a_port] for s in sampler.samples if s["switch"] == "leaf1"
                 and s["t_s"] == 1.5)
    assert losses > 0 and info["lost_on_lossy_links"] > 0
    assert info["finished"] and all(r["verified"] for r in delivered(net))
    after = grown(series(sampler, "leaf1", link.a_port, field="bytes"), 1.6, 2.0)
    assert after > 2e6 / 8 * 0.4  # restored: faster than the degraded rate again


def _finish(net, host: str) -> float:
    return max(r["delivered_us"] for r in delivered(net) if r["src"] == host) / 1e6


def test_agent_stall_freezes_that_host_and_delays_its_messages():
    faults = "  - {at_s: 0.4, kind: agent_stall, target: h1, duration_s: 0.8}"
    _, net, info, sampler = run(faults)
    _, healthy, _, _ = run()
    tx = dict(zip(sampler.hosts.series["h1"]["t_s"], sampler.hosts.series["h1"]["tx_bytes"]))
    assert tx[1.2] == tx[0.5] and tx[0.4] > tx[0.1]  # nothing leaves the stalled host
    rx = dict(zip(sampler.hosts.series["h1"]["t_s"], sampler.hosts.series["h1"]["rx_bytes"]))
    assert rx[1.1] > rx[0.5]  # its NIC still receives (the socket keeps it)
    assert _finish(net, "h1") > _finish(healthy, "h1") + 0.6
    others = [h for h in ("h2", "h3", "h4") if _finish(net, h) < _finish(healthy, h) + 0.3]
    assert others  # a host that does not wait for h1 is not held up as long
    assert info["finished"] and all(r["verified"] for r in delivered(net))


def test_host_slow_delays_each_step_of_that_host_and_caps_its_nic():
    faults = "  - {at_s: 0.1, kind: host_slow, target: h2, duration_s: 20, delay_ms: 100}"
    scenario, net, info, _ = run(faults, RING)
    _, healthy, _, _ = run("", RING)
    arrived = {(r["src"], r["dst"], r["msg_id"]): r["delivered_us"] / 1e6 for r in delivered(net)}
    waits = {}
    for spec in scenario_messages(scenario):  # from its turn (its start time, what it waits for) to its start
        turn = max([spec.start_us / 1e6] + [arrived[(src, spec.src, i)] for src, i in spec.deps])
        sent = next(r for r in net.records() if r["kind"] == "message_sent" and r["src"] == spec.src
                    and r["dst"] == spec.dst and r["msg_id"] == spec.msg_id)
        waits.setdefault(spec.src, []).append(sent["start_us"] / 1e6 - turn)
    assert len(waits["h2"]) >= 6 and all(abs(w - 0.1) < 1e-6 for w in waits["h2"])  # each step of h2: 100 ms
    assert all(w < 1e-6 for h in ("h1", "h3", "h4") for w in waits[h])  # the others start at their turn
    end = max(r["delivered_us"] for r in delivered(net)) / 1e6
    assert end > max(r["delivered_us"] for r in delivered(healthy)) / 1e6 + 0.3  # the ring waits for it
    assert info["finished"] and all(r["verified"] for r in delivered(net))
    rate = "  - {at_s: 0.3, kind: host_slow, target: h1, duration_s: 1, rate_mbps: 2}"
    _, net, _, sampler = run(rate)
    tx = dict(zip(sampler.hosts.series["h1"]["t_s"], sampler.hosts.series["h1"]["tx_bytes"]))
    assert tx[1.2] - tx[0.4] <= 2e6 / 8 * 0.8 * 1.05 + 1600  # its NIC sends at 2 Mbit/s
    assert tx[0.3] - tx[0.1] > 2e6 / 8 * 0.2 * 2  # and faster before


def test_switch_restart_drops_everything_then_forwards_again_counting_from_zero(tmp_path):
    faults = "  - {at_s: 0.5, kind: switch_restart, target: spine1, duration_s: 0.5}"
    scenario, net, info, sampler = run(faults, tmp_path=tmp_path)
    assert info["finished"] and all(r["verified"] for r in delivered(net)) and len(delivered(net)) == 4
    spine = {s["t_s"]: s for s in sampler.samples if s["switch"] == "spine1"}
    total = {t: sum(c["packets"] for c in s["tx"].values()) for t, s in spine.items()}
    assert total[0.5] > 50
    assert total[1.1] < total[0.5]  # its counters started again (a restarted switch counts from zero)
    assert spine[0.9]["drops_packets"].get("switch_down", 0) > 0  # frames that reached it were dropped
    assert total[1.5] > 50  # forwarding again
    before = [s for t, s in spine.items() if 0.55 < t < 1.0]
    assert all(sum(c["packets"] for c in s["tx"].values()) == total[0.5] for s in before)  # nothing left it
    records = [json.loads(x) for x in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["t_s"]) for r in records] == [("switch_stop", 0.5), ("switch_start", 1.0)]
    assert records[0]["reroute"]["dead_links"] == ["leaf1-spine1", "leaf2-spine1"]
    assert records[1]["reroute"]["dead_links"] == []


def test_host_down_cuts_every_cable_of_the_host():
    _, net, info, sampler = run("  - {at_s: 0.5, kind: host_down, target: h1}", duration=3)
    rx = dict(zip(sampler.hosts.series["h1"]["t_s"], sampler.hosts.series["h1"]["rx_bytes"]))
    tx = dict(zip(sampler.hosts.series["h1"]["t_s"], sampler.hosts.series["h1"]["tx_bytes"]))
    assert rx[2.9] == rx[0.6] and rx[0.5] > 0
    assert not info["finished"]  # h1's messages cannot complete without its cable
    assert tx[2.9] > tx[0.6]  # its NIC keeps sending into the dead cable (lost)


def test_a_fault_after_the_run_ended_is_listed_not_executed(tmp_path):
    _, _, info, _ = run("  - {at_s: 25, kind: link_down, target: leaf1-spine2}", tmp_path=tmp_path)
    (skipped,) = info["faults_not_executed"]
    assert skipped["kind"] == "link_down" and skipped["run_ended_s"] < 25
    assert skipped["reason"] == "the run ended before its planned time"
    assert not (tmp_path / "faults.jsonl").exists() or not (tmp_path / "faults.jsonl").read_text()


def test_a_run_waits_for_a_stalled_host_even_when_nothing_else_is_left_to_happen():
    text = FABRIC.format(duration=10, workload="  - {kind: incast, start_s: 0.1, receiver: h3, senders: [h1], "
                                                "message_bytes: 300000}")
    text = text.replace("cc: tita", "cc: none") + "faults:\n  - {at_s: 0.2, kind: agent_stall, target: h1, duration_s: 2}\n"
    net, info = simulate(parse_scenario(text, "s.yaml"))
    assert info["finished"] and info["faults_carried_out"] == 2 and not info["faults_not_executed"]
    (done,) = delivered(net)
    assert done["delivered_us"] / 1e6 > 2.2  # the rest of the message left once h1 went on


def test_observers_run_at_their_times_and_never_move_the_end_of_a_run():
    from testbed.simulation.sim import Sim

    sim, seen = Sim(), []
    sim.at(1.0, lambda: seen.append(("event", sim.now)))
    sim.every(0.5, lambda: seen.append(("tick", sim.now)) or (sim.now + 0.5 if sim.now < 3 else None))
    sim.run(10.0, stop=lambda: True)
    assert seen == [("tick", 0.5), ("tick", 1.0), ("event", 1.0)] and sim.now == 1.0
    sim.run(10.0, stop=lambda: False)  # not over: the observers go on alone
    assert [t for kind, t in seen[3:]] == [1.5, 2.0, 2.5, 3.0]


DUAL = """
duration_s: 20
topology: {kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2, dual_homed: true}
links: {rate_mbps: 5, delay_us: 1000}
fabric: {load_balancing: spray_rr_entropy}
transport: {cc: tita}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 1500000, cross_tor: true}
faults:
  - {at_s: 1.0, kind: switch_restart, target: leaf1, duration_s: 1.5}
"""


def test_dual_homed_hosts_leave_a_crashed_tors_silent_ports_as_the_agent_does():
    scenario = parse_scenario(DUAL, "d.yaml")
    net, info = simulate(scenario, sampler=lambda n: Sampler(n, 0.1))
    sampler = info["sampler"]
    assert info["finished"] and all(r["verified"] for r in delivered(net))
    tor_hosts = [p.peer for p in scenario.topo.ports("leaf1") if p.tier == "host"]
    for host in tor_hosts:
        rx = dict(zip(sampler.hosts.series[host]["t_s"], sampler.hosts.series[host]["rx_bytes"]))
        # the crash keeps carrier; silence moves the host to its other ToR, at about one port's rate
        assert rx[2.4] - rx[1.4] > 0.5 * 5e6 / 8 * 1.0 * 0.5
        changes = net.hosts[host].nic.changes
        assert any(not up and why == "silence" and 1.0 < t < 1.4 for t, _, up, why in changes)


def test_stalling_or_slowing_a_host_without_traffic_fails_as_on_the_emulated_fabric(tmp_path):
    workload = "  - {kind: incast, start_s: 0.1, receiver: h3, senders: [h1], message_bytes: 600000}"
    faults = ("  - {at_s: 0.2, kind: agent_stall, target: h2, duration_s: 0.1}\n"
              "  - {at_s: 0.2, kind: host_slow, target: h4, duration_s: 0.1, delay_ms: 5}")
    _, _, info, _ = run(faults, workload, tmp_path=tmp_path)
    records = [json.loads(x) for x in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert {r["error"] for r in records} == {"h2 runs no agent in this run",
                                             "h4 runs no agent that takes commands in this run"}
    assert info["faults_carried_out"] == 0
