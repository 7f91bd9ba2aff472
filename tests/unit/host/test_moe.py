"""MoE jobs (host/moe.py): all-to-all block sizes as the frameworks size them, the step order and
compute, messages chained step by step, and the job's figures (telemetry/training.py) on the model
simulator, a slow GPU included."""

from dataclasses import replace

import pytest

from testbed.host import moe
from testbed.host import training as t
from testbed.host.config import TransportConfig
from testbed.simulation import sim
from testbed.telemetry.training import chain_timelines, job_rows

HOSTS = [f"h{i}" for i in range(1, 9)]
MOE = t.Moe(experts=8, expert_degree=8, tokens=64, hidden=32, top_k=2, expert_share=0.8)
JOB = t.Job(iterations=3, parameters=1024, dtype_bytes=2, layers=2, forward_us=20_000, backward_us=40_000,
            algorithm="direct", moe=MOE)


def test_blocks_are_the_routed_tokens_or_the_padded_capacity():
    # dropless: 64 tokens x top-2 spread over 8 ranks = 16 tokens of 32 x 2 B to each peer
    assert moe.block_bytes(JOB) == 16 * 32 * 2
    # padded: capacity ceil(2 x 64 / 8 x 1.25) = 20 tokens per expert, one expert per rank
    assert moe.block_bytes(replace(JOB, moe=replace(MOE, capacity_factor=1.25))) == 20 * 64
    # 16 experts over 4 ranks: each peer takes its 4 experts' capacity; the minimum capacity wins when larger
    wide = replace(MOE, experts=16, expert_degree=4, capacity_factor=1.0)
    assert moe.block_bytes(replace(JOB, moe=wide)) == 4 * 8 * 64
    assert moe.block_bytes(replace(JOB, moe=replace(wide, min_capacity=12))) == 4 * 12 * 64


def test_an_iteration_is_four_all_to_alls_per_layer_behind_its_compute():
    assert moe.steps(2) == [("dispatch", 0), ("combine", 0), ("dispatch", 1), ("combine", 1),
                            ("combine-grad", 1), ("dispatch-grad", 1), ("combine-grad", 0), ("dispatch-grad", 0)]
    first = moe.step_compute(JOB, 20_000, 40_000, first_iteration=True)
    later = moe.step_compute(JOB, 20_000, 40_000, first_iteration=False)
    # per layer: dense 2 ms / expert 8 ms forward, dense 4 ms / expert 16 ms backward
    assert first == pytest.approx([2_000, 8_000, 2_000, 8_000, 0, 16_000, 4_000, 16_000])
    # layer 0's dense backward runs before the next iteration's first dispatch
    assert later == pytest.approx([6_000] + first[1:])
    assert sum(later) == pytest.approx(60_000)


def test_messages_chain_the_steps_of_each_expert_parallel_group():
    job = replace(JOB, moe=replace(MOE, expert_degree=4, experts=8))
    msgs = moe.messages(job, "moe", HOSTS, seed=1)
    by_name: dict = {}
    for m in msgs:
        by_name.setdefault(m.collective, []).append(m)
    assert len(by_name) == 3 * 8 * 2  # iterations x steps x groups
    for name, group in by_name.items():
        _job, k, j, g = t.parse_step(name)
        ranks = {m.src for m in group} | {m.dst for m in group}
        assert ranks == set(HOSTS[4 * g:4 * g + 4])
        assert len(group) == 4 * 3 and {m.size_bytes for m in group} == {moe.block_bytes(job)}
        previous = None if (k, j) == (0, 0) else t.step_name("moe", k - (j == 0), (j - 1) % 8, g)
        for m in group:
            assert m.compute_after == (() if previous is None else (previous,))
            forward, backward = t.compute_times(job, 1, "moe", m.src, k)
            assert m.compute_us == pytest.approx(moe.step_compute(job, forward, backward, k == 0)[j])
    assert t.parse_step("moe#2.a7") == ("moe", 2, 7, 0) and t.parse_name("moe#2.a7") is None


def _run(job, seed=1):
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=23)
    net = sim.leaf_spine(2, 2, 4, cfg, sim.LinkSpec(20e6, 1000e-6, 46))
    msgs = moe.messages(job, "moe", HOSTS, seed)
    net.load(msgs, seed)
    net.run(120)
    assert net.finished()
    return [m.to_json() for m in msgs], net.records()


def test_each_step_waits_for_its_compute_after_the_last_step_finished_and_left():
    planned, recs = _run(replace(JOB, slow_host="h3", slow_factor=3.0))
    assert all(r["verified"] for r in recs if r["kind"] in ("message_delivered", "collective_done"))
    done = {(r["host"], r["collective"]): r["done_us"] for r in recs if r["kind"] == "collective_done"}
    sends: dict = {}
    for r in recs:
        if r["kind"] == "message_sent":
            sends.setdefault((r["src"], r["collective"]), []).append(r["start_us"])
    for m in planned:
        starts = sends[(m["src"], m["collective"])]
        if m["compute_after"]:
            before = m["compute_after"][0]
            # the previous step finished here: its blocks to this GPU applied and its own on their way
            gate = max(done[(m["src"], before)], max(sends[(m["src"], before)]))
            assert min(starts) == pytest.approx(gate + m["compute_us"], abs=1.0)
        else:
            assert min(starts) == pytest.approx(m["start_us"] + m["compute_us"], abs=1.0)
    rows = job_rows(planned, recs)["moe"]
    timeline = chain_timelines(planned, recs)["moe"]["timeline"]
    assert rows["iterations_finished"] == 3
    for h, its in timeline.items():
        for it in its:
            assert it["compute_us"] + it["wait_us"] + it["exposed_us"] == pytest.approx(
                it["end_us"] - it["start_us"])
    # every other GPU waits for the slow one's extra 120 ms of compute per iteration; the slow GPU
    # waits only where the others' compute resumes after its late blocks reached them (the last
    # layer's combine gradient follows the combine with no compute between)
    assert all(it["wait_us"] > 0.8 * 2 * 60_000 for h in HOSTS if h != "h3" for it in timeline[h][1:])
    assert all(it["wait_us"] < 0.25 * 2 * 60_000 for it in timeline["h3"])
    assert rows["gpu_lowest"] != "h3"


def test_exposed_communication_is_the_all_to_alls_when_nothing_waits():
    planned, recs = _run(JOB)
    rows = job_rows(planned, recs)["moe"]
    # 8 all-to-alls of 7 x 2 KiB per GPU at 20 Mbit/s: at least 8 x 5.7 ms exposed, nothing hides them
    assert rows["exposed_per_iteration_ms"] > 8 * 5.7
    assert rows["wait_per_iteration_ms"] < 0.2 * rows["exposed_per_iteration_ms"]
    assert rows["iteration_p50_ms"] > 60 + 8 * 5.7
    more, recs = _run(replace(JOB, forward_us=200_000, backward_us=400_000))
    busier = job_rows(more, recs)["moe"]
    assert busier["gpu_utilisation"] > rows["gpu_utilisation"]
