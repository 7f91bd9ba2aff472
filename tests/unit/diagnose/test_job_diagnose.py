"""`testbed diagnose` on a training job (testbed/diagnose/job.py): a slow GPU is named from the job's
own records (compute longer than its twin's), a degraded fabric cable from the network stall it
causes, and a healthy job names nothing and says no iteration stalled. The job is the job corpus's
(tests/unit/diagnose/job_corpus.py) on the program network, about 5 s a run."""

from __future__ import annotations

import json

import pytest

from testbed.diagnose.core import diagnose_variant, verdict_lines
from testbed.diagnose.job import compute_ran
from tests.unit.diagnose.corpus import write_run
from tests.unit.diagnose.job_corpus import job_data


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    return write_run(job_data("job"), tmp_path_factory.mktemp("healthy"), "program")


def test_a_healthy_job_names_no_culprit_and_no_stall(healthy):
    d = diagnose_variant(healthy)
    assert d["healthy"] and d["culprits"] == []
    assert [(j["job"], j["stalled"], j["iterations_run"]) for j in d["jobs"]] == [("job", [], 8)]
    assert verdict_lines(d)[1] == "job job: no iteration stalled (8 of the twin's 8 finished)"
    assert json.loads((healthy / "diagnosis.json").read_text())["jobs"] == d["jobs"]


def test_a_slow_gpu_is_named_with_the_iteration_it_stalled(tmp_path, healthy):
    faults = [{"at_s": 1.3, "kind": "gpu_slow", "target": "h3", "factor": 2.5, "duration_s": 0.5}]
    run = write_run({**job_data("job"), "faults": faults}, tmp_path, "program")
    d = diagnose_variant(run)
    first = d["culprits"][0]
    assert (first["kind"], first["target"], first["symptom"]) == ("gpu", "h3", "slow")
    # iteration 2 began at 1.18 s, before the fault; iteration 3's compute, placed at 1.77 s (the
    # healthy job's), is the only one placed while the GPU was slow (1.3 s to 1.8 s)
    assert 1.7 <= first["start_s"] <= 1.9
    stalled = d["jobs"][0]["stalled"]
    assert [s["iteration"] for s in stalled] == [3]
    assert stalled[0]["cause"] == "compute" and stalled[0]["gpu"] == "h3" and stalled[0]["late_ms"] > 300
    assert any(line.startswith("job job: iteration 3 stalled from ") and "cause compute: GPU h3's" in line
               for line in verdict_lines(d))
    # the job's own records: h3's compute ran 2.5 times its plan in iteration 3, every other as planned
    planned = json.loads((run / "agents" / "workload.json").read_text())["messages"]
    records = [json.loads(line) for p in sorted((run / "records").glob("*.jsonl")) for line in p.read_text().splitlines()]
    ran = compute_ran(planned, records)
    assert ran[("job", "h3", 3)][1] == pytest.approx(2.5 * ran[("job", "h3", 3)][0])
    assert all(abs(r - p) < 1e-6 for (job, h, k), (p, r) in ran.items() if (h, k) != ("h3", 3))


def test_a_degraded_fabric_cable_is_named_from_the_network_stall(tmp_path):
    faults = [{"at_s": 0.7, "kind": "link_degrade", "target": "leaf2-spine2", "rate_mbps": 1.25, "duration_s": 2.2}]
    d = diagnose_variant(write_run({**job_data("job"), "faults": faults}, tmp_path, "program"))
    first = d["culprits"][0]
    assert (first["kind"], first["target"], first["symptom"]) == ("link", "leaf2-spine2", "slow")
    assert abs(first["start_s"] - 0.7) <= 1.0
    stalled = d["jobs"][0]["stalled"]
    assert stalled and all(s["cause"] == "network" and s["culprit"] == "link leaf2-spine2 slow" for s in stalled)
    assert all(s["from_s"] < 2.9 + 0.6 for s in stalled)  # during the fault (and the iteration it ended in)


def _job(ran_us: dict, done_us: dict) -> tuple[list[dict], list[dict]]:
    """Two ranks, one bucket a iteration, two iterations: (planned, records) with h1 -> h2 and
    h2 -> h1 messages gated by 100 ms of compute, each ran `ran_us[(host, k)]`, every bucket done
    at `done_us[k]` at both ranks."""
    planned, records = [], []
    for k in range(2):
        for src, dst in (("h1", "h2"), ("h2", "h1")):
            m = {"src": src, "dst": dst, "msg_id": k, "start_us": 0.0, "collective": f"j#{k}.b0",
                 "compute_after": [f"j#{k - 1}.b0"] if k else [], "compute_us": 100_000.0}
            planned.append(m)
            records.append({"kind": "message_sent", "src": src, "dst": dst, "msg_id": k, "start_us": 0.0,
                            "fct_us": 1000.0, "collective": m["collective"], "compute_ran_us": ran_us[(src, k)]})
            records.append({"kind": "collective_done", "host": dst, "collective": m["collective"],
                            "done_us": done_us[k]})
    return planned, records


def test_a_gpu_that_computed_longer_is_named_though_its_iteration_did_not_stall():
    from testbed.diagnose.job import job_lines, job_view

    done = {0: 150_000.0, 1: 300_000.0}
    twin = _job({(h, k): 100_000.0 for h in ("h1", "h2") for k in range(2)}, done)
    run = _job({("h1", 0): 100_000.0, ("h2", 0): 100_000.0, ("h1", 1): 200_000.0, ("h2", 1): 100_000.0}, done)
    views, gpus, fabric = job_view(run, twin, [], 400_000.0)
    assert [(g.kind, g.target, g.symptom, g.start_s, g.score) for g in gpus] == [("gpu", "h1", "slow", 0.15, 1.0)]
    assert views[0]["stalled"] == [] and fabric == []
    assert views[0]["slow_compute"] == [{"iteration": 1, "gpu": "h1", "ran_ms": 200.0, "twin_ms": 100.0}]
    assert job_lines(views)[-1] == ("job j: GPU h1 computed 200.0 ms in iteration 1 where its twin's took 100.0 ms "
                                    "(the iteration did not stall)")
    healthy_views, none, _ = job_view(twin, twin, [], 400_000.0)
    assert none == [] and healthy_views[0]["stalled"] == [] and healthy_views[0]["slow_compute"] == []
