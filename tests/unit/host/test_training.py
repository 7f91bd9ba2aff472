"""Training jobs (host/training.py): DDP's buckets, seeded compute, messages held by their compute,
and the job's figures (telemetry/training.py) on the model simulator."""

from dataclasses import replace

import pytest

from testbed.host import training as t
from testbed.host.config import TransportConfig
from testbed.host.message import MessageSpec
from testbed.simulation import sim
from testbed.telemetry.training import job_rows, job_timelines

HOSTS = [f"h{i}" for i in range(1, 9)]
JOB = t.Job(iterations=3, parameters=8192, dtype_bytes=4, layers=8, forward_us=50_000, backward_us=200_000,
            first_bucket_bytes=4096, bucket_bytes=8192)


def test_buckets_fill_in_backward_order_and_close_at_their_caps():
    job = t.Job(iterations=1, parameters=1000, dtype_bytes=2, layers=10, forward_us=1, backward_us=1,
                first_bucket_bytes=300, bucket_bytes=500)
    # 200 B per layer: the first bucket closes at 400 B (>= 300), the next ones at 600 B (>= 500)
    assert t.buckets(job) == [t.Bucket(400, 2), t.Bucket(600, 5), t.Bucket(600, 8), t.Bucket(400, 10)]
    assert sum(b.size_bytes for b in t.buckets(JOB)) == JOB.gradient_bytes == 32768
    assert t.buckets(replace(job, first_bucket_bytes=1, bucket_bytes=1 << 30)) == [t.Bucket(200, 1), t.Bucket(1800, 10)]
    # DDP_SET_LAST_BUCKET_CAP=1: the same assignment from the first layer, so the small bucket is the last
    first = replace(job, first_bucket_bytes=200)
    assert t.buckets(first) == [t.Bucket(200, 1), t.Bucket(600, 4), t.Bucket(600, 7), t.Bucket(600, 10)]
    assert t.buckets(replace(first, small_bucket="last")) == [t.Bucket(600, 3), t.Bucket(600, 6), t.Bucket(600, 9),
                                                              t.Bucket(200, 10)]
    assert t.layer_bytes(replace(job, parameters=1003)) == [202] * 3 + [200] * 7


def test_compute_is_seeded_jittered_and_the_slow_gpu_slower():
    job = replace(JOB, jitter=0.1, slow_host="h2", slow_factor=2.0)
    a = t.compute_times(job, 7, "ddp", "h1", 0)
    assert a == t.compute_times(job, 7, "ddp", "h1", 0)
    assert a != t.compute_times(job, 8, "ddp", "h1", 0) and a != t.compute_times(job, 7, "ddp", "h1", 1)
    assert 45_000 <= a[0] <= 55_000 and 180_000 <= a[1] <= 220_000
    slow = t.compute_times(job, 7, "ddp", "h2", 0)
    assert 90_000 <= slow[0] <= 110_000 and 360_000 <= slow[1] <= 440_000
    assert t.compute_times(replace(job, jitter=0.0), 7, "ddp", "h1", 0) == (50_000, 200_000)


def test_messages_name_their_bucket_and_wait_for_backward_and_the_last_iteration():
    msgs = t.messages(JOB, "ddp", HOSTS, seed=1)
    plan = t.buckets(JOB)
    assert {t.parse_name(m.collective) for m in msgs} == {("ddp", k, b) for k in range(3) for b in range(len(plan))}
    for m in msgs:
        _, k, b = t.parse_name(m.collective)
        assert m.compute_us == pytest.approx(50_000 + 200_000 * plan[b].layers_done / 8)
        assert m.compute_after == (() if k == 0 else tuple(t.bucket_name("ddp", k - 1, j) for j in range(len(plan))))
    assert MessageSpec.from_json(msgs[-1].to_json()) == msgs[-1]
    assert t.parse_name("ring@65536B#0") is None


def _run(job, seed=1):
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    net = sim.leaf_spine(2, 2, 4, cfg, sim.LinkSpec(20e6, 1000e-6, 46))
    msgs = t.messages(job, "ddp", HOSTS, seed)
    net.load(msgs, seed)
    net.run(120)
    assert net.finished()
    return msgs, net.records()


