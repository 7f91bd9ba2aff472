"""Commands on the servers of a fabric spread over several machines (`placement.servers`).

A `Runner` runs a command on one server, as Mininet's cluster edition does
(mininet/examples/cluster.py, RemoteMixin): the server `localhost` runs it
here, any other over ssh with validate's options (servers.ssh_command:
BatchMode, ConnectTimeout, accept-new host keys, TESTBED_SSH_CONFIG) and one
shared connection per server (ControlMaster/ControlPath in a directory of
the run), so that hundreds of commands cost one login. A command runs in
`cwd` when given; stdin is closed unless the caller passes one.

A process started with `spawn` tells its pid and kernel start time on its
first line of output (the shell that starts it prints them, then execs it
with its output sent to a log file on the server), so the run's manifest can
name it on its own server and `testbed clean` can stop exactly that process.

Every server sees the run directory and the repository at the same paths as
this machine (docs/cluster.md): its processes read and write their files
there. `check_shared` proves it before anything is built.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import uuid
from pathlib import Path

from testbed.errors import TestbedError
from testbed.scenario.servers import is_local, ssh_command

COMMAND_TIMEOUT_S = 60.0


class ServerCommandError(TestbedError):
    """A command on a server that failed; names the server, the command and its output."""


class Runner:
    """Runs commands on one server (see the module docstring)."""

    def __init__(self, server, control_dir: Path | None = None, ssh_config: str | None = None) -> None:
        self.server = server
        self.local = is_local(server)
        self.control_dir = control_dir
        self.ssh_config = ssh_config

    @property
    def label(self) -> str:
        return f"server {self.server.name} ({self.server.login})"

    def _ssh_options(self) -> tuple[str, ...]:
        if self.control_dir is None:
            return ()
        return ("-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_dir}/%C", "-o", "ControlPersist=60")

    def wrap(self, argv: list[str], cwd: Path | str | None = None) -> list[str]:
        """The local argv that runs `argv` on the server (itself on `localhost`; cwd is then Popen's)."""
        if self.local:
            return list(argv)
        command = shlex.join(str(a) for a in argv)
        if cwd is not None:
            command = f"cd {shlex.quote(str(cwd))} && exec {command}"
        return ssh_command(self.server, command, options=self._ssh_options(), config=self.ssh_config)

    def popen(self, argv: list[str], cwd: Path | str | None = None, **params) -> subprocess.Popen:
        params.setdefault("stdin", subprocess.DEVNULL)
        if self.local:
            return subprocess.Popen(list(argv), cwd=cwd, **params)
        return subprocess.Popen(self.wrap(argv, cwd), **params)

    def run(self, argv: list[str], what: str, stdin: str | None = None, cwd: Path | str | None = None,
            timeout_s: float = COMMAND_TIMEOUT_S, check: bool = True) -> str:
        """Run to the end; its output (stdout and stderr). ServerCommandError when it fails and `check`."""
        try:
            done = subprocess.run(self.wrap(argv, cwd), cwd=cwd if self.local else None, input=stdin,
                                  stdin=None if stdin is not None else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ServerCommandError(f"{self.label}: cannot {what}: no answer within {timeout_s:g} s") from None
        except OSError as error:
            raise ServerCommandError(f"{self.label}: cannot {what}: {error.strerror}") from None
        if check and done.returncode != 0:
            said = " ".join(done.stdout.split())[-400:] or "no output"
            raise ServerCommandError(f"{self.label}: cannot {what}: {shlex.join(argv)[:120]} exited with "
                                     f"{done.returncode}: {said}")
        return done.stdout

    def script(self, text: str, what: str, timeout_s: float = COMMAND_TIMEOUT_S) -> str:
        """A shell script (sh -e) run on the server in one command."""
        return self.run(["sh", "-e", "-s"], what, stdin=text, timeout_s=timeout_s)

    def spawn(self, argv: list[str], log: Path, append: bool = False, cwd: Path | str | None = None,
              nice: int = 0) -> tuple[subprocess.Popen, int, int]:
        """Start `argv` on the server with its output in `log` (a path on the server); returns the
        local handle (it ends when the process does), the process's pid on its server and its kernel
        start time there."""
        redirect = ">>" if append else ">"
        prefix = f"nice -n {nice} " if nice else ""
        # $$ is the shell that execs argv: the same pid and start time as the process itself
        text = (f"echo $$ $(awk '{{print $22}}' /proc/$$/stat); exec {prefix}\"$@\" {redirect}"
                f"{shlex.quote(str(log))} 2>&1")
        handle = self.popen(["sh", "-c", text, "sh", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = handle.stdout.readline()  # ssh's ConnectTimeout bounds the wait
        if len(line.split()) != 2 or not all(x.isdigit() for x in line.split()):
            handle.kill()
            _, err = handle.communicate()
            raise ServerCommandError(f"{self.label}: cannot start {Path(argv[0]).name}: "
                                     f"{' '.join((line + err).split())[-300:] or 'no output'}")
        pid, start = (int(x) for x in line.split())
        return handle, pid, start

    def close(self) -> None:
        """End the shared connection (its sessions end with it)."""
        if self.local or self.control_dir is None:
            return
        subprocess.run(ssh_command(self.server, options=self._ssh_options() + ("-O", "exit"),
                                   config=self.ssh_config),
                       capture_output=True, timeout=15)


def control_directory(run_dir: Path) -> Path:
    """Where the shared connections' sockets live: in the run directory when its path is short
    enough for a Unix socket (108 bytes; ssh's %C and its temporary suffix add 58), else under
    /run/testbed."""
    candidate = run_dir / "ssh"
    if len(str(candidate.resolve())) > 40:
        candidate = Path("/run/testbed/ssh") / uuid.uuid4().hex[:12]
    candidate.mkdir(parents=True, exist_ok=True)
    candidate.chmod(0o700)
    return candidate


def check_shared(runners: list[Runner], run_dir: Path, repo_root: Path, python: str) -> None:
    """Every server reaches its shell, sees this run's directory (a fresh token file in it) and has
    the testbed's Python at this machine's path; ServerCommandError naming the first that does not."""
    token = run_dir / f".shared-{uuid.uuid4().hex[:8]}"
    token.write_text(token.name)
    try:
        for runner in runners:
            if runner.local:
                continue
            out = runner.run(["sh", "-c", f"cat {shlex.quote(str(token))} 2>/dev/null; echo; "
                              f"test -x {shlex.quote(python)} && echo python-ok; "
                              f"test -d {shlex.quote(str(repo_root))} && echo repo-ok"],
                             "reach it", timeout_s=30)
            if token.name not in out:
                raise ServerCommandError(f"{runner.label} does not see the run directory {run_dir}: every server "
                                         "must see it at the same path (docs/cluster.md)")
            if "python-ok" not in out or "repo-ok" not in out:
                raise ServerCommandError(f"{runner.label} has no testbed at {repo_root} (Python {python}): "
                                         "every server needs the checkout at the same path (docs/cluster.md)")
    finally:
        token.unlink(missing_ok=True)


def server_address(runner: Runner) -> str:
    """The IPv4 address the controller reaches a server's switches at (127.0.0.1 for this machine):
    the host name ssh connects to for its login (`ssh -G`, which reads TESTBED_SSH_CONFIG's aliases),
    resolved here."""
    if runner.local:
        return "127.0.0.1"
    argv = ["ssh", *(["-F", runner.ssh_config] if runner.ssh_config else []), "-G", runner.server.login]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=15)
    host = next((line.split()[1] for line in done.stdout.splitlines() if line.startswith("hostname ")),
                runner.server.address)
    try:
        return socket.gethostbyname(host)
    except OSError as error:
        raise ServerCommandError(f"{runner.label}: cannot resolve {host}: {error}") from None


class ServerNode:
    """A place commands run on a server: its root namespace, or a named network namespace there
    (a host). `popen` takes Popen's arguments, so the network's configuration code and the run's
    agents use it as they use a Mininet node."""

    def __init__(self, name: str, runner: Runner, namespace: str | None = None) -> None:
        self.name = name
        self.runner = runner
        self.namespace = namespace
        self.pid = None  # no process of this machine holds it (a Mininet host's shell would)

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *argv] if self.namespace else list(argv)

    def popen(self, argv: list[str], cwd=None, **params) -> subprocess.Popen:
        return self.runner.popen(self.command(argv), cwd=cwd, **params)
