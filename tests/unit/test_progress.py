"""testbed.progress: live progress from real counters, in place on a terminal, plain lines otherwise."""

from __future__ import annotations

import io
import os
import re
import time
from pathlib import Path
from types import SimpleNamespace

from testbed import progress
from testbed.host.agent import PROGRESS_WIDTH, Agent

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^progress \[(?P<name>[^\]]+)\] (?P<done>\d+)/(?P<planned>\d+) messages, (?P<cells>\d+)/\d+ cells, ")


class TimedStream(io.StringIO):
    """Keeps when each line was written (time.monotonic)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line:
                self.lines.append((time.monotonic(), line))
        return super().write(text)

    def isatty(self) -> bool:
        return False


def test_a_simulator_run_prints_progress_lines_often_when_not_on_a_terminal():
    from testbed.scenario import expand_variants, load_scenario
    from testbed.simulation.run import simulate

    variant = next(v for v in expand_variants(load_scenario(REPO / "scenarios" / "default.yaml"))
                   if "spray" in v.name)
    stream = TimedStream()
    started = time.monotonic()
    with progress.display(1, "variants", stream=stream, interval_s=1.0) as shown:
        net, info = simulate(variant.scenario, label="spray")
        shown.advance("spray")
    ended = time.monotonic()
    assert stream.isatty() is False
    lines = [(t, line) for t, line in stream.lines if line.startswith("progress [spray]")]
    assert info["finished"]
    # one line a second of wall time while the simulator moves, and the last says where it ended
    assert ended - started < 2.5 or len(lines) >= 2, stream.getvalue()
    times = [started] + [t for t, _ in lines]
    assert max(b - a for a, b in zip(times, times[1:])) <= 2.5, stream.getvalue()
    counts = [LINE.match(line) for _, line in lines]
    assert all(counts), stream.getvalue()
    done = [int(m["done"]) for m in counts]
    assert done == sorted(done)  # the counters only grow
    from testbed.scenario.workload import scenario_messages

    planned = len(scenario_messages(variant.scenario))
    assert int(counts[-1]["planned"]) == planned and done[-1] == planned
    assert lines[-1][1].endswith("done")
    assert int(counts[-1]["cells"]) == net.progress_counts()[1] > 0
    assert "progress: 1/1 variants done (spray)" in stream.getvalue()


def test_plain_lines_come_at_the_interval_and_say_rate_and_rest():
    now = [0.0]
    stream = TimedStream()
    with progress.display(2, "runs", stream=stream, terminal=False, clock=lambda: now[0]) as shown:
        with progress.task("a", messages=10, cells=1000) as t:
            for second in range(1, 31):
                now[0] = float(second)
                t.update(messages=second // 3, cells=second * 30)
        shown.advance("a")
    lines = [line for _, line in stream.lines if line.startswith("progress [a]")]
    # every PLAIN_INTERVAL_S (5 s) of 30 s, and the end: never 10 s without a line
    assert len(lines) == 30 // progress.PLAIN_INTERVAL_S + 1, lines
    assert lines[0] == "progress [a] 1/10 messages, 150/1000 cells, 30 cells/s, 5 s elapsed, ~28 s left"
    assert lines[-1] == "progress [a] 10/10 messages, 900/1000 cells, 30 cells/s, 30 s elapsed, done"
    assert "progress: 1/2 runs done (a), 30 s elapsed, ~30 s left" in stream.getvalue()


def test_a_run_that_ends_short_says_so():
    stream = TimedStream()
    with progress.display(stream=stream, terminal=False):
        with progress.task("b", messages=4, cells=40) as t:
            t.update(3, 30)
    assert stream.lines[-1][1].endswith("ended with 1 messages not delivered")


def test_without_a_display_a_task_is_none():
    with progress.task("c", 1, 1) as t:
        assert t is None


def test_on_a_terminal_bars_are_drawn_and_each_run_ends_with_its_line():
    stream = io.StringIO()
    with progress.display(1, "variants", stream=stream, terminal=True) as shown:
        with progress.task("v1", 2, 20) as t:
            t.update(1, 10)
            t.update(2, 20)
        shown.advance()
    out = stream.getvalue()
    assert "\x1b[" in out  # drawn with terminal control sequences
    assert "[v1] 2/2 messages, 20/20 cells" in out


def test_emulated_runs_are_counted_from_the_agents_counter_files(tmp_path):
    """The emulated path's source: each agent's --progress-file, summed; a torn or older read never
    makes the counts go back."""
    files = [tmp_path / "h1.progress", tmp_path / "h2.progress"]
    stream = TimedStream()
    with progress.display(stream=stream, terminal=False, interval_s=0.0):
        with progress.task("emu", messages=4, cells=100) as t:
            poller = progress.FilePoller(t, files, period_s=0.01)
            poller.poll()
            assert (t.messages, t.cells) == (0, 0)  # no file yet
            files[0].write_text("1 30".ljust(PROGRESS_WIDTH - 1) + "\n")
            files[1].write_text("2 45".ljust(PROGRESS_WIDTH - 1) + "\n")
            poller.poll()
            assert (t.messages, t.cells) == (3, 75)
            files[1].write_text("2")  # caught half-written
            poller.poll()
            assert (t.messages, t.cells) == (3, 75)
            poller.start()
            files[0].write_text("2 55".ljust(PROGRESS_WIDTH - 1) + "\n")
            time.sleep(0.1)
            poller.stop()
            assert (t.messages, t.cells) == (4, 100)
    assert stream.lines[-1][1].startswith("progress [emu] 4/4 messages, 100/100 cells")


def test_the_agent_writes_its_counters_in_place(tmp_path):
    path = tmp_path / "h1.progress"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    fake = SimpleNamespace(ep=SimpleNamespace(in_order_cells=123456), local_ep=SimpleNamespace(in_order_cells=4),
                           runner=SimpleNamespace(received={("h2", 1), ("h3", 1)}))
    Agent.report_progress(fake, fd)
    fake.ep.in_order_cells = 7
    fake.runner.received = set()
    Agent.report_progress(fake, fd)  # shorter numbers overwrite the longer ones entirely
    os.close(fd)
    assert len(path.read_bytes()) == PROGRESS_WIDTH
    assert progress.read_counter_file(path) == (0, 11)


def test_a_display_opened_inside_another_draws_through_it():
    stream = io.StringIO()
    with progress.display(1, "confirmations", stream=stream, terminal=True) as outer:
        with progress.display(2, "variants", stream=io.StringIO(), terminal=True) as inner:
            assert progress.current() is inner
            with progress.task("v", 1, 10) as t:
                t.update(1, 10)
            inner.advance("v")
        assert progress.current() is outer
        outer.advance()
    out = stream.getvalue()
    assert "[v] 1/1 messages, 10/10 cells" in out and "progress: 1/2 variants done (v)" in out


def test_real_agents_counter_files_feed_a_run_task(tmp_path):
    """Two `testbed host` agents on loopback with --progress-file, polled as an emulated run polls
    them: the task ends with every planned message and cell counted."""
    import json
    import subprocess
    import sys

    from testbed.host import workloads

    hosts = {"h1": "127.0.0.9", "h2": "127.0.0.10"}
    wl = workloads.combine([workloads.MessageSpec("h1", "h2", 0, 30_000)],
                           [workloads.MessageSpec("h2", "h1", 0, 10_000)])
    (tmp_path / "peers.json").write_text(json.dumps(hosts))
    (tmp_path / "wl.json").write_text(json.dumps({"seed": 3, "messages": [m.to_json() for m in wl]}))
    files = [tmp_path / f"{n}.progress" for n in hosts]
    stream = TimedStream()
    with progress.display(stream=stream, terminal=False):
        with progress.task("loopback", len(wl), progress.planned_cells(wl, 1024)) as t:
            poller = progress.FilePoller(t, files, period_s=0.05).start()
            procs = [subprocess.Popen(
                [sys.executable, "-m", "testbed.cli", "host", "--name", n, "--addr", a,
                 "--peers-file", str(tmp_path / "peers.json"), "--workload-file", str(tmp_path / "wl.json"),
                 "--cc", "tita", "--cell-size", "1024", "--link-rate-mbps", "20", "--records", str(tmp_path / "rec"),
                 "--progress-file", str(tmp_path / f"{n}.progress"), "--grace-s", "0.3", "--timeout-s", "20"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n, a in hosts.items()]
            outs = [p.communicate(timeout=60) for p in procs]
            poller.stop()
            assert [p.returncode for p in procs] == [0, 0], outs
            assert (t.messages, t.cells) == (2, 30 + 10) == (t.planned_messages, t.planned_cells)
    assert stream.lines[-1][1].startswith("progress [loopback] 2/2 messages, 40/40 cells")
