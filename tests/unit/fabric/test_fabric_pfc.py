"""PFC across a planned fabric in one loop: an incast that overflows a lossy fabric is lossless
with pause frames, hop by hop back to the senders' NICs, and every cell still arrives."""

import pytest

from testbed.emulation.model_fabric import build, data_cells

SCENARIO = """
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 4}
links: {rate_mbps: 10, delay_us: 200}
fabric: {load_balancing: spray_rr_entropy, pfc: {enabled: %s}}
workload: [{kind: pingall}]
"""
CELLS_PER_SENDER = 60


BACKENDS = ["python", pytest.param("native", marks=pytest.mark.skipif(
    __import__("testbed.targets", fromlist=["c_compiler"]).c_compiler() is None, reason="no C compiler"))]


def incast(pfc: bool, backend: str = "python"):
    """h5..h8 (leaf2) each send CELLS_PER_SENDER DATA cells to h1 (leaf1) at their link's rate,
    a NIC that holds its cells while its ToR has it paused; on the Python loop or the native engine."""
    fabric = build(SCENARIO % ("true" if pfc else "false"), backend=backend)
    senders = ["h5", "h6", "h7", "h8"]
    queues = {h: data_cells(fabric, h, "h1", i + 1, CELLS_PER_SENDER) for i, h in enumerate(senders)}
    gap_ns = int(len(queues["h5"][0]) * 8e3 / 10)  # a cell's time on a 10 Mbit/s link
    now = 0
    while any(queues.values()):
        for host, cells in queues.items():
            if cells and not fabric.host_ports[host].paused:
                fabric.inject(host, cells.pop(0), now)
        now = fabric.run_until(now + gap_ns, now)
    now = fabric.run_until(now + 2_000_000_000, now)
    return fabric


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_lossy_fabric_drops_in_this_incast(backend):
    fabric = incast(pfc=False, backend=backend)
    assert fabric.tm_totals()["dropped_full"] > 0
    assert fabric.host_ports["h1"].delivered < 4 * CELLS_PER_SENDER


@pytest.fixture(scope="module", params=BACKENDS)
def lossless(request):
    return incast(pfc=True, backend=request.param)


def test_with_pfc_nothing_is_dropped_and_every_cell_arrives(lossless):
    assert lossless.tm_totals()["dropped_full"] == 0
    assert lossless.host_ports["h1"].delivered == 4 * CELLS_PER_SENDER


def test_pauses_spread_from_the_congested_tor_to_the_spines_and_the_senders(lossless):
    sent = {name: s.tm.pfc_stats()["xoff_sent"] for name, s in lossless.switches.items()}
    received = {name: sum(p["pfc_pauses_received"] for p in s.tm.port_stats())
                for name, s in lossless.switches.items()}
    assert sent["leaf1"] > 0  # the ToR of the receiver paused the spines
    assert received["spine1"] > 0 and received["spine2"] > 0
    assert sent["leaf2"] > 0  # ... and the senders' ToR its hosts
    assert sum(lossless.host_ports[h].pause_frames for h in ("h5", "h6", "h7", "h8")) > 0
    for s in lossless.switches.values():  # every pause was lifted again
        stats = s.tm.pfc_stats()
        assert stats["xoff_sent"] == stats["xon_sent"]
        assert s.stats["pfc_frames_tx"] == stats["xoff_sent"] + stats["xon_sent"]
        assert s.stats["pfc_malformed"] == 0
