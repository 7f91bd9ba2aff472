"""Pipeline jobs (host/pipeline.py): the schedules' pass order, every pass timed by the messages
its stage sends (compute chains), and the bubble in the job's figures on the model simulator."""

from dataclasses import replace

import pytest

from testbed.host import pipeline as pp
from testbed.host import training as t
from testbed.host.config import TransportConfig
from testbed.host.message import MessageSpec
from testbed.simulation import sim
from testbed.telemetry.training import all_timelines, job_rows

HOSTS = [f"h{i}" for i in range(1, 9)]
PIPE = t.Pipe(stages=4, microbatches=6, tokens=32, hidden=32, vocab=32)
JOB = t.Job(iterations=2, parameters=1024, dtype_bytes=2, layers=4, forward_us=240_000, backward_us=480_000,
            pipe=PIPE)


def test_1f1b_warms_up_then_alternates_and_gpipe_runs_every_forward_first():
    assert pp.order("1f1b", 4, 0, 6) == [("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0), ("F", 4), ("B", 1),
                                         ("F", 5), ("B", 2), ("B", 3), ("B", 4), ("B", 5)]
    assert pp.order("1f1b", 4, 3, 3) == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2)]
    assert pp.order("1f1b", 4, 1, 1) == [("F", 0), ("B", 0)]  # fewer micro-batches than warm-up
    assert pp.order("gpipe", 4, 2, 3) == [("F", 0), ("F", 1), ("F", 2), ("B", 2), ("B", 1), ("B", 0)]


def test_every_pass_rides_on_the_next_message_its_stage_sends():
    msgs = pp.messages(JOB, "pp", HOSTS, seed=1)
    assert MessageSpec.from_json(msgs[5].to_json()) == msgs[5]
    # stage s of replica r is hosts[s x 2 + r]: replica 0 is h1, h3, h5, h7
    acts = [m for m in msgs if m.collective and ".f" in m.collective and m.src == "h1"]
    assert [m.dst for m in acts] == ["h3"] * 12 and {m.size_bytes for m in acts} == {32 * 32 * 2}
    f_us, b_us = (x / (4 * 6) for x in t.compute_times(JOB, 1, "pp", "h1", 0))
    # the first stage's backwards send nothing: B0 is carried by F4's activation, after B0's gradient came
    f4 = next(m for m in acts if m.collective == "pp#0.f4.s0.r0")
    assert f4.compute_chain == ((("pp#0.f3.s0.r0",), 0.0), (("pp#0.b0.s1.r0",), pytest.approx(b_us)))
    assert (f4.compute_after, f4.compute_us) == ((), pytest.approx(f_us))
    # its cooldown backwards ride on the embedding all-reduce with the last stage (h7)
    embed = [m for m in msgs if m.collective == "pp#0.e.r0"]
    assert {(m.src, m.dst) for m in embed} == {("h1", "h7"), ("h7", "h1")}
    first = next(m for m in embed if m.src == "h1")
    assert [names for names, _us in first.compute_chain][1:] + [first.compute_after] == [
        (f"pp#0.b{i}.s1.r0",) for i in (2, 3, 4, 5)]
    # the last stage's forwards ride on its backwards' gradients
    grad = next(m for m in msgs if m.collective == "pp#0.b0.s3.r0")
    assert grad.src == "h7" and grad.dst == "h5"
    assert [names for names, _us in grad.compute_chain] == [("pp#0.f0.s2.r0",)]
    assert len({(m.src, m.dst, m.msg_id) for m in msgs}) == len(msgs)


def _run(job, seed=1):
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    net = sim.leaf_spine(2, 2, 4, cfg, sim.LinkSpec(20e6, 1000e-6, 46))
    msgs = pp.messages(job, "pp", HOSTS, seed)
    net.load(msgs, seed)
    net.run(120)
    assert net.finished()
    return [m.to_json() for m in msgs], net.records()


def test_a_pass_starts_after_the_pass_before_it_and_its_input_and_the_bubble_shows():
    planned, recs = _run(JOB)
    assert all(r["verified"] for r in recs if r["kind"] in ("message_delivered", "collective_done"))
    timelines = all_timelines(planned, recs)["pp"]
    rows = job_rows(planned, recs)["pp"]
    assert rows["iterations_finished"] == 2 and rows["gpus"] == 8
    for h, its in timelines["timeline"].items():
        for it in its:
            assert it["compute_us"] == pytest.approx(sum(b - a for kind, a, b in it["spans"] if kind == "compute"))
            assert it["compute_us"] + it["wait_us"] + it["exposed_us"] == pytest.approx(
                it["end_us"] - it["start_us"])
            computes = sorted((a, b) for kind, a, b in it["spans"] if kind == "compute")
            assert all(b0 <= a1 + 1e-6 for (_a0, b0), (a1, _b1) in zip(computes, computes[1:]))  # one at a time
    # 6 micro-batches over 4 stages: at best 6 / (6 + 3) of an iteration computes; the links cost more
    assert rows["gpu_utilisation"] < 6 / 9
    assert rows["wait_per_iteration_ms"] > 0.5 * 3 / 9 * 180  # most of the bubble is waiting for other stages
    # three times the micro-batches (each as long as before): a smaller bubble, 3 / 21 of the iteration
    more = replace(JOB, pipe=replace(PIPE, microbatches=18), forward_us=3 * JOB.forward_us,
                   backward_us=3 * JOB.backward_us)
    planned, recs = _run(more)
    assert job_rows(planned, recs)["pp"]["gpu_utilisation"] > rows["gpu_utilisation"] + 0.1
