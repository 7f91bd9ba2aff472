"""Starting switch processes for either target with one argv shape.

The builtin target (`python -m testbed.p4model.switch`) takes the same
command line as bmv2's `simple_switch_grpc`: common options before `--`,
target options after it.  So the only difference between the targets is
the executable and what the controller pushes as the device config.

A switch is ready when its process is alive and its P4Runtime port accepts
TCP connections; that is polled on a deadline, never slept for.  A switch
that dies first raises SwitchStartError with its exit code and log tail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.errors import TestbedError
from testbed.p4model.tls import ServerTls
from testbed.targets import BMV2_BINARY, bmv2_problem

# Switch processes run at a higher CPU priority than the hosts' agents: the
# switches' traffic managers are the clock of the emulated links, while an
# agent that runs late only sends a little later.  Only our own children
# are re-prioritised; nothing global changes.
SWITCH_NICE = -10



class SwitchStartError(TestbedError):
    """A switch process that could not be started or died during start-up."""


def resolve_target(target: str) -> str:
    """`auto` means bmv2 where it is usable (targets.bmv2_problem), otherwise builtin."""
    if target not in ("auto", "builtin", "bmv2"):
        raise SwitchStartError(f"unknown switch target {target!r} (expected auto, builtin or bmv2)")
    if target == "builtin":
        return target
    problem = bmv2_problem()
    if target == "auto":
        return "builtin" if problem else "bmv2"
    if problem:
        raise SwitchStartError(f"switch.target is bmv2, but {problem}; "
                               "use target: builtin (or auto), or run in the Vagrant lab")
    return target


@dataclass
class SwitchConfig:
    """Everything needed to start one switch process."""

    name: str
    target: str  # builtin | bmv2 (already resolved)
    device_id: int
    grpc_port: int
    thrift_port: int
    ports: dict[int, str]  # port number -> interface name
    log_file: Path
    cpu_port: int | None = None
    priority_queues: int = 1
    pcap_dir: Path | None = None
    log_level: str = "info"
    tm_commands: list[str] = field(default_factory=list)
    backend: str = "python"  # the builtin target's packet path (emulation/packet_path.py)
    # fabric process only: port -> (peer switch, peer port, the name its pcap files take)
    memory_links: dict[int, tuple[str, int, str]] = field(default_factory=dict)
    # builtin only: every port sampled by the switch process itself (t_s in wall-clock seconds);
    # a fabric process takes the interval from its switches' and writes its own file
    telemetry_file: Path | None = None
    telemetry_interval_s: float = 0.1
    # the address its gRPC and control ports listen on and the controller reaches it at
    address: str = "127.0.0.1"
    # switch.control_tls: the run's certificates (p4model/tls.ServerTls); None serves plain ports
    tls: ServerTls | None = None
    # builtin only: the P4Runtime server's roles (p4model/p4runtime/roles.py); bmv2 has none
    role_config: Path | None = None

    @property
    def grpc_addr(self) -> str:
        return f"{self.address}:{self.grpc_port}"

    def argv(self) -> list[str]:
        """The command line of this switch's own process."""
        if self.target == "bmv2":
            executable = [BMV2_BINARY]
        else:
            executable = [sys.executable, "-m", "testbed.p4model.switch"]
        return executable + self.options()

    def options(self) -> list[str]:
        """simple_switch_grpc's options for this switch (also its entry in a fabric spec)."""
        common = []
        for number, interface in sorted(self.ports.items()):
            common += ["-i", f"{number}@{interface}"]
        common += ["--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port),
                   "--log-file", str(self.log_file), "--log-level", self.log_level]
        if self.pcap_dir is not None:
            common += ["--pcap", str(self.pcap_dir)]
        common += ["--no-p4"]
        target = ["--grpc-server-addr", self.grpc_addr, "--priority-queues", str(self.priority_queues)]
        if self.cpu_port is not None:
            target += ["--cpu-port", str(self.cpu_port)]
        if self.tls is not None:  # bmv2's flags; the builtin target's TM control port takes them too
            target += ["--grpc-server-ssl", "--grpc-server-cert", str(self.tls.cert),
                       "--grpc-server-key", str(self.tls.key)]
            if self.tls.ca is not None:
                target += ["--grpc-server-cacert", str(self.tls.ca)]
            if self.tls.require_client_auth:
                target += ["--grpc-server-with-client-auth"]
        if self.target == "builtin":
            target += ["--backend", self.backend]
            for command in self.tm_commands:
                target += ["--tm", command]
            if self.role_config is not None:
                target += ["--p4rt-role-config", str(self.role_config)]
        return common + ["--"] + target

    def process_argv(self) -> list[str]:
        """options() plus what only a switch in its own process takes."""
        argv = self.argv()
        if self.target == "builtin" and self.telemetry_file is not None:
            argv += ["--telemetry-file", str(self.telemetry_file),
                     "--telemetry-interval", f"{self.telemetry_interval_s:g}"]
        return argv


