"""Remove what a run's manifest lists, and nothing else, and never a live run's.

A run is live while its owner (the process that runs it, as its manifest
names it: pid, kernel start time, boot) is running in this boot and the
machine's run lock is held. A run whose manifest names no owner is judged
by the lock alone. A live run is listed and left, unless the caller
confirms (`testbed clean --force`, for a wedged run). Processes are killed
only when their pid still belongs to the process the run started (same
kernel start time); interfaces and namespaces only when they still exist
under the recorded name; a namespace's remaining processes are stopped
before it is deleted (whatever runs in a run's named namespace is the
run's).  Cleaning is idempotent.

A run over several servers (manifest.remote) is cleaned on each other
server too, with the same rules: this module runs there over ssh
(`python -m testbed.emulation.cleanup`, the part on its stdin, the report
on its stdout). A server that cannot be reached is a problem, and the
manifest stays for the next `testbed clean`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.emulation.manifest import (Manifest, ManifestError, ProcessRecord, current_boot_id, process_start_time,
                                        registered_manifests)
from testbed.emulation.runlock import lock_holder


@dataclass
class CleanReport:
    killed: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    live: str | None = None  # why the run was left alone (it is live), None when it was cleaned

    def empty(self) -> bool:
        return not (self.killed or self.interfaces or self.namespaces)


def _same_process(pid: int, start_time: int) -> bool:
    return process_start_time(pid) == start_time


def _running(pid: int, start_time: int) -> bool:
    """The listed process, still there and not a zombie (a zombie holds nothing: it waits for its reaper)."""
    if not _same_process(pid, start_time):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _kill(processes: list[ProcessRecord], report: CleanReport, deadline_s: float = 3.0) -> None:
    alive = [p for p in processes if _running(p.pid, p.start_time)]
    for record in alive:
        try:
            os.kill(record.pid, signal.SIGTERM)
            os.kill(record.pid, signal.SIGCONT)  # a stopped process (a stalled agent) acts on it too
        except ProcessLookupError:
            pass
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and any(_running(p.pid, p.start_time) for p in alive):
        time.sleep(0.05)
    for record in alive:
        if _running(record.pid, record.start_time):
            try:
                os.kill(record.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        report.killed.append(f"{record.role} (pid {record.pid})")
    end = time.monotonic() + deadline_s  # until the kernel has taken down what SIGKILL hit
    while time.monotonic() < end and any(_running(p.pid, p.start_time) for p in alive):
        time.sleep(0.05)


def _interface_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True)


def clean_manifest(manifest: Manifest) -> CleanReport:
    report = clean_part(manifest.processes, manifest.interfaces, manifest.namespaces)
    for login, part in manifest.remote.items():
        _clean_remote(login, part, report)
    if manifest.ssh_control_dir:
        _close_connections(manifest)
    if not report.problems:
        manifest.finished = True
        manifest.save()
        manifest.unregister()
    return report


def _clean_remote(login: str, part: dict, report: CleanReport) -> None:
    """Clean one other server's part there (see the module docstring); its findings join `report`."""
    from testbed.emulation.cluster import Runner
    from testbed.scenario.model import Server

    server = Server(**part["server"])
    runner = Runner(server, ssh_config=part.get("ssh_config"))
    document = json.dumps({k: part[k] for k in ("processes", "interfaces", "namespaces")})
    try:
        out = runner.run([sys.executable, "-m", "testbed.emulation.cleanup"], "clean this run's part",
                         stdin=document, cwd=Path(__file__).resolve().parents[2], timeout_s=120)
        found = json.loads(out.strip().splitlines()[-1])
    except Exception as error:  # an unreachable server leaves its part for the next clean
        report.problems.append(str(error).splitlines()[0] if str(error) else type(error).__name__)
        return
    report.killed += [f"{x} on {server.name}" for x in found["killed"]]
    report.interfaces += [f"{x} on {server.name}" for x in found["interfaces"]]
    report.namespaces += [f"{x} on {server.name}" for x in found["namespaces"]]
    report.problems += [f"{server.name}: {x}" for x in found["problems"]]


def _close_connections(manifest: Manifest) -> None:
    """End the run's shared ssh connections (a killed run leaves their masters idling) and remove
    the directory of their sockets."""
    import shutil

    from testbed.emulation.cluster import Runner
    from testbed.scenario.model import Server

    directory = Path(manifest.ssh_control_dir)
    if directory.is_dir():
        for part in manifest.remote.values():
            try:
                Runner(Server(**part["server"]), directory, part.get("ssh_config")).close()
            except Exception:  # noqa: BLE001 (no master, or ssh missing: nothing to end)
                pass
    shutil.rmtree(directory, ignore_errors=True)


