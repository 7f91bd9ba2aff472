"""A `training` phase resolved: the job's numbers, its ranks server by server, its compute stretched
with the run's clock, and the messages the workload gives it."""

from __future__ import annotations

from pathlib import Path

from testbed.host import training
from testbed.scenario import load_scenario
from testbed.scenario.timescale import slowed
from testbed.scenario.workload import scenario_messages

ROOT = Path(__file__).resolve().parents[3]


def test_the_committed_job_resolves_to_ddp_buckets_over_whole_servers():
    scenario = load_scenario(ROOT / "scenarios" / "training-ddp.yaml")
    phase = scenario.workload[0]
    job = phase.job
    assert phase.kind == "training" and phase.count == job.iterations == 5
    assert (job.parameters, job.dtype_bytes, job.layers) == (131072, 2, 16)
    assert (job.forward_us, job.backward_us, job.jitter, job.slow_host, job.slow_factor) == (
        200_000, 600_000, 0.05, "h6", 1.2)
    assert len(phase.hosts) == 16 and len(phase.servers) == 4  # ranks server by server
    assert phase.hosts[:4] == ("h1", "h5", "h9", "h13")  # server 1: GPU i on leaf i (rail-optimised)
    assert [b.size_bytes for b in training.buckets(job)] == [16384, 65536, 65536, 65536, 49152]
    assert scenario.to_dict()["workload"][0]["job"]["bucket_bytes"] == 65536
    msgs = scenario_messages(scenario)
    assert {training.parse_name(m.collective)[:2] for m in msgs} == {("ddp", k) for k in range(5)}
    # 5 iterations x 5 buckets x 16 ranks x 2(N-1) ring steps
    assert len(msgs) == 5 * 5 * 16 * 30


def test_a_slowed_run_stretches_the_compute_with_every_other_time():
    scenario = load_scenario(ROOT / "scenarios" / "training-ddp.yaml")
    job = slowed(scenario, 0.25).workload[0].job
    assert (job.forward_us, job.backward_us) == (800_000, 2_400_000)
    assert job.bucket_bytes == 65536 and job.parameters == 131072  # sizes stay as they were


def test_show_describes_the_job(capsys):
    from testbed import cli

    assert cli.main(["show", str(ROOT / "scenarios" / "training-ddp.yaml")]) == 0
    assert ("at 0 s ddp: 16 hosts, data-parallel job of 131072 parameters x 2 B in 16 layers, 5 iterations, "
            "buckets 16384/65536/65536/65536/49152 B (ring, 1 channel(s)), forward 200 ms, backward 600 ms, "
            "jitter 0.05, h6 x1.2") in capsys.readouterr().out


def test_the_committed_moe_job_resolves_to_all_to_alls_over_one_expert_parallel_group():
    from testbed.host import moe

    scenario = load_scenario(ROOT / "scenarios" / "training-moe.yaml")
    job = scenario.workload[0].job
    m = job.moe
    assert (m.experts, m.expert_degree, m.top_k, m.hidden, m.tokens, m.capacity_factor) == (16, 16, 2, 64, 256, None)
    assert m.expert_share == 0.8  # 2k / (1 + 2k) at top-2
    assert moe.block_bytes(job) == 256 * 2 * 64 * 2 // 16 == 4096
    msgs = scenario_messages(scenario)
    # 4 iterations x 8 all-to-alls x 16 ranks x 15 peers
    assert len(msgs) == 4 * 8 * 16 * 15
    assert {training.parse_step(x.collective)[:3] for x in msgs} == {("moe", k, j) for k in range(4) for j in range(8)}
    assert slowed(scenario, 0.5).workload[0].job.moe == m


def test_the_committed_pipeline_job_resolves_to_stages_of_replicas():
    from testbed.host import pipeline

    scenario = load_scenario(ROOT / "scenarios" / "training-pipeline.yaml")
    job = scenario.workload[0].job
    assert job.pipe == training.Pipe(stages=4, microbatches=8, tokens=64, hidden=32, vocab=256, schedule="1f1b")
    assert pipeline.activation_bytes(job) == 64 * 32 * 2
    msgs = scenario_messages(scenario)
    # per replica and iteration: 8 micro-batches x 3 stage boundaries x 2 directions, and the
    # embedding all-reduce's ring of two (2 messages each way)
    assert len(msgs) == 4 * 4 * (8 * 3 * 2 + 4)
    assert {pipeline.parse_name(m.collective) for m in msgs} == {("pp", k) for k in range(4)}