def _raise_priority() -> None:
    """In the child before exec: a higher priority where allowed (root), else as is."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, SWITCH_NICE)
    except OSError:
        pass


def _port_open(port: int, address: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.2)
        return probe.connect_ex((address, port)) == 0


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


class _Process:
    """One running process of switches; `start()` returns at once, `wait_ready()` polls.
    With a `runner` (emulation/cluster.py) it runs on that runner's server: `process` is then the
    local handle that ends with it, `pid` its pid there."""

    name: str
    configs: list[SwitchConfig]
    log_file: Path
    runner = None

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.pid: int | None = None
        self.start_time: int | None = None  # on a runner's server: its kernel start time there
        self._stdout_path = self.log_file.with_suffix(".stdout")

    @property
    def local(self) -> bool:
        return self.runner is None or self.runner.local

    def argv(self) -> list[str]:
        raise NotImplementedError

    def _prepare(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        for config in self.configs:
            config.log_file.parent.mkdir(parents=True, exist_ok=True)
            if config.pcap_dir is not None:
                config.pcap_dir.mkdir(parents=True, exist_ok=True)

    def start(self, again: bool = False) -> int:
        """Start the process (`again`: a restart, which keeps the logs of the first run)."""
        self._prepare()
        argv = self.argv()
        if self.runner is not None:
            self.process, self.pid, self.start_time = self.runner.spawn(argv, self._stdout_path, append=again,
                                                                        nice=SWITCH_NICE)
            return self.pid
        with open(self._stdout_path, "ab" if again else "wb") as out:
            try:
                self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True,
                                                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                                preexec_fn=_raise_priority)
            except OSError as error:
                raise SwitchStartError(f"cannot start {self.name} ({argv[0]}): {error.strerror}") from None
        self.pid = self.process.pid
        return self.process.pid

    def wait_ready(self, deadline: float) -> None:
        """Poll until every switch's gRPC port accepts connections; raise with evidence on failure."""
        assert self.process is not None, "start() first"
        waiting = [c.grpc_port for c in self.configs]
        while waiting:
            code = self.process.poll()
            if code is not None:
                raise SwitchStartError(
                    f"{self.name} exited with code {code} during start-up; "
                    f"log {self.log_file}:\n{log_tail(self.log_file)}\n{log_tail(self._stdout_path)}")
            waiting = [port for port in waiting if not _port_open(port, self.configs[0].address)]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise SwitchStartError(
                    f"{self.name} did not open its gRPC port {waiting[0]} in time; "
                    f"log {self.log_file}:\n{log_tail(self._stdout_path)}")
            time.sleep(0.05)

    def death(self) -> SwitchStartError | None:
        """How it died, with the last lines of its output (None: still running, or never started).
        A run asks when a switch stops answering: the process's own last words name the cause."""
        code = None if self.process is None else self.process.poll()
        if code is None:
            return None
        return SwitchStartError(f"{self.name} exited with code {code}; its output {self._stdout_path} ends:\n"
                                f"{log_tail(self._stdout_path, 5)}")

    def kill(self) -> int | None:
        """Stop it as a crash does (SIGKILL): at once, nothing flushed."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        if self.runner is not None and not self.runner.local:
            self._signal_remote("KILL")
        self.process.kill()
        return self.process.wait()

    def _signal_remote(self, signal_name: str) -> None:
        """Signal the process on its server, if it is still the one started (pid and start time)."""
        check = f"[ \"$(awk '{{print $22}}' /proc/{self.pid}/stat 2>/dev/null)\" = {self.start_time} ]"
        self.runner.run(["sh", "-c", f"{check} && kill -{signal_name} {self.pid}; true"],
                        f"stop {self.name}", check=False, timeout_s=20)

    def stop(self, timeout_s: float = 5.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        remote = self.runner is not None and not self.runner.local
        if remote:
            self._signal_remote("TERM")  # the local handle (ssh) ends with it and says its exit code
        else:
            self.process.terminate()
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            if remote:
                self._signal_remote("KILL")
            self.process.kill()
            return self.process.wait()


class SwitchProcess(_Process):
    """One switch in a process of its own (either target)."""

    def __init__(self, config: SwitchConfig) -> None:
        self.config = config
        self.name = f"switch {config.name}"
        self.configs = [config]
        self.log_file = config.log_file
        self.telemetry_file = config.telemetry_file if config.target == "builtin" else None
        super().__init__()

    def argv(self) -> list[str]:
        return self.config.process_argv()


class FabricProcess(_Process):
    """Several builtin switches in one `testbed fabric` process (testbed/p4model/fabric):
    one event loop, cables between them in memory; the spec is written next to the logs."""

    def __init__(self, index: int, configs: list[SwitchConfig], directory: Path) -> None:
        self.index = index
        self.name = f"fabric{index}"
        self.configs = configs
        self.log_file = directory / f"{self.name}.log"
        self.spec_path = directory / f"{self.name}.json"
        self.telemetry_file = directory / f"{self.name}.telemetry.jsonl"  # every port every 100 ms
        super().__init__()

    def spec(self) -> dict:
        interval = self.configs[0].telemetry_interval_s if self.configs else 0.1
        return {"log_file": str(self.log_file), "telemetry_file": str(self.telemetry_file),
                "telemetry_interval_s": interval, "switches": [
            {"name": c.name, "argv": c.options(),
             "links": {str(port): {"peer": peer, "peer_port": peer_port, "name": name}
                       for port, (peer, peer_port, name) in sorted(c.memory_links.items())}}
            for c in self.configs]}

    def _prepare(self) -> None:
        super()._prepare()
        self.spec_path.write_text(json.dumps(self.spec(), indent=1))

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "testbed.p4model.fabric", str(self.spec_path)]

    def stop(self, timeout_s: float | None = None) -> int | None:
        """Given time to stop every switch's servers and flush every pcap (40 switches: seconds)."""
        return super().stop(timeout_s if timeout_s is not None else 10.0 + 0.25 * len(self.configs))


def start_all(processes: list[_Process], timeout_s: float = 60.0, on_started=None) -> None:
    """Start every switch process at once, then wait for all: start-up runs in parallel."""
    for process in processes:
        pid = process.start()
        if on_started is not None:
            on_started(process, pid)
    deadline = time.monotonic() + timeout_s
    for process in processes:
        process.wait_ready(deadline)
