"""The scenario's faults on the program network, done as the emulation does them
(testbed/simulation/program_faults.py): cut cables in the engine, the TM's own command lines, the
controller's reroute written into the P4 program's tables, stalled hosts, faults the run never
reached."""

from __future__ import annotations

import json

import pytest

from testbed.p4model.backend.native import compiler
from testbed.scenario import parse_scenario
from testbed.scenario.workload import scenario_messages
from testbed.simulation.program_faults import ProgramFaults
from testbed.simulation.run import build_program_network

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")

FABRIC = """
name: small
duration_s: {duration}
seed: 3
topology: {{kind: leaf_spine, leaves: {leaves}, spines: {spines}, hosts_per_leaf: 2{dual}}}
links: {{rate_mbps: 100, delay_us: 20}}
switch: {{program: p4src/fabric.p4}}
fabric: {{load_balancing: spray_rr_entropy, cell_size: 1024}}
transport: {{cc: tita}}
workload:
  - {{kind: permutation, message_bytes: {size}, cross_tor: true}}
"""


def scenario(faults: str = "", leaves: int = 2, spines: int = 2, dual: bool = False, size: int = 262144,
             duration: float = 2):
    text = FABRIC.format(leaves=leaves, spines=spines, dual=", dual_homed: true" if dual else "", size=size,
                         duration=duration)
    return parse_scenario(text + (f"faults:\n{faults}\n" if faults else ""), "small.yaml")


def run(s, tmp_path=None, watch=None):
    """The scenario on the program network with its faults; `watch(net)` may add observers."""
    net = build_program_network(s)
    net.load(scenario_messages(s), s.seed)
    faults = ProgramFaults(s, net, tmp_path).start()
    if watch is not None:
        watch(net)
    net.run(s.duration_s)
    return net, faults


def delivered(net) -> list[dict]:
    return [r for r in net.records() if r["kind"] == "message_delivered"]


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def port_of(s, switch: str, peer: str) -> int:
    return next(p.number for p in s.topo.ports(switch) if p.peer == peer)


def test_a_cut_cable_loses_what_is_on_it_and_traffic_completes_after_the_reroute(tmp_path):
    s = scenario("  - {at_s: 0.004, kind: link_down, target: leaf1-spine1}")
    up = port_of(s, "leaf1", "spine1")
    seen = {}

    def watch(net):
        leaf1 = net.fabric.index["leaf1"]

        def after_reroute(now):  # the controller's writes landed at 0.024 s
            seen["tx"] = net.engine.port_stats(leaf1, up)["tx"]
        net.every(25_000_000, after_reroute)

    net, faults = run(s, tmp_path, watch)
    assert net.finished() and len(delivered(net)) == 4 and all(r["verified"] for r in delivered(net))
    stats = net.engine.port_stats(net.fabric.index["leaf1"], up)
    assert stats["down"] == 1 and stats["cut_lost"] > 0
    assert faults.lost_on_cut_links() >= stats["cut_lost"]
    # after the reroute leaf1's program sends nothing more towards the dead cable
    assert stats["tx"] == seen["tx"]
    [reaction] = lines(tmp_path / "reroute.jsonl")
    assert reaction["dead_links"] == ["leaf1-spine1"] and reaction["changes"] == {"leaf1-spine1": "down"}
    assert reaction["seen_t_s"] == 0.004 and reaction["done_t_s"] == 0.024 and "leaf1" in reaction["switches"]
    [record] = lines(tmp_path / "faults.jsonl")
    assert record["kind"] == "link_down" and record["interfaces"] == ["leaf1-eth3", "spine1-eth1"]


def test_a_link_degraded_to_a_quarter_slows_the_messages_through_it(tmp_path):
    def times(faults: str) -> list[float]:
        net, _ = run(scenario(faults, spines=1, size=131072), tmp_path)
        assert net.finished()
        return [(r["delivered_us"] - r["first_cell_us"]) for r in delivered(net)]

    healthy = times("")
    degraded = times("  - {at_s: 0.0001, kind: link_degrade, target: leaf1-spine1, rate_mbps: 25, duration_s: 1}")
    # every message crosses leaf1-spine1 one way or the other: a quarter of the rate, several times the time
    assert min(degraded) > 2.5 * max(healthy), (healthy, degraded)
    [record] = lines(tmp_path / "faults.jsonl")
    assert record["tm_commands"] == ["leaf1: set_port_rate_bps 25000000 3", "spine1: set_port_rate_bps 25000000 1"]


def test_a_flapping_cable_is_cut_and_mended_and_rerouted_each_time(tmp_path):
    s = scenario("  - {at_s: 0.003, kind: link_flap, target: leaf1-spine1, period_s: 0.03, count: 2}")
    net, faults = run(s, tmp_path)
    assert net.finished() and all(r["verified"] for r in delivered(net)) and len(delivered(net)) == 4
    assert [r["kind"] for r in lines(tmp_path / "faults.jsonl")] == ["link_down", "link_up"] * 2
    reactions = lines(tmp_path / "reroute.jsonl")
    assert [r["dead_links"] for r in reactions] == [["leaf1-spine1"], [], ["leaf1-spine1"], []]
    assert all(r["routes_moved"] > 0 for r in reactions)  # away from the cable, then back to the plan's
    stats = net.engine.port_stats(net.fabric.index["leaf1"], port_of(s, "leaf1", "spine1"))
    assert stats["down"] == 0 and faults.lost_on_cut_links() > 0


