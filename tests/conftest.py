"""Shared test configuration: markers that skip with a clear reason."""

import os

import pytest


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


def pytest_collection_modifyitems(config, items):
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
