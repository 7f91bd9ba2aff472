"""Dynamic channel scheduling (host/app.py, collectives.Params.dynamic): an all-to-all's chunks go
out on whichever of the pair's channels is free, so under flow-hash ECMP the channels that hash
onto a slow spine carry less, and the all-to-all ends sooner than with static channel slices."""

import pytest

from testbed.host import collectives
from testbed.host.collectives import CollectiveError
from testbed.host.config import TransportConfig
from testbed.simulation import sim

HOSTS = ["h1", "h2", "h3", "h4"]  # h1, h2 on leaf1; h3, h4 on leaf2


def _run(dynamic: bool, slow_spine: bool):
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    net = sim.leaf_spine(2, 2, 2, cfg, sim.LinkSpec(20e6, 1000e-6, 46), load_balancing="ecmp")
    if slow_spine:  # spine2's cables at a quarter of their rate
        for port in net.ports:
            if "spine2" in port.name:
                port.rate_bps = 5e6
    params = collectives.Params("all_to_all", "direct", 4 * 65536, channels=4, chunk_bytes=2048, dynamic=dynamic)
    net.load(collectives.schedule("a2a", HOSTS, params), 1)
    net.run(60)
    assert net.finished()
    recs = net.records()
    assert all(r["verified"] for r in recs if r["kind"] in ("message_delivered", "collective_done"))
    done = max(r["done_us"] for r in recs if r["kind"] == "collective_done")
    carried: dict = {}
    for r in recs:
        if r["kind"] == "message_sent":
            key = (r["src"], r["dst"], r["channel"])
            carried[key] = carried.get(key, 0) + r["bytes"]
    return done, carried


def test_channels_on_a_slow_path_carry_less_and_the_all_to_all_ends_sooner():
    static, static_bytes = _run(False, slow_spine=True)
    dynamic, dynamic_bytes = _run(True, slow_spine=True)
    healthy, _ = _run(False, slow_spine=False)
    assert set(static_bytes.values()) == {16384}  # a quarter of each 64 KiB block per channel
    assert sum(dynamic_bytes.values()) == sum(static_bytes.values())
    # across the leaves some channels of a pair hash onto the slow spine: they carry less
    for src, dst in (("h1", "h3"), ("h3", "h1"), ("h2", "h4")):
        per_channel = [dynamic_bytes[(src, dst, c)] for c in range(4)]
        assert max(per_channel) >= 2 * min(per_channel)
    assert dynamic < 0.6 * static
    assert healthy < dynamic < 1.5 * healthy
    assert _run(True, slow_spine=False)[0] == pytest.approx(healthy)  # no slow path: the same split


def test_dynamic_scheduling_is_for_all_to_all_only():
    with pytest.raises(CollectiveError, match="all_to_all only"):
        collectives.schedule("r", HOSTS, collectives.Params("all_reduce", "ring", 4096, 2, dynamic=True))
