"""What a run may have left on this machine: processes by their command lines, and the parts
(processes, interfaces, namespaces) a manifest lists for each server."""

from __future__ import annotations

import os
from pathlib import Path


def processes_mentioning(text: str) -> list[str]:
    """Processes (other than this one) whose command line contains `text`, as 'pid: command'."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and pid != str(os.getpid()):
            found.append(f"{pid}: {cmdline[:200]}")
    return found


def assert_parts_gone(parts: list[dict]) -> None:
    """Every process, interface and namespace each manifest part lists is gone from this machine."""
    from testbed.emulation.cleanup import _running

    for part in parts:
        for record in part["processes"]:
            assert not _running(record["pid"], record["start_time"]), f"{record['role']} left running"
        for name in part["interfaces"]:
            assert not Path(f"/sys/class/net/{name}").exists(), f"interface {name} left behind"
        for name in part["namespaces"]:
            assert not Path(f"/var/run/netns/{name}").exists(), f"namespace {name} left behind"
