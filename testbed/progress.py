"""Live progress of long work: one display per command, one task per simulation or emulated run.

Model: a command opens a `Display` (`with display(total, label) as d:`), which is the current one
for the code it calls; a step that moves traffic (the simulator's `simulate`, an emulated run's
traffic) asks `current()` for it and opens a `Task` of the messages and DATA cells it plans. The
step feeds the task real counters (messages delivered, DATA cells delivered in order) as it goes;
nothing is estimated from elapsed time alone:

* messages done of planned, as counted;
* cells per second over the last `RATE_WINDOW_S` seconds of the task's own samples;
* elapsed wall time, and the rest as the cells still to deliver over that rate (none before a
  rate is known).

The overall count (`Display.advance`) is the command's experiments or variants done of planned.

On a terminal the display is drawn in place (rich's live progress bars); otherwise (CI logs,
pipes, files) it is plain lines, one per task at most every `interval_s` seconds and one when a
task ends, so a log shows the work moving at a steady pace without repainting.

Without a current display, `current()` is None and steps run silently as before. A display opened
while another is current (a command run by another: testbed tune --confirm's emulated runs) draws
nothing of its own: its tasks go to the outer one, and its overall count is said in plain lines.
"""

from __future__ import annotations

import contextvars
import math
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, TextIO

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

RATE_WINDOW_S = 5.0  # the cells-per-second window
PLAIN_INTERVAL_S = 5.0  # a non-terminal display's lines per task, at most this far apart while it moves

_current: contextvars.ContextVar["Display | None"] = contextvars.ContextVar("testbed_progress", default=None)


def current() -> "Display | None":
    """The display the running command opened, or None."""
    return _current.get()


def forget_display() -> None:
    """No current display from here on: a sweep's forked worker process, whose parent draws."""
    _current.set(None)


def planned_cells(messages, cell_size: int) -> int:
    """DATA cells a workload plans: each message framed (payload and trailer) in cells of `cell_size` bytes."""
    from testbed.cells.segment import TRAILER_LEN, cell_count

    return sum(cell_count(m.size_bytes + TRAILER_LEN, cell_size) for m in messages)


def _duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Task:
    """One run's progress: messages and DATA cells planned, and the counters as they grow."""

    def __init__(self, display: "Display", name: str, messages: int, cells: int) -> None:
        self.display, self.name = display, name
        self.planned_messages, self.planned_cells = messages, max(1, cells)
        self.messages = self.cells = 0
        self.started = display.clock()
        self._samples: deque[tuple[float, int]] = deque([(self.started, 0)])
        self.finished = False
        self._rich_id = None

    @property
    def elapsed_s(self) -> float:
        return self.display.clock() - self.started

    def cells_per_s(self) -> float | None:
        """Cells delivered per second over the last RATE_WINDOW_S of samples (None before two samples)."""
        t0, c0 = self._samples[0]
        t1, c1 = self._samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else None

    def remaining_s(self) -> float | None:
        """The cells still to deliver at the recent rate; None while no cell has moved recently."""
        rate = self.cells_per_s()
        if self.finished:
            return 0.0
        if not rate:
            return None
        return max(0, self.planned_cells - self.cells) / rate

    def update(self, messages: int, cells: int) -> None:
        """The counters now: messages done and DATA cells delivered (both only grow)."""
        now = self.display.clock()
        self.messages, self.cells = messages, cells
        self._samples.append((now, cells))
        while len(self._samples) > 2 and now - self._samples[1][0] >= RATE_WINDOW_S:
            self._samples.popleft()
        self.display._changed(self)

    def finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.display._changed(self)
            self.display._ended(self)

    def _end(self) -> str:
        missing = self.planned_messages - self.messages
        return "done" if missing <= 0 else f"ended with {missing} messages not delivered"

    def line(self) -> str:
        rate = self.cells_per_s()
        rest = self._end() if self.finished else f"~{_duration(self.remaining_s())} left"
        return (f"[{self.name}] {self.messages}/{self.planned_messages} messages, "
                f"{self.cells}/{self.planned_cells} cells, "
                f"{'?' if rate is None else f'{rate:,.0f}'} cells/s, {_duration(self.elapsed_s)} elapsed, {rest}")


class _Counts(ProgressColumn):
    def render(self, task) -> Text:
        t = task.fields.get("task")
        if t is None:  # the overall bar
            return Text(f"{int(task.completed)}/{int(task.total or 0)} {task.fields.get('unit', '')}")
        rate = t.cells_per_s()
        return Text(f"{t.messages}/{t.planned_messages} msgs  "
                    f"{'?' if rate is None else f'{rate:,.0f}'} cells/s")


class _Rest(ProgressColumn):
    def render(self, task) -> Text:
        t = task.fields.get("task")
        if t is None:
            rest = task.fields.get("rest")
            return Text("" if rest is None else f"~{_duration(rest)} left")
        return Text(t._end() if t.finished else f"~{_duration(t.remaining_s())} left")


