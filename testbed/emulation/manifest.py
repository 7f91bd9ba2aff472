"""The run manifest: what a run is about to create, written before it does.

`testbed clean` must remove exactly what runs created and nothing else,
also after `kill -9` of the run.  So every run records, before creating
anything, the interfaces and named namespaces it will make, and adds each
process it starts (pid plus its kernel start time, so that a recycled pid
is never killed).  A copy of the manifest's path is registered in
REGISTRY_DIR so `testbed clean` finds runs wherever their results live.
A run names its owner, the process that runs it (pid, kernel start time
and the boot it started in), so `testbed clean` can tell a live run from
one whose owner is gone.

A fabric spread over several servers records each other server's part
apart (`remote`, keyed by the server's ssh login): its processes (pid and
start time on that server), interfaces and namespaces, and the ssh client
configuration that reaches it, so `testbed clean` can remove them there.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from testbed.errors import TestbedError

REGISTRY_DIR = Path(os.environ.get("TESTBED_REGISTRY", "/run/testbed/manifests"))


class ManifestError(TestbedError):
    """A manifest that cannot be written or read."""


def current_boot_id() -> str | None:
    """This boot's id (a new one every boot), None where the kernel does not say."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def process_start_time(pid: int) -> int | None:
    """The kernel's start time of `pid` in clock ticks (field 22 of
    /proc/PID/stat), or None when the process does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces and parentheses.
    after_name = stat[stat.rindex(")") + 2:].split()
    return int(after_name[19])


@dataclass
class ProcessRecord:
    pid: int
    start_time: int
    role: str
    argv: list[str]


@dataclass
class Manifest:
    """Everything one run creates.  Interfaces are root-namespace names
    (deleting one end of a veth deletes the pair); host namespaces belong to
    the host processes and vanish with them."""

    run_id: str
    path: Path
    interfaces: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    processes: list[ProcessRecord] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    finished: bool = False
    owner_pid: int | None = None  # the process running the run (None: not recorded)
    owner_start_time: int | None = None
    boot_id: str | None = None  # /proc/sys/kernel/random/boot_id when the owner started it
    # other servers: login -> {"server": {name, address, user}, "ssh_config", "processes", "interfaces",
    # "namespaces"} (processes as ProcessRecord fields)
    remote: dict = field(default_factory=dict)
    ssh_control_dir: str | None = None  # the shared ssh connections' sockets (emulation/cluster.py)
    registry: str | None = None  # the registry it registered in (None: REGISTRY_DIR, as written before)

    def claim(self, pid: int | None = None) -> None:
        """Name the owner (this process by default): the run is live while it lives."""
        pid = os.getpid() if pid is None else pid
        self.owner_pid, self.owner_start_time, self.boot_id = pid, process_start_time(pid), current_boot_id()

    # -- persistence ---------------------------------------------------------
    def save(self) -> None:
        """Write atomically so a crash never leaves half a manifest; the first save names the
        registry (REGISTRY_DIR then) before the entry there is made."""
        if self.registry is None:
            self.registry = str(REGISTRY_DIR)
        data = asdict(self)
        data["path"] = str(self.path)
        tmp = self.path.with_suffix(".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(data, indent=2))
            os.replace(tmp, self.path)
        except OSError as error:
            raise ManifestError(f"cannot write run manifest {self.path}: {error.strerror}") from None
        self._register()

    def _register(self) -> None:
        """Once, atomically: a kill -9 must never leave a half-written entry."""
        if self.finished:
            return
        entry = Path(self.registry) / f"{self.run_id}.path"
        if entry.exists():
            return
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = entry.with_suffix(".tmp")
            tmp.write_text(str(self.path.resolve()))
            os.replace(tmp, entry)
        except OSError as error:
            raise ManifestError(f"cannot register run manifest in {entry.parent}: {error.strerror}") from None

    def unregister(self) -> None:
        """Remove the registry entry, where the run registered it (its cleaner's REGISTRY_DIR may
        be another: the machine's, or a later test session's)."""
        (Path(self.registry or REGISTRY_DIR) / f"{self.run_id}.path").unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        try:
            data = json.loads(Path(path).read_text())
            processes = [ProcessRecord(**p) for p in data.pop("processes", [])]
            data["path"] = Path(data["path"])
            return cls(processes=processes, **data)
        except (OSError, ValueError, TypeError, KeyError) as error:
            raise ManifestError(f"cannot read run manifest {path}: {error}") from None

    # -- recording -----------------------------------------------------------
    def add_server(self, server, ssh_config: str | None) -> None:
        """Name another server (model.Server) whose part this run records apart."""
        self.remote.setdefault(server.login, {
            "server": {"name": server.name, "address": server.address, "user": server.user},
            "ssh_config": ssh_config, "processes": [], "interfaces": [], "namespaces": []})
        self.save()

    def plan_interfaces(self, names: list[str], server: str | None = None) -> None:
        """Record interfaces before they are created (`server`: the login of another server)."""
        into = self.interfaces if server is None else self.remote[server]["interfaces"]
        into.extend(n for n in names if n not in into)
        self.save()

    def plan_namespaces(self, names: list[str], server: str | None = None) -> None:
        into = self.namespaces if server is None else self.remote[server]["namespaces"]
        into.extend(n for n in names if n not in into)
        self.save()

    def add_process(self, pid: int, role: str, argv: list[str], server: str | None = None,
                    start_time: int | None = None) -> None:
        """A process this run started: here, or on another server (`start_time` read there)."""
        if server is not None:
            self.remote[server]["processes"].append(asdict(ProcessRecord(pid, start_time, role, list(argv))))
            self.save()
            return
        start = process_start_time(pid)
        if start is None:
            return  # already gone: nothing to clean
        self.processes.append(ProcessRecord(pid, start, role, list(argv)))
        self.save()


def registered_manifests(registry: Path | None = None) -> list[Path]:
    """Manifests of runs that have not been cleaned: the entries of `registry` (REGISTRY_DIR when
    None) and of the registries nested in it (a test's own registry lives inside the machine's, so
    the runs of a killed test are the machine's to clean too)."""
    registry = REGISTRY_DIR if registry is None else registry
    if not registry.is_dir():
        return []
    paths = []
    for entry in sorted(registry.rglob("*.path")):
        text = entry.read_text().strip()
        target = Path(text) if text else None
        if target is not None and target.is_file():
            paths.append(target)
        else:
            entry.unlink(missing_ok=True)  # its run directory was deleted
    return paths
