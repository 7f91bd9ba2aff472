"""One fabric at a time on a machine, and a clear word when one is running.

Two runs would fight over interface names (`edge1_1-eth1`), ports and the
CPU. The first run holds an exclusive flock on /run/testbed/run.lock (the
lock dies with its process, so a killed run never blocks the next) and
writes who it is into the file; a second run is refused with one line
naming the first. The lock is re-entrant within a process: `testbed run`
holds it across all its variants and each variant takes it again.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from testbed.errors import TestbedError

LOCK_PATH = Path(os.environ.get("TESTBED_RUN_LOCK", "/run/testbed/run.lock"))
_held = {"fd": None, "depth": 0}


class RunInProgress(TestbedError):
    """Another run holds the machine."""


@contextmanager
def hold_run_lock(what: str):
    if _held["depth"]:
        _held["depth"] += 1
        try:
            yield
        finally:
            _held["depth"] -= 1
        return
    LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _describe(fd)
        os.close(fd)
        raise RunInProgress(f"another testbed run is in progress ({holder}); wait for it to finish "
                            f"or stop it (lock {LOCK_PATH})") from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"pid": os.getpid(), "what": what, "since": time.strftime("%H:%M:%S")}).encode())
    _held.update(fd=fd, depth=1)
    try:
        yield
    finally:
        _held.update(fd=None, depth=0)
        os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor releases the lock


def lock_holder() -> dict | None:
    """Who holds the run lock now ({"pid", "what", "since"}, fields missing when unreadable), or None
    when no process does. Takes nothing: a free lock is released at once."""
    if _held["fd"] is not None:
        return _read(_held["fd"]) or {"pid": os.getpid()}
    try:
        fd = os.open(LOCK_PATH, os.O_RDONLY)
    except OSError:
        return None  # no lock file: no run since boot (it lives in /run)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read(fd)
        os.close(fd)
        return holder
    os.close(fd)  # closing releases the shared lock just taken
    return None


def _read(fd: int) -> dict:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _describe(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {data['pid']}, {data['what']}, since {data['since']}"
    except (OSError, ValueError, KeyError):
        return "its details are unreadable"