def clean_part(processes: list[ProcessRecord], interfaces: list[str], namespaces: list[str]) -> CleanReport:
    """This machine's share of a run: its processes, interfaces and namespaces."""
    report = CleanReport()
    _kill(processes, report)
    existing_ns = set(_run(["ip", "netns", "list"]).stdout.split())
    _kill_in_namespaces([n for n in namespaces if n in existing_ns], report)
    for name in interfaces:
        if _interface_exists(name):
            result = _run(["ip", "link", "delete", name])
            if result.returncode == 0 or not _interface_exists(name):
                report.interfaces.append(name)
            else:
                report.problems.append(f"cannot delete interface {name}: {result.stderr.strip()}")
    for name in namespaces:
        if name in existing_ns:
            result = _run(["ip", "netns", "delete", name])
            if result.returncode == 0:
                report.namespaces.append(name)
            else:
                report.problems.append(f"cannot delete namespace {name}: {result.stderr.strip()}")
    return report


def _kill_in_namespaces(namespaces: list[str], report: CleanReport) -> None:
    """SIGKILL every process still in the run's named namespaces (they hold nothing else)."""
    for name in namespaces:
        pids = [int(p) for p in _run(["ip", "netns", "pids", name]).stdout.split() if p.isdigit()]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                report.killed.append(f"process in namespace {name} (pid {pid})")
            except ProcessLookupError:
                pass


def live_reason(manifest: Manifest, holder: dict | None) -> str | None:
    """Why the run is live (its owner runs it), or None when its owner is gone."""
    if holder is None:
        return None  # no run holds the lock: nothing is in progress
    lock = f"the run lock held by pid {holder.get('pid', '?')} ({holder.get('what', 'unknown')}" + (
        f", since {holder['since']})" if holder.get("since") else ")")
    if manifest.owner_pid is None:
        return f"its manifest names no owner and {lock}"
    if manifest.boot_id is not None and manifest.boot_id != current_boot_id():
        return None  # started before the last boot
    if manifest.owner_start_time is None or not _running(manifest.owner_pid, manifest.owner_start_time):
        return None  # its owner is dead
    return f"its owner pid {manifest.owner_pid} is running, with {lock}"


def clean_all(confirm=None, registry: Path | None = None) -> list[tuple[Manifest, CleanReport]]:
    """Clean every registered run (in `registry`, the machine's when None) whose owner is gone; a
    live one only when `confirm(manifest, why)` says yes (none given: never), else its report says
    why it was left."""
    results = []
    holder = lock_holder()
    for path in registered_manifests(registry):
        manifest = Manifest.load(path)
        why = live_reason(manifest, holder)
        if why is not None and not (confirm is not None and confirm(manifest, why)):
            results.append((manifest, CleanReport(live=why)))
            continue
        results.append((manifest, clean_manifest(manifest)))
    return results


def owner_gone(manifest: Manifest) -> bool:
    """The run's owner is known and no longer runs (it died, or it ran before the last boot)."""
    if manifest.owner_pid is None:
        return False
    if manifest.boot_id is not None and manifest.boot_id != current_boot_id():
        return True
    return manifest.owner_start_time is None or not _running(manifest.owner_pid, manifest.owner_start_time)


def clean_orphans(registry: Path) -> list[tuple[Manifest, CleanReport]]:
    """Clean the runs registered in `registry` whose owner is gone, and only those: whatever the
    run lock says, a run whose owner still runs (another session's, starting) is left alone."""
    results = []
    for path in registered_manifests(registry):
        try:
            manifest = Manifest.load(path)
        except ManifestError:
            continue
        if owner_gone(manifest):
            results.append((manifest, clean_manifest(manifest)))
    return results


def main() -> int:
    """Clean the part of a run given on stdin (JSON: processes, interfaces, namespaces) on this
    machine; print the report as one JSON line."""
    part = json.loads(sys.stdin.read())
    report = clean_part([ProcessRecord(**p) for p in part["processes"]], part["interfaces"], part["namespaces"])
    print(json.dumps({"killed": report.killed, "interfaces": report.interfaces, "namespaces": report.namespaces,
                      "problems": report.problems}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
