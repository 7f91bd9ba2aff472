"""A run's host agents: which process runs which hosts, their start, readiness and end.

Model: an agent is one host's transport and workload (`testbed.host.agent`). A process runs one
agent (`testbed host`, started inside the host's namespace) or a group of them (`testbed hosts`:
one loop over all its members, each member's sockets opened in its own host's namespace).
A group wakes once for all its members where separate processes would each wake, cold.

Which hosts share a process is `testbed.scenario.agent_groups.agent_processes`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.emulation.switches import log_tail
from testbed.errors import TestbedError


class AgentStartError(TestbedError):
    """An agent process that ended, or was not ready, before the traffic's start."""


@dataclass
class AgentProcess:
    """One process of the run's agents and the hosts it runs."""

    name: str  # "agent h1" for one host, else the group's name
    hosts: list[str]
    popen: subprocess.Popen
    log: Path
    group_file: Path | None = None  # None: one host, `testbed host`

    @property
    def ready_line(self) -> str:
        return "agent ready" if self.group_file is None else "agents ready"


class AgentSet:
    """Starts the planned processes and follows them to their end.

    `member_argv[host]` is the option list of `testbed host` for that host; `start_in(host)`
    starts an argv inside the host's namespace (a Mininet node's popen); `netns(host)` names the
    file of its network namespace (/proc/PID/ns/net), which a group enters to open its sockets."""

    def __init__(self, agent_dir: Path, records: Path, repo_root: Path, realtime_priority: int) -> None:
        self.agent_dir = agent_dir
        self.records = records
        self.repo_root = repo_root
        self.realtime_priority = realtime_priority
        self.processes: list[AgentProcess] = []

    def start(self, plan: list[list[str]], member_argv: dict[str, list[str]], start_in, netns,
              on_start=None) -> None:
        """Start every process of `plan`; `on_start(pid, label, argv)` is told of each (the manifest)."""
        command = [sys.executable, "-m", "testbed.cli"]
        groups = 0
        for hosts in plan:
            if len(hosts) == 1:
                host = hosts[0]
                argv = command + ["host", *member_argv[host]]
                log_path = self.agent_dir / f"{host}.log"
                with open(log_path, "wb") as log:
                    popen = start_in(host, argv, log)
                process = AgentProcess(f"agent {host}", hosts, popen, log_path)
            else:
                groups += 1
                name = f"agents-{groups}"
                group_file = self.agent_dir / f"{name}.json"
                group_file.write_text(json.dumps({
                    "name": name, "realtime_priority": self.realtime_priority,
                    "members": [{"netns": netns(h), "argv": member_argv[h]} for h in hosts]}, indent=1))
                argv = command + ["hosts", "--group-file", str(group_file)]
                log_path = self.agent_dir / f"{name}.log"
                with open(log_path, "wb") as log:
                    popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.repo_root)
                process = AgentProcess(name, hosts, popen, log_path, group_file)
            self.processes.append(process)
            if on_start is not None:
                on_start(process.popen.pid, process.name, argv)

    def pids(self) -> dict[str, int]:
        """Each host's agent process id (what a fault signals)."""
        return {h: p.popen.pid for p in self.processes for h in p.hosts}

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Until every process says its agents are ready (their sockets bound): t=0 is set for all
        only then, since a sender that started before its receiver listened lost its first packets
        to a host without a listener."""
        deadline = time.monotonic() + timeout_s
        waiting = list(self.processes)
        while waiting:
            for process in list(waiting):
                if process.ready_line in process.log.read_text(errors="replace"):
                    waiting.remove(process)
                elif process.popen.poll() is not None:
                    raise AgentStartError(f"{process.name} ({', '.join(process.hosts)}) exited with code "
                                          f"{process.popen.returncode} before it was ready; log {process.log}: "
                                          f"{log_tail(process.log, 3)}")
            if waiting and time.monotonic() > deadline:
                raise AgentStartError(f"{', '.join(p.name for p in waiting)} not ready within {timeout_s:g} s")
            if waiting:
                time.sleep(0.02)

    def wait(self, deadline: float) -> tuple[dict[str, int], list[str]]:
        """Until every process ends, or `deadline` (monotonic): each host's exit code and the notes
        (a process stopped at the deadline). A member of a group has the group's code when its own
        record does not say it ended done or stopped, else 0."""
        codes: dict[str, int] = {}
        notes: list[str] = []
        for process in self.processes:
            try:
                code = process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.popen.terminate()
                code = process.popen.wait()
                notes.append(f"{process.name} did not finish in time and was stopped")
            for host in process.hosts:
                codes[host] = code if process.group_file is None else self._member_code(host, code)
        return codes, notes

    def _member_code(self, host: str, group_code: int) -> int:
        try:
            reason = json.loads((self.records / f"{host}.stats.json").read_text()).get("end_reason")
        except (OSError, ValueError, AttributeError):
            return group_code or 1  # a member that wrote no record did not end well
        return 0 if reason in ("done", "stopped") else (group_code or 3)

    def log_of(self, host: str) -> Path:
        return next(p.log for p in self.processes if host in p.hosts)

    def terminate(self) -> None:
        for process in self.processes:
            if process.popen.poll() is None:
                process.popen.terminate()


def namespace_file(pid: int) -> str:
    """The network namespace of the process `pid` (a Mininet host's shell) as a file a group enters."""
    path = f"/proc/{pid}/ns/net"
    if not os.path.exists(path):
        raise AgentStartError(f"no network namespace at {path}: the host's shell (pid {pid}) has ended")
    return path
