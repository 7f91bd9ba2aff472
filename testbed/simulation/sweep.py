"""A sweep: independent units of simulation run side by side, in processes of this machine or on a
Dask cluster that is already running.

Model: a unit (`Unit`) is one whole piece of work, a variant of `testbed sim`, a candidate of
`testbed tune` or an experiment of `testbed reproduce`: a module-level function and its arguments,
all picklable, that returns plain data (dicts, lists, strings, numbers). A unit that writes files
takes the directory to write under as its first argument (`root`), writes nothing outside it, and
names what it wrote relative to it.

Where the units run (`run`):

* `jobs` 1, or a single unit: in this process, one after the other, as before (each run's own
  progress task shows its cells).
* `jobs` N > 1: N worker processes of this machine (concurrent.futures.ProcessPoolExecutor). They
  are forked while the parent runs no other Python thread, else started by 'forkserver': a forked
  copy of a process with threads (a terminal display's refresh) can inherit a held lock. So a
  command may start them (`workers`) before it opens its display.
* `cluster` ADDRESS: the workers of the Dask scheduler there (`tcp://host:8786`), through
  dask.distributed's concurrent.futures executor. Its workers must import this same testbed
  (docs/cluster.md). A worker writes to its own disk, so a unit with a `root` runs in a temporary
  directory there and its files come back with its result as one gzip'd tar archive, unpacked under
  the parent's `root`. dask is imported on this path only.

The rule for what a sweep gives back: results in the units' order, whatever order they finished
in, so what the caller writes from them is what a serial run writes. `done(index, value)` is called
in the parent as each unit finishes (the caller's progress line and `Display.advance`). A worker
process has no progress display, so in parallel the display counts units done, not cells: no
figure is shown that the parent does not have.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import sys
import tarfile
import tempfile
import threading
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Sequence

from testbed.errors import TestbedError

CONNECT_TIMEOUT_S = 10.0  # a scheduler that does not answer in this long is not there
WORKERS_TIMEOUT_S = 30.0  # a scheduler with no worker after this long cannot run anything


@dataclass(frozen=True)
class Unit:
    """One unit of a sweep: `fn(*args)`, or `fn(root, *args)` in a sweep with a root."""

    fn: Callable[..., Any]
    args: tuple = field(default_factory=tuple)


def default_jobs() -> int:
    """One worker process per core of this machine."""
    return os.cpu_count() or 1


def add_options(parser) -> None:
    """--jobs and --cluster, as every sweeping command (sim, tune, reproduce) takes them."""
    from testbed.emulation.commands import whole_number_at_least_1

    parser.add_argument("--jobs", type=whole_number_at_least_1, default=default_jobs(), metavar="N",
                        help="run the units (variants, candidates, experiments) in N processes at once "
                             "(default: one per core, here %(default)s; 1: one after the other, in this process)")
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help="run them on the workers of the Dask scheduler at ADDRESS (tcp://host:8786), "
                             "whose workers run this same testbed (docs/cluster.md)")


@contextmanager
def workers(count: int, jobs: int = 1, cluster: str | None = None, modules: Sequence[str] = ()):
    """The worker processes for a sweep of `count` units, started now (for `run`'s `pool`); None when
    the units run in this process or on a cluster. A command opens them before its progress display,
    whose refresh thread on a terminal would rule out forking them. `modules`: the units' modules."""
    n = min(jobs, count)
    if cluster is not None or n <= 1:
        yield None
        return
    with ProcessPoolExecutor(n, mp_context=_start_method(modules), initializer=_in_worker) as pool:
        pool.submit(int).result()  # the workers exist from here on (forked now, under 'fork')
        yield pool


def run(units: Sequence[Unit], jobs: int = 1, cluster: str | None = None, root: Path | None = None,
        done: Callable[[int, Any], None] | None = None, pool: Executor | None = None) -> list:
    """Every unit's value, in the units' order (see the module's rule); `pool`, from `workers`, runs
    them in processes started before (else the sweep starts its own)."""
    units = list(units)
    report = done or (lambda index, value: None)
    root = None if root is None else Path(root).absolute()  # a worker's working directory may be another
    if cluster is not None:
        return _on_cluster(cluster, units, root, report)
    if pool is None:
        with workers(len(units), jobs, None, sorted({u.fn.__module__ for u in units})) as started:
            if started is not None:
                return run(units, jobs, None, root, done, started)
        values = []
        for index, unit in enumerate(units):
            values.append(unit.fn(root, *unit.args) if root is not None else unit.fn(*unit.args))
            report(index, values[-1])
        return values
    try:
        return _gather(pool, units, lambda u: pool.submit(_call, u.fn, u.args, root), report)
    except BrokenProcessPool as error:
        raise TestbedError(f"a worker process of the sweep died ({error}); run again with --jobs 1 "
                           "to see the unit's own error") from None


def _start_method(modules: Sequence[str]):
    """'fork' while this process runs no other Python thread (the workers start at once, with every
    module already imported); 'forkserver' otherwise, its server importing `modules` once."""
    if threading.active_count() == 1:
        sys.stdout.flush()  # a forked worker would write out what is still buffered a second time
        sys.stderr.flush()
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(modules))  # the server starts once, with a first sweep's list
    return context