def test_a_stalled_host_holds_what_reaches_it_until_it_resumes(tmp_path):
    s = scenario("  - {at_s: 0.002, kind: agent_stall, target: h3, duration_s: 0.2}")
    held = {}

    def watch(net):
        net.every(100_000_000, lambda now: held.update(n=len(net.hosts["h3"].held), tx=net.hosts["h3"].tx_bytes))
        net.every(200_000_000, lambda now: held.update(tx_later=net.hosts["h3"].tx_bytes))

    net, _ = run(s, tmp_path, watch)
    assert net.finished() and all(r["verified"] for r in delivered(net))
    assert held["n"] > 0 and held["tx"] == held["tx_later"]  # it heard nothing and said nothing
    to_h3 = [r for r in delivered(net) if r["dst"] == "h3"]
    assert to_h3 and all(r["delivered_us"] > 202_000 for r in to_h3)
    assert [r["kind"] for r in lines(tmp_path / "faults.jsonl")] == ["agent_stall", "agent_resume"]


def test_faults_after_the_traffic_ended_are_listed_as_not_executed(tmp_path):
    s = scenario("  - {at_s: 1.5, kind: link_down, target: leaf1-spine1}", size=16384)
    net, faults = run(s, tmp_path)
    assert net.finished() and net.now_s < 1.5
    [missed] = faults.not_executed(net.now_s)
    assert missed["kind"] == "link_down" and missed["reason"] == "the run ended before its planned time"
    assert faults.records == [] and not (tmp_path / "faults.jsonl").exists()


def test_a_dual_homed_host_leaves_its_cut_port_and_every_message_arrives(tmp_path):
    s = scenario("  - {at_s: 0.005, kind: link_down, target: h1-leaf1}", leaves=4, dual=True)
    sent = {}

    def watch(net):
        net.every(6_000_000, lambda now: sent.update(at_cut=list(net.hosts["h1"].port_tx)))

    net, faults = run(s, tmp_path, watch)
    assert net.finished() and len(delivered(net)) == len(scenario_messages(s)) and all(r["verified"] for r in delivered(net))
    h1 = net.hosts["h1"]
    assert h1.nic.live == 1 and h1.wires[0].down
    assert h1.port_tx[0] == sent["at_cut"][0] and h1.port_tx[1] > sent["at_cut"][1]  # only its live port
    [reaction] = lines(tmp_path / "reroute.jsonl")
    assert reaction["dead_links"] == ["h1-leaf1"] and reaction["routes_moved"] > 0
    assert faults.lost_on_cut_links() > 0


def test_a_restarted_switch_is_routed_around_and_counts_from_zero(tmp_path):
    s = scenario("  - {at_s: 0.004, kind: switch_restart, target: spine1, duration_s: 0.02}", size=1048576)
    net, faults = run(s, tmp_path)
    assert net.finished() and len(delivered(net)) == 4 and all(r["verified"] for r in delivered(net))
    stop, start = lines(tmp_path / "faults.jsonl")
    assert (stop["kind"], start["kind"]) == ("switch_stop", "switch_start")
    assert stop["reroute"]["dead_links"] == ["leaf1-spine1", "leaf2-spine1"] and start["reroute"]["dead_links"] == []
    assert faults.dropped_by_stopped_switches() > 0
    spine1 = net.engine.switch_stats(net.fabric.index["spine1"])
    leaf1 = net.engine.switch_stats(net.fabric.index["leaf1"])
    assert 0 < spine1["rx"] < leaf1["rx"]  # its counters started again at 0.024 s


def test_a_slowed_host_sends_at_its_capped_rate(tmp_path):
    def fct(faults: str) -> dict[str, float]:
        net, _ = run(scenario(faults), tmp_path)
        assert net.finished()
        return {r["src"]: r["fct_us"] for r in net.records() if r["kind"] == "message_sent"}

    healthy = fct("")
    slowed = fct("  - {at_s: 0.0001, kind: host_slow, target: h1, delay_ms: 0.001, rate_mbps: 20, duration_s: 1}")
    assert slowed["h1"] > 3.5 * healthy["h1"], (healthy, slowed)  # a fifth of the rate
    [record] = lines(tmp_path / "faults.jsonl")
    assert record["kind"] == "host_slow" and record["rate_mbps"] == 20


def test_a_receiver_stalled_before_anything_reaches_it_gets_its_message_after_resume(tmp_path):
    """One message, its receiver stalled for 1.5 s before the first cell arrives: the sender backs
    off, the resume (an observer) comes, and the message arrives after it."""
    text = FABRIC.format(leaves=2, spines=2, dual="", size=16384, duration=3).replace(
        "  - {kind: permutation, message_bytes: 16384, cross_tor: true}",
        "  - {kind: incast, receiver: h3, senders: 1, message_bytes: 16384}")
    s = parse_scenario(text + "faults:\n  - {at_s: 0.00001, kind: agent_stall, target: h3, duration_s: 1.5}\n",
                       "small.yaml")
    net, faults = run(s, tmp_path)
    assert net.finished() and faults.not_executed(net.now_s) == []
    [message] = delivered(net)
    assert message["dst"] == "h3" and message["delivered_us"] > 1.5e6