def test_a_message_leaves_when_its_compute_is_done_and_no_sooner():
    msgs, recs = _run(JOB)
    assert all(r["verified"] for r in recs if r["kind"] in ("message_delivered", "collective_done"))
    done = {(r["host"], r["collective"]): r["done_us"] for r in recs if r["kind"] == "collective_done"}
    sent = {(r["src"], r["dst"], r["msg_id"]): r["start_us"] for r in recs if r["kind"] == "message_sent"}
    first: dict = {}
    for m in msgs:
        gate = max([m.start_us] + [done[(m.src, c)] for c in m.compute_after])
        start = sent[(m.src, m.dst, m.msg_id)]
        assert start >= gate + m.compute_us - 1e-3, m
        _, k, b = t.parse_name(m.collective)
        # one bucket after the other at each GPU, as NCCL's stream runs them
        before = done[(m.src, t.bucket_name("ddp", k, b - 1))] if b else 0.0
        assert start >= before - 1e-3, m
        key = (m.src, m.collective)
        first[key] = min(first.get(key, float("inf")), start - max(gate + m.compute_us, before))
    # each rank's first message of a bucket leaves the moment backward has produced the bucket and the
    # previous bucket is reduced there
    assert max(first.values()) < 1.0


def _planned(msgs):
    return [m.to_json() for m in msgs]


def test_exposed_communication_only_the_last_bucket_when_compute_covers_the_rest():
    # 256 KiB of gradients in buckets of 16, 64, 64, 64 and 48 KiB; backward long enough to cover all
    # but the last
    job = replace(JOB, parameters=65536, layers=16, first_bucket_bytes=16384, bucket_bytes=65536,
                  forward_us=100_000, backward_us=800_000)
    covered, recs = _run(job)
    rows = job_rows(_planned(covered), recs)["ddp"]
    timelines = job_timelines(_planned(covered), recs)["ddp"]
    assert rows["iterations_finished"] == 3 and rows["gpus"] == 8
    last = len(t.buckets(job)) - 1
    for h, its in timelines["timeline"].items():
        for it in its:
            a, b = it["comm"][last]  # the last bucket's all-reduce at this GPU: first send to done
            assert it["exposed_us"] <= b - a + 1e-6  # nothing but the last bucket is exposed
            # no jitter, no slow GPU: a GPU waits only as long as it finished the last iteration
            # before the last GPU did (a ring's ranks finish one hop apart)
            k = it["iteration"]
            skew = 0 if k == 0 else max(timelines["end"][(q, k - 1)] for q in HOSTS) - timelines["end"][(h, k - 1)]
            assert it["wait_us"] <= skew + 1e-6
    short, recs = _run(replace(job, backward_us=2_000, forward_us=1_000))
    exposed = job_rows(_planned(short), recs)["ddp"]
    assert exposed["exposed_per_iteration_ms"] > 2 * rows["exposed_per_iteration_ms"]
    assert exposed["gpu_utilisation"] < 0.5 < rows["gpu_utilisation"]


def test_a_slow_gpu_makes_the_others_wait():
    msgs, recs = _run(replace(JOB, slow_host="h3", slow_factor=1.5))
    rows = job_rows(_planned(msgs), recs)["ddp"]
    timeline = job_timelines(_planned(msgs), recs)["ddp"]["timeline"]
    assert rows["gpu_lowest"] != "h3"  # the slow GPU computes most, the others idle for it
    assert all(it["wait_us"] == 0 for it in timeline["h3"])
    assert all(it["wait_us"] > 100_000 * 0.9 for h in HOSTS if h != "h3" for it in timeline[h])


def _synthetic(done_at_us: float):
    """One GPU pair, one iteration, one bucket: compute 100 us from 0, the bucket reduced at `done_at_us`."""
    planned = [{"src": h, "dst": o, "msg_id": 0, "size_bytes": 8, "start_us": 0.0, "collective": "j#0.b0",
                "compute_after": [], "compute_us": 100.0} for h, o in (("a", "b"), ("b", "a"))]
    records = [{"kind": "message_sent", "src": h, "start_us": 100.0, "collective": "j#0.b0"} for h in "ab"]
    records += [{"kind": "collective_done", "host": h, "done_us": done_at_us, "collective": "j#0.b0"} for h in "ab"]
    return job_rows(planned, records)["j"]


def test_exposed_communication_is_zero_when_compute_covers_it_and_the_excess_when_not():
    covered = _synthetic(100.0)
    assert covered["exposed_per_iteration_ms"] == 0 and covered["gpu_utilisation"] == 1.0
    late = _synthetic(150.0)
    assert late["exposed_per_iteration_ms"] == pytest.approx(0.05)
    assert late["gpu_utilisation"] == pytest.approx(100 / 150)
    assert late["iteration_p50_ms"] == late["iteration_p99_ms"] == pytest.approx(0.15)