def _in_worker() -> None:
    """A worker has no progress display of its own (a forked one would inherit the command's)."""
    from testbed import progress

    progress.forget_display()


def _call(fn, args: tuple, root: Path | None):
    """One unit, in whichever process runs it; a TestbedError comes back as a plain one (its message
    is all the user sees, and a subclass's own constructor may not unpickle)."""
    try:
        return fn(root, *args) if root is not None else fn(*args)
    except TestbedError as error:
        if type(error) is TestbedError:
            raise
        raise TestbedError(str(error)) from None


def _gather(pool: Executor, units: list[Unit], submit: Callable[[Unit], Future],
            report: Callable[[int, Any], None], received: Callable[[Any], Any] = lambda v: v) -> list:
    """Submit every unit, report each as it finishes, stop at the first error (the rest cancelled)."""
    futures = [submit(u) for u in units]
    index_of = {f: i for i, f in enumerate(futures)}
    values: list = [None] * len(futures)
    pending = set(futures)
    while pending:
        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
        for future in sorted(finished, key=index_of.__getitem__):
            error = future.exception()
            if error is not None:
                for other in pending:
                    other.cancel()
                raise error
            values[index_of[future]] = received(future.result())
            report(index_of[future], values[index_of[future]])
    return values


# -- a Dask cluster --------------------------------------------------------------------------------

def _on_cluster(address: str, units: list[Unit], root: Path | None, report) -> list:
    try:
        from distributed import Client
    except ImportError:
        raise TestbedError("--cluster: dask.distributed is not installed here (make setup installs it)") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError, TypeError) as error:
        raise TestbedError(f"--cluster {address}: no Dask scheduler answers there "
                           f"({type(error).__name__}: {error})") from None
    with client:
        try:
            client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except TimeoutError:
            raise TestbedError(f"--cluster {address}: the scheduler has no worker after "
                               f"{WORKERS_TIMEOUT_S:g} s") from None
        pool = client.get_executor(pure=False)  # every unit runs, even two with equal arguments
        values = _gather(pool, units, lambda u: pool.submit(_shipped, u.fn, u.args, root is not None), report,
                         lambda shipped: _received(shipped, root))
    return values


def _shipped(fn, args: tuple, writes: bool):
    """On a cluster worker: the unit's value, and (with a root) its files as a gzip'd tar archive."""
    if not writes:
        return _call(fn, args, None), None
    with tempfile.TemporaryDirectory(prefix="testbed-unit-") as tmp:
        value = _call(fn, args, Path(tmp))
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            for path in sorted(Path(tmp).rglob("*")):
                tar.add(path, arcname=path.relative_to(tmp).as_posix(), recursive=False)
    return value, archive.getvalue()


def _received(shipped, root: Path | None):
    """In the parent: the unit's files unpacked under `root`, its value returned."""
    value, archive = shipped
    if archive is not None and root is not None:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            members = tar.getmembers()
            for m in members:  # only the unit's own files and folders, below root
                name = PurePosixPath(m.name)
                if name.is_absolute() or ".." in name.parts or not (m.isfile() or m.isdir()):
                    raise TestbedError(f"--cluster: a worker sent back {m.name!r}, which is not a file "
                                       "below the sweep's directory")
            root.mkdir(parents=True, exist_ok=True)
            tar.extractall(root, members=members)
    return value
