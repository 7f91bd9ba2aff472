"""Sweeps (testbed.simulation.sweep): `testbed sim`'s variants in processes and on a Dask cluster of
two workers give the serial run's summary.json, byte for byte; a sweep keeps the units' order and
says in one line when a unit or the cluster fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testbed import cli
from testbed.errors import TestbedError
from testbed.simulation import sweep

REPO = Path(__file__).resolve().parents[3]

# three variants of a small fat-tree permutation (16 KiB a host): seconds each
SCENARIO = """
name: sweepy
duration_s: 5
seed: 3
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: 5, delay_us: 1000}
switch: {target: builtin, program: p4src/fabric.p4}
fabric: {load_balancing: ecmp, cell_size: 1024}
transport: {cc: none}
workload:
  - {kind: permutation, start_s: 0.1, message_bytes: 16384, count: 1}
variants:
  load_balancing: [ecmp, spray_rr_entropy, spray_random_entropy]
"""


def simulated(tmp_path, name: str, *options: str):
    """`testbed sim` of SCENARIO with these options: its output directory."""
    scenario = tmp_path / "sweepy.yaml"
    scenario.write_text(SCENARIO.replace("p4src/", str(REPO / "p4src") + "/"))
    runs = tmp_path / name
    assert cli.main(["sim", str(scenario), "--runs-dir", str(runs), *options]) == 0
    (out,) = (runs / "sweepy").iterdir()
    return out


def test_serial_and_parallel_runs_write_the_same_summary_byte_for_byte(tmp_path, capsys):
    first = simulated(tmp_path, "serial1", "--jobs", "1")
    second = simulated(tmp_path, "serial2", "--jobs", "1")
    parallel = simulated(tmp_path, "parallel", "--jobs", "3")
    out = capsys.readouterr().out
    summary = (first / "summary.json").read_bytes()
    assert (second / "summary.json").read_bytes() == summary
    assert (parallel / "summary.json").read_bytes() == summary
    names = list(json.loads(summary))
    assert names == ["load_balancing=ecmp", "load_balancing=spray_rr_entropy", "load_balancing=spray_random_entropy"]
    for variant in json.loads(summary).values():
        assert variant["messages_completed"] == variant["messages_planned"] == 16
        assert "wall_s" not in variant["simulator"]  # the machine's time: in result.json
    assert "progress: 3/3 variants done" in out
    for directory in (first, parallel):  # the report's wall-time column reads each variant's result.json
        report = (directory / "report.md").read_text()
        walls = [json.loads((d / "result.json").read_text())["wall_s"] for d in sorted(directory.iterdir())
                 if (d / "result.json").exists()]
        assert len(walls) == 3 and all(f" {w:.1f} |" in report for w in walls)


def test_a_local_dask_cluster_of_two_workers_gives_the_serial_results(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    serial = simulated(tmp_path, "serial", "--jobs", "1")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_port=0, host="127.0.0.1") as cluster:
        on_cluster = simulated(tmp_path, "cluster", "--cluster", cluster.scheduler_address)
        pids = sweep.run([sweep.Unit(pid_after, (0.5,)) for _ in range(4)], cluster=cluster.scheduler_address)
    assert len(set(pids)) == 2 and os.getpid() not in pids  # both workers, neither of them this process
    assert (on_cluster / "summary.json").read_bytes() == (serial / "summary.json").read_bytes()
    for run_dir in sorted(p for p in serial.iterdir() if p.is_dir()):  # the workers' files came back
        there = on_cluster / run_dir.name
        assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("*")) == \
            sorted(p.relative_to(there) for p in there.rglob("*"))
        assert (there / "records" / "h1.jsonl").read_bytes() == (run_dir / "records" / "h1.jsonl").read_bytes()
    assert "progress: 3/3 variants done" in capsys.readouterr().out


# -- the sweep itself ---------------------------------------------------------------------------------

def pid_after(delay_s: float) -> int:
    import time

    time.sleep(delay_s)
    return os.getpid()


def square_after(delay_s: float, x: int) -> int:
    import time

    time.sleep(delay_s)
    return x * x


def write_and_count(root, name: str, text: str) -> dict:
    (root / name).mkdir(parents=True)
    (root / name / "file.txt").write_text(text)
    return {"directory": name, "chars": len(text)}


class Refusal(TestbedError):
    def __init__(self, what: str, why: str) -> None:  # a constructor that pickle cannot call again
        super().__init__(f"{what}: {why}")


def square_once_reported(marker: str, x: int) -> int:
    """x squared, returned only once `marker` exists (the parent made it on reporting another
    unit) or after 60 s: which unit ends first is then the test's choice, not the scheduler's."""
    import time

    end = time.monotonic() + 60
    while marker and not os.path.exists(marker) and time.monotonic() < end:
        time.sleep(0.01)
    return x * x


def refuse(x: int) -> int:
    if x == 2:
        raise Refusal("unit 2", "refused on purpose")
    return x


def test_results_come_back_in_the_units_order_and_each_is_reported_once(tmp_path):
    marker = tmp_path / "unit-1-reported"
    units = [sweep.Unit(square_once_reported, (str(marker) if x == 0 else "", x)) for x in range(4)]
    seen = []

    def done(index, value):
        seen.append((index, value))
        if index == 1:
            marker.touch()  # unit 0 ends only now: its result can come back only after unit 1's report

    assert sweep.run(units, jobs=2, done=done) == [0, 1, 4, 9]
    assert sorted(seen) == [(0, 0), (1, 1), (2, 4), (3, 9)]
    assert seen.index((1, 1)) < seen.index((0, 0))  # reported as it ended, not all at the end in order
    assert sweep.run(units, jobs=1) == [0, 1, 4, 9]
    written = sweep.run([sweep.Unit(write_and_count, (f"u{i}", "x" * i)) for i in range(3)], jobs=2,
                        root=tmp_path / "out")
    assert [w["chars"] for w in written] == [0, 1, 2]
    assert (tmp_path / "out" / "u2" / "file.txt").read_text() == "xx"


def test_with_another_thread_running_the_workers_start_from_a_fork_server(monkeypatch):
    import multiprocessing
    import threading

    methods = []  # (Python threads running, the start method chosen)
    choose = sweep._start_method
    monkeypatch.setattr(sweep, "_start_method", lambda units: methods.append(
        (threading.active_count(), choose(units).get_start_method())) or multiprocessing.get_context(methods[-1][1]))
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert sweep.run([sweep.Unit(square_after, (0.0, x)) for x in range(3)], jobs=2) == [0, 1, 4]
    finally:
        stop.set()
        other.join()
    assert sweep.run([sweep.Unit(square_after, (0.0, x)) for x in range(3)], jobs=2) == [0, 1, 4]
    assert methods[0][1] == "forkserver"
    assert all(method == ("fork" if threads == 1 else "forkserver") for threads, method in methods)


def test_a_units_error_in_a_worker_reaches_the_user_as_its_one_line():
    with pytest.raises(TestbedError, match="^unit 2: refused on purpose$"):
        sweep.run([sweep.Unit(refuse, (x,)) for x in range(4)], jobs=2)


def test_jobs_must_be_a_whole_number_and_a_missing_cluster_is_one_line(tmp_path, capsys, monkeypatch):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.replace("p4src/", str(REPO / "p4src") + "/"))
    with pytest.raises(SystemExit):
        cli.main(["sim", str(scenario), "--jobs", "0"])
    assert "argument --jobs: '0' is not a whole number, 1 or more" in capsys.readouterr().err
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep, "CONNECT_TIMEOUT_S", 1.0)
    assert cli.main(["sim", str(scenario), "--cluster", "tcp://127.0.0.1:9", "--runs-dir", str(tmp_path)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("testbed: --cluster tcp://127.0.0.1:9: no Dask scheduler answers there (")
