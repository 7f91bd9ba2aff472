"""The latency claim in the simulator: TiTa's FCTs (a message posted to its last ACK,
its wait for credits included) below DCQCN's, in incast and for short messages mixed with long
flows (scenarios/incast.yaml's links)."""

from testbed.simulation import simexp


def test_short_messages_beside_long_flows_complete_sooner_with_tita():
    tita, dcqcn = simexp.mixed("tita"), simexp.mixed("dcqcn")
    assert tita["finished"] and dcqcn["finished"] and tita["data_drops"] == 0
    # credited first (Homa's order), a short message waits one round trip for its credits, not
    # for its share beside the long flows: 0.33x and 0.13x of dcqcn's p50 and p99 FCT
    assert tita["short_fct_p50_ms"] < 0.5 * dcqcn["short_fct_p50_ms"], (tita, dcqcn)
    assert tita["short_fct_p99_ms"] < 0.5 * dcqcn["short_fct_p99_ms"], (tita, dcqcn)
    # and at most 3 base RTTs: request and credit, its cells, their ACK (the credit-first bound)
    assert tita["short_fct_p99_rtts"] <= 3.0, tita
    assert tita["long_fct_p99_ms"] < dcqcn["long_fct_p99_ms"], (tita, dcqcn)


def test_incast_completes_sooner_with_tita():
    tita, dcqcn = simexp.incast("tita", 15), simexp.incast("dcqcn", 15)
    assert tita["fct_p50_ms"] < dcqcn["fct_p50_ms"], (tita, dcqcn)
    assert tita["fct_p99_ms"] < dcqcn["fct_p99_ms"], (tita, dcqcn)