class Display:
    """A command's progress: its overall count of `total` `unit` and a task per run inside it."""

    def __init__(self, total: int | None = None, unit: str = "runs", stream: TextIO | None = None,
                 terminal: bool | None = None, interval_s: float = PLAIN_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.total, self.unit, self.done = total, unit, 0
        self.interval_s, self.clock = interval_s, clock
        self.started = clock()
        self._printed: dict[int, float] = {}
        self._rich: Progress | None = None
        self._overall_id = None
        self._outer: Display | None = None

    # -- the command's side --------------------------------------------------------
    def __enter__(self) -> "Display":
        self._outer = current()
        if self._outer is not None:  # nested: the outer display draws (one live display at a time)
            self.stream, self.terminal = self._outer.stream, False
        elif self.terminal:
            self._rich = Progress(TextColumn("{task.description}", markup=False), BarColumn(bar_width=12), _Counts(),
                                  TimeElapsedColumn(), _Rest(), console=Console(file=self.stream, force_terminal=True),
                                  transient=False, refresh_per_second=4)
            self._rich.start()
            if self.total is not None:
                self._overall_id = self._rich.add_task("overall", total=self.total, unit=self.unit)
        self._token = _current.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _current.reset(self._token)
        if self._rich is not None:
            self._rich.stop()

    def advance(self, label: str = "") -> None:
        """One more of the command's `total` done."""
        self.done += 1
        if self._rich is not None and self._overall_id is not None:
            self._rich.update(self._overall_id, completed=self.done, rest=self.overall_remaining_s())
        elif self.total is not None:
            self._print(f"progress: {self.done}/{self.total} {self.unit} done{f' ({label})' if label else ''}, "
                        f"{_duration(self.clock() - self.started)} elapsed, "
                        f"~{_duration(self.overall_remaining_s())} left")

    def overall_remaining_s(self) -> float | None:
        """The runs left at the mean time of those done (None before the first)."""
        if not self.total or not self.done:
            return None
        return (self.clock() - self.started) / self.done * (self.total - self.done)

    def task(self, name: str, messages: int, cells: int) -> Task:
        if self._outer is not None:
            return self._outer.task(name, messages, cells)
        t = Task(self, name, messages, cells)
        if self._rich is not None:
            t._rich_id = self._rich.add_task(name, total=t.planned_cells, task=t)
        else:
            self._printed[id(t)] = t.started
        return t

    # -- tasks' side -----------------------------------------------------------------
    def _changed(self, t: Task) -> None:
        if self._rich is not None:
            self._rich.update(t._rich_id, completed=min(t.cells, t.planned_cells) if not t.finished
                              else t.planned_cells)
            return
        now = self.clock()
        if now - self._printed.get(id(t), t.started) >= self.interval_s:
            self._printed[id(t)] = now
            self._print("progress " + t.line())

    def _ended(self, t: Task) -> None:
        if self._rich is None:
            self._printed.pop(id(t), None)
            self._print("progress " + t.line())
        else:
            self._rich.remove_task(t._rich_id)
            self._print(t.line())

    def _print(self, line: str) -> None:
        if self._outer is not None:
            self._outer._print(line)
        elif self._rich is not None:  # above the live bars
            self._rich.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)


@contextmanager
def display(total: int | None = None, unit: str = "runs", **kwargs):
    """`with display(len(variants), "variants") as d:` ... `d.advance()` after each."""
    with Display(total, unit, **kwargs) as d:
        yield d


@contextmanager
def task(name: str, messages: int, cells: int):
    """A task of the current display, finished on leaving; None when no display is open."""
    d = current()
    if d is None:
        yield None
        return
    t = d.task(name, messages, cells)
    try:
        yield t
    finally:
        t.finish()


def read_counter_file(path: Path) -> tuple[int, int]:
    """One agent's "messages cells" line (host.agent's --progress-file); (0, 0) while absent or torn."""
    try:
        fields = path.read_text().split()
        return (int(fields[0]), int(fields[1])) if len(fields) == 2 else (0, 0)
    except (OSError, ValueError):
        return 0, 0


class FilePoller:
    """Feeds a task the sums of counter files (one per agent) every `period_s` on a thread of its own,
    until stopped; the last read is kept per file, so a file caught being rewritten never goes back."""

    def __init__(self, shown: Task, paths: list[Path], period_s: float = 1.0) -> None:
        self.task, self.paths, self.period_s = shown, list(paths), period_s
        self._last: dict[Path, tuple[int, int]] = {p: (0, 0) for p in self.paths}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress-poller", daemon=True)

    def poll(self) -> None:
        for p in self.paths:
            messages, cells = read_counter_file(p)
            old = self._last[p]
            self._last[p] = (max(old[0], messages), max(old[1], cells))
        self.task.update(sum(m for m, _ in self._last.values()), sum(c for _, c in self._last.values()))

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.poll()

    def start(self) -> "FilePoller":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()
