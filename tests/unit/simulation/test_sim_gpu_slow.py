"""gpu_slow on both simulators: the compute placed while the GPU is slow takes `factor` times its plan,
every other compute runs as planned, and faults.jsonl records the start and the end."""

import json

import pytest

from testbed.diagnose.job import compute_ran
from tests.unit.diagnose.corpus import write_run
from tests.unit.diagnose.job_corpus import job_data


@pytest.mark.parametrize("switches", ["model", "program"])
def test_a_slow_gpu_slows_only_the_compute_placed_meanwhile(tmp_path, switches):
    faults = [{"at_s": 1.3, "kind": "gpu_slow", "target": "h3", "factor": 2.5, "duration_s": 0.5}]
    run = write_run({**job_data("job"), "faults": faults}, tmp_path, switches)
    planned = json.loads((run / "agents" / "workload.json").read_text())["messages"]
    records = [json.loads(line) for p in sorted((run / "records").glob("*.jsonl")) for line in p.read_text().splitlines()]
    ran = compute_ran(planned, records)
    slowed = {key: value for key, value in ran.items() if abs(value[1] - value[0]) > 1e-6}
    assert list(slowed) == [("job", "h3", 3)]  # placed at 1.77 s; iteration 2's at 1.18 s, before it
    assert slowed[("job", "h3", 3)][1] == pytest.approx(2.5 * slowed[("job", "h3", 3)][0])
    logged = [json.loads(line) for line in (run / "faults.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["t_s"], r["factor"]) for r in logged] == [("gpu_slow", 1.3, 2.5), ("gpu_restore", 1.8, 1.0)]
