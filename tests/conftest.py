"""Shared test configuration: markers that skip with a clear reason, and a test session's own
machine state.

A test leaves the machine as it found it: the session points the places a run writes and the
next run reads at a directory of its own before any test imports testbed (`pytest_configure`):
the calibration the capacity check plans with (TESTBED_CALIBRATION, read by
testbed.scenario.capacity) and the default directory of run results (TESTBED_RUNS_DIR, the
commands' --runs-dir). Subprocesses inherit both. Each process of a session (an xdist worker too)
has its own; the directory goes when the process ends. The run lock stays the machine's: a fabric
test must not run beside a user's run. The session's runs register in a registry of its own
nested in the machine's (TESTBED_REGISTRY, `<machine registry>/tests/session-<pid>`; a test that
needs its own nests one more level), so `testbed clean` finds a killed session's runs like any
other, and a session first cleans the runs an earlier, killed session left there (their owners
are gone): a killed suite never breaks the next one with interfaces of its runs.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

SESSION_PLACES = {"TESTBED_CALIBRATION": "calibration.json", "TESTBED_RUNS_DIR": "runs"}
_session_dir: Path | None = None
_session_registry: Path | None = None
LEFT_BY_KILLED_SESSIONS: list[str] = []  # what the session's start cleaned, for the summary


def pytest_configure(config):
    global _session_dir, _session_registry
    _session_dir = Path(tempfile.mkdtemp(prefix="testbed-tests-"))
    for variable, name in SESSION_PLACES.items():
        os.environ[variable] = str(_session_dir / name)
    import sys

    capacity = sys.modules.get("testbed.scenario.capacity")  # already imported (a plugin): follow too
    if capacity is not None:
        capacity.CALIBRATION_PATH = Path(os.environ["TESTBED_CALIBRATION"])
    from testbed.emulation import cleanup, manifest

    tests_registry = manifest.REGISTRY_DIR / "tests"
    if "PYTEST_XDIST_WORKER" not in os.environ:  # once per session, by the process that leads it
        for found, report in cleanup.clean_orphans(tests_registry):
            what = report.interfaces + report.namespaces + report.killed
            if what:
                LEFT_BY_KILLED_SESSIONS.append(f"{found.run_id}: " + ", ".join(what))
        _remove_empty_directories(tests_registry)
    _session_registry = tests_registry / f"session-{os.getpid()}"
    manifest.REGISTRY_DIR = _session_registry
    os.environ["TESTBED_REGISTRY"] = str(_session_registry)


def _remove_empty_directories(root: Path) -> None:
    """Remove the directories under `root`, and `root`, that hold nothing (deepest first); one
    another session fills meanwhile stays."""
    if not root.is_dir():
        return
    for directory in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True) + [root]:
        try:
            directory.rmdir()
        except OSError:
            pass


def pytest_unconfigure(config):
    if _session_dir is not None:
        shutil.rmtree(_session_dir, ignore_errors=True)
    if _session_registry is not None:  # the session's runs were cleaned (teardowns): drop what is empty
        _remove_empty_directories(_session_registry.parent)


def pytest_terminal_summary(terminalreporter):
    if LEFT_BY_KILLED_SESSIONS:
        terminalreporter.section("cleaned first: runs a killed test session left on this machine")
        for line in LEFT_BY_KILLED_SESSIONS:
            terminalreporter.write_line(line)


def _integration_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "integration tests need root (network namespaces, Mininet)"
    try:
        import mininet  # noqa: F401
    except ImportError:
        return "integration tests need Mininet (Debian package 'mininet'; run 'make setup')"
    return None


def _bmv2_unavailable() -> str | None:
    from testbed.targets import bmv2_problem

    problem = bmv2_problem()
    return f"bmv2 tests need a usable bmv2: {problem} (the Vagrant lab installs one)" if problem else None


TESTS = Path(__file__).resolve().parent
ALONE_PLACES = ("integration", "bmv2")  # tests/<place>/: fabrics in real time, and their helpers' tests


@pytest.hookimpl(tryfirst=True)   # before -m selects on the marks
def pytest_collection_modifyitems(config, items):
    """Mark `alone` every test that runs a fabric in real time (those under tests/integration/ and
    tests/bmv2/, and any marked integration or bmv2; a test that measures a CPU share is marked
    by hand): `make test` runs the others in parallel, then these one at a time (-m "not alone",
    then -m alone), so each test is in one of the two. Skip a test whose marker's needs this
    machine lacks, with the reason."""
    for item in items:
        path = Path(str(item.path)).resolve()
        inside = any(path.is_relative_to(TESTS / place) for place in ALONE_PLACES)
        if inside or item.get_closest_marker("integration") or item.get_closest_marker("bmv2"):
            item.add_marker(pytest.mark.alone)
    reasons = {"integration": _integration_unavailable(), "bmv2": _bmv2_unavailable()}
    for item in items:
        for marker, reason in reasons.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def run_lock_held_elsewhere(tmp_path, monkeypatch):
    """A function that makes another process hold the machine's run lock (a lock file of this
    test's own) as `what`, returning that process; it is killed when the test ends."""
    import subprocess
    import sys

    from testbed.emulation import runlock

    lock = tmp_path / "run.lock"
    monkeypatch.setattr(runlock, "LOCK_PATH", lock)
    holders = []

    def hold(what: str):
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import time; from pathlib import Path; from testbed.emulation import runlock\n"
             f"runlock.LOCK_PATH = Path({str(lock)!r})\n"
             f"with runlock.hold_run_lock({what!r}):\n"
             "    print('held', flush=True); time.sleep(30)"],
            stdout=subprocess.PIPE, text=True)
        holders.append(holder)
        assert holder.stdout.readline().strip() == "held"
        return holder

    yield hold
    for holder in holders:
        holder.kill()
        holder.wait()
