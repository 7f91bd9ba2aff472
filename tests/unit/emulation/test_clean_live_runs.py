"""`testbed clean` leaves a live run alone and says whose it is; once the run's owner is gone
(killed, or from before the last boot) it removes what the run left, as before."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from testbed.cli import main
from testbed.emulation import cleanup, manifest as manifest_mod, runlock
from testbed.emulation.manifest import Manifest


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A registry and a run lock of the test's own."""
    monkeypatch.setattr(manifest_mod, "REGISTRY_DIR", tmp_path / "registry")
    monkeypatch.setattr(runlock, "LOCK_PATH", tmp_path / "run.lock")
    return tmp_path


OWNER = textwrap.dedent("""
    import subprocess, sys, time
    from pathlib import Path
    from testbed.emulation import manifest as m, runlock
    m.REGISTRY_DIR = Path(sys.argv[1]) / "registry"
    runlock.LOCK_PATH = Path(sys.argv[1]) / "run.lock"
    with runlock.hold_run_lock("testbed run live.yaml"):
        run = m.Manifest(run_id="live-run", path=Path(sys.argv[1]) / "manifest.json")
        run.claim()
        switch = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        run.add_process(switch.pid, "switch s1", switch.args)
        print(switch.pid, flush=True)
        time.sleep(60)
""")


def start_owner(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    switch_pid = int(owner.stdout.readline())
    return owner, switch_pid


def alive(pid: int) -> bool:
    return manifest_mod.process_start_time(pid) is not None


def test_a_live_run_is_left_running_and_named_and_cleaned_after_kill_9(machine, capsys):
    owner, switch_pid = start_owner(machine)
    try:
        assert main(["clean"]) == 0
        out = capsys.readouterr().out
        assert "live-run: left alone, the run is live" in out and f"pid {owner.pid}" in out
        assert "testbed run live.yaml" in out
        assert owner.poll() is None and alive(switch_pid)
        owner.kill()  # kill -9 of the run: its switch stays behind
        owner.wait()
        assert alive(switch_pid)
        assert main(["clean"]) == 0
        assert "live-run: removed 1 processes" in capsys.readouterr().out
        deadline = time.monotonic() + 5
        while alive(switch_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(switch_pid)
    finally:
        owner.kill()
        subprocess.run(["kill", "-9", str(switch_pid)], capture_output=True)


def test_force_without_a_terminal_kills_nothing(machine, capsys, monkeypatch):
    owner, switch_pid = start_owner(machine)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    try:
        assert main(["clean", "--force"]) == 0
        captured = capsys.readouterr()
        assert "no terminal to answer on" in captured.err and "left alone" in captured.out
        assert owner.poll() is None and alive(switch_pid)
    finally:
        owner.kill()
        subprocess.run(["kill", "-9", str(switch_pid)], capture_output=True)


def test_force_with_a_yes_stops_a_wedged_run(machine, capsys, monkeypatch):
    owner, switch_pid = start_owner(machine)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    try:
        assert main(["clean", "--force"]) == 0
        assert "live-run: removed 1 processes" in capsys.readouterr().out
        assert owner.poll() is None  # the owner is not on the manifest: only what the run started goes
    finally:
        owner.kill()
        subprocess.run(["kill", "-9", str(switch_pid)], capture_output=True)


def make(machine, name: str, **owner) -> Manifest:
    m = Manifest(run_id=name, path=machine / f"{name}.json", **owner)
    m.save()
    return m


def test_owner_gone_lock_free_or_before_boot_is_cleaned(machine):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    me = Manifest(run_id="x", path=machine / "x")
    me.claim()
    make(machine, "dead-owner", owner_pid=dead.pid, owner_start_time=12345, boot_id=me.boot_id)
    make(machine, "old-boot", owner_pid=me.owner_pid, owner_start_time=me.owner_start_time, boot_id="another boot")
    make(machine, "mine", owner_pid=me.owner_pid, owner_start_time=me.owner_start_time, boot_id=me.boot_id)
    with runlock.hold_run_lock("this test"):
        reports = {m.run_id: r for m, r in cleanup.clean_all()}
        assert reports["dead-owner"].live is None and reports["old-boot"].live is None
        assert "owner pid" in reports["mine"].live  # this process holds the lock and owns it
    reports = {m.run_id: r for m, r in cleanup.clean_all()}  # the lock free: nothing is in progress
    assert reports == {"mine": reports["mine"]} and reports["mine"].live is None
    assert cleanup.clean_all() == []


def test_a_manifest_with_no_owner_is_judged_by_the_lock(machine):
    make(machine, "legacy")
    with runlock.hold_run_lock("another run"):
        ((_, report),) = cleanup.clean_all()
        assert "names no owner" in report.live and "another run" in report.live
    ((_, report),) = cleanup.clean_all()
    assert report.live is None


def test_the_lock_holder_is_read_without_taking_it(machine):
    assert runlock.lock_holder() is None
    with runlock.hold_run_lock("testbed run a.yaml"):
        assert runlock.lock_holder()["what"] == "testbed run a.yaml"
    assert runlock.lock_holder() is None
    assert json.loads((machine / "run.lock").read_text() or "{}") == {}


def test_a_nested_registry_is_the_machines_to_clean_and_keeps_its_entries_own(machine, monkeypatch):
    """A test session registers in a registry nested in the machine's: the machine's `testbed clean`
    finds its runs, removes each entry where it was made, and a later session's orphan sweep
    cleans only the runs whose owner is gone."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    me = Manifest(run_id="x", path=machine / "x")
    me.claim()
    nested = manifest_mod.REGISTRY_DIR / "tests" / "session-1"
    monkeypatch.setattr(manifest_mod, "REGISTRY_DIR", nested)
    make(machine, "killed-session", owner_pid=dead.pid, owner_start_time=12345, boot_id=me.boot_id)
    make(machine, "running-session", owner_pid=me.owner_pid, owner_start_time=me.owner_start_time,
         boot_id=me.boot_id)
    assert sorted(p.name for p in nested.glob("*.path")) == ["killed-session.path", "running-session.path"]
    monkeypatch.setattr(manifest_mod, "REGISTRY_DIR", machine / "registry" / "tests" / "session-2")
    swept = cleanup.clean_orphans(machine / "registry" / "tests")
    assert [m.run_id for m, _ in swept] == ["killed-session"]
    assert [p.name for p in nested.glob("*.path")] == ["running-session.path"]
    monkeypatch.setattr(manifest_mod, "REGISTRY_DIR", machine / "registry")
    assert [p.name for p in manifest_mod.registered_manifests()] == ["running-session.json"]
    assert [m.run_id for m, r in cleanup.clean_all() if r.live is None] == ["running-session"]
    assert list(nested.glob("*.path")) == []
