"""gpu_slow in an emulated run: the agents take no compute command, so the fault is recorded in
faults.jsonl as an error naming the simulator, and nothing else is touched."""

import json

from testbed.emulation.faults import FaultAction, FaultRunner


def test_an_emulated_gpu_slow_is_recorded_as_an_error(tmp_path):
    log = tmp_path / "faults.jsonl"
    runner = FaultRunner([FaultAction(1.0, "gpu_slow", "h2", gpu=2.0)], epoch=0.0, log=log)
    runner._apply(runner.actions[0], 1.0)
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["kind"] == "gpu_slow" and record["target"] == "h2"
    assert "carried out by the simulator only" in record["error"]
    assert runner.errors == [record["error"]]
