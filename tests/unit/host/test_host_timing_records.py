"""Message timing fields and the agent's pacer lateness: what each number counts from."""

from conftest import make_cfg, star_link

from testbed.host import workloads
from testbed.host.lateness import Lateness
from testbed.simulation.sim import star


def test_second_message_of_a_flow_is_queued_behind_the_first():
    cfg = make_cfg("none")
    net = star(2, cfg, star_link(cfg, buffer_bdp=2.0))
    wl = workloads.combine([workloads.MessageSpec("h1", "h2", 0, 200_000)],
                           [workloads.MessageSpec("h1", "h2", 1, 200_000)])
    net.load(wl)
    net.run(5.0)
    sent = sorted((r for r in net.records() if r["kind"] == "message_sent"), key=lambda r: r["msg_id"])
    assert len(sent) == 2
    first, second = sent
    assert first["queueing_us"] < 1_000  # sent at once
    # the second waited for every cell of the first (200 kB at the link rate) before its own first cell
    one_message_us = first["cells"] * cfg.cell_time_s * 1e6
    assert second["queueing_us"] >= 0.9 * one_message_us
    assert second["first_tx_us"] >= first["first_tx_us"] + 0.9 * one_message_us
    for r in sent:
        assert abs(r["completion_us"] + r["queueing_us"] - r["fct_us"]) < 1e-6
        assert abs(r["acked_us"] - r["first_tx_us"] - r["completion_us"]) < 1e-6
    assert second["completion_us"] < 0.8 * second["fct_us"]


def test_lateness_samples_only_wakes_at_or_after_the_deadline_that_sent():
    late = Lateness()
    late.on_wake(None, 1.0, 3)  # no deadline: woken by a packet
    late.on_wake(2.0, 1.5, 1)  # early (a packet woke it): not late
    late.on_wake(2.0, 2.0005, 0)  # on time but nothing sent
    for i in range(99):
        late.on_wake(3.0, 3.0 + 1e-6 * i, 1)
    late.on_wake(4.0, 4.01, 1)
    s = late.summary()
    assert s["samples"] == 100
    assert s["p50_us"] == 49.0  # nearest rank: the 50th of 100
    assert s["p99_us"] == 98.0  # the 99th of 100
    assert s["max_us"] == 10_000.0
