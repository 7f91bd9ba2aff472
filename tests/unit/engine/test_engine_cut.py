"""A cut link and a switch whose process ended, in the native engine (engine.c eng_port_down,
eng_switch_clear): what is on a cable when it is cut never arrives, what is sent into it is lost,
and a cleared switch has nothing queued and counts from zero."""

from __future__ import annotations

import pytest

from testbed.targets import c_compiler

pytestmark = pytest.mark.skipif(c_compiler() is None, reason="no C compiler: the native engine cannot be built")

SCENARIO = """
topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {rate_mbps: 10, delay_us: 200}
fabric: {load_balancing: spray_rr_entropy}
workload: [{kind: pingall}]
"""
MS = 1_000_000


@pytest.fixture
def fabric():
    from testbed.emulation.model_fabric import build

    return build(SCENARIO, backend="native")


def ends(fabric) -> tuple[tuple[int, int], tuple[int, int]]:
    """(leaf1, its port to spine1) and (spine1, its port to leaf1), as engine indexes."""
    topo, index = fabric.topology, fabric.index
    up = next(p for p in topo.ports("leaf1") if p.peer == "spine1")
    return (index["leaf1"], up.number), (index["spine1"], up.peer_port)


def cells(fabric, count: int) -> list[bytes]:
    from testbed.emulation.model_fabric import data_cells

    return data_cells(fabric, "h1", "h2", 7, count)


def test_frames_on_a_cable_when_it_is_cut_never_arrive(fabric):
    engine, (a, b) = fabric.engine, ends(fabric)
    h2 = fabric.hosts["h2"]
    fabric.inject("h1", cells(fabric, 1)[0], 0)
    engine.run(MS // 2)  # leaf1 has sent it; it is on the cable to spine1
    for switch, port in (a, b):
        engine.port_down(switch, port, True)
    engine.run(10 * MS)
    assert engine.delivered(h2) == 0 and engine.port_stats(*b)["cut_lost"] == 1
    for switch, port in (a, b):  # mended: a frame sent now arrives
        engine.port_down(switch, port, False)
    fabric.inject("h1", cells(fabric, 1)[0], 20 * MS)
    engine.run(40 * MS)
    assert engine.delivered(h2) == 1 and engine.port_stats(*b)["down"] == 0


def test_what_a_port_sends_into_a_cut_cable_is_lost_at_the_link_rate(fabric):
    engine, (a, b) = fabric.engine, ends(fabric)
    for switch, port in (a, b):
        engine.port_down(switch, port, True)
    for frame in cells(fabric, 3):
        fabric.inject("h1", frame, 0)
    engine.run(MS // 2)  # one cell (about 1.1 kB at 10 Mbit/s: 0.85 ms) has left, two wait their turn
    queued = engine.queue_stats(a[0], a[1], 0)["depth"]
    assert queued == 2 and engine.port_stats(*a)["cut_lost"] == 1
    engine.run(10 * MS)
    assert engine.port_stats(*a)["cut_lost"] == 3 and engine.port_stats(*a)["tx"] == 3
    assert engine.delivered(fabric.hosts["h2"]) == 0


def test_a_cleared_switch_drops_its_queues_and_counts_from_zero(fabric):
    engine, (a, _) = fabric.engine, ends(fabric)
    for frame in cells(fabric, 4):
        fabric.inject("h1", frame, 0)
    engine.run(MS // 2)
    assert engine.switch_stats(a[0])["rx"] == 4
    assert engine.switch_clear(a[0]) == 3  # one had left, three were queued
    assert engine.queue_stats(a[0], a[1], 0)["depth"] == 0 and engine.switch_stats(a[0])["rx"] == 0
    assert engine.port_stats(*a)["tx"] == 0
    engine.run(20 * MS)
    assert engine.delivered(fabric.hosts["h2"]) == 1  # only the one on the cable


def test_a_port_change_on_a_lossless_switch_is_taken_while_its_pfc_queue_holds_packets():
    """A link_degrade reaches a lossless switch in the middle of its traffic: the TM copies every
    setting into the engine again (sync_tm), PFC's unchanged, which the engine must take."""
    from testbed.emulation.model_fabric import build

    fabric = build(SCENARIO.replace("spray_rr_entropy}", "spray_rr_entropy, pfc: {enabled: true}}"),
                   backend="native")
    engine, (a, _) = fabric.engine, ends(fabric)
    for frame in cells(fabric, 4):
        fabric.inject("h1", frame, 0)
    engine.run(MS // 2)
    tm = fabric.switches["leaf1"].tm
    assert tm.pfc_priority is not None
    assert engine.queue_stats(a[0], a[1], tm.pfc_priority)["depth"] > 0
    reply = fabric.switches["leaf1"].tm_commands.execute(f"set_port_rate_bps 2500000 {a[1]}")
    assert reply["ok"], reply
    engine.run(30 * MS)
    assert engine.delivered(fabric.hosts["h2"]) == 4
