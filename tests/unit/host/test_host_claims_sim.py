"""Issue 13's latency claim in the simulator: TiTa's completion times below DCQCN's,
in incast and for short messages mixed with long flows (scenarios/incast.yaml's links)."""

from testbed.host import simexp


def test_short_messages_beside_long_flows_complete_sooner_with_tita():
    tita, dcqcn = simexp.mixed("tita"), simexp.mixed("dcqcn")
    assert tita["finished"] and dcqcn["finished"] and tita["data_drops"] == 0
    assert tita["short_completion_p50_ms"] < dcqcn["short_completion_p50_ms"], (tita, dcqcn)
    assert tita["short_completion_p99_ms"] < 0.5 * dcqcn["short_completion_p99_ms"], (tita, dcqcn)
    assert tita["long_completion_p99_ms"] < dcqcn["long_completion_p99_ms"], (tita, dcqcn)


def test_incast_completes_sooner_with_tita():
    tita, dcqcn = simexp.incast("tita", 15), simexp.incast("dcqcn", 15)
    assert tita["completion_p50_ms"] < dcqcn["completion_p50_ms"], (tita, dcqcn)
    assert tita["completion_p99_ms"] < dcqcn["completion_p99_ms"], (tita, dcqcn)
