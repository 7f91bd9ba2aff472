"""A private sshd on this machine, so that tests can reach it as a server over ssh.

The cluster edition's way to try a fabric over several servers on one
machine: ssh to the local host. Nothing of the machine's own ssh setup is
used or changed: the daemon runs on a free port of 127.0.0.1 with its own
configuration, host key and authorized key in a temporary directory, root
logs in with a key only (PermitTunnel yes for the cluster edition's
tunnels), and the client side is an ssh configuration file handed to the
testbed through TESTBED_SSH_CONFIG. Leaving stops the daemon and removes
everything it made, /run/sshd included when it was made here. Where sshd
cannot be had, `LocalSshdUnavailable` says exactly why (the tests skip with it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")


class LocalSshdUnavailable(Exception):
    """Why ssh to this machine cannot be made to work here."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise LocalSshdUnavailable(f"{' '.join(command)} failed: {done.stderr.strip()}")


@contextlib.contextmanager
def local_sshd(address: str = "127.0.0.1", permit_tunnel: bool = True):
    """Yield the ssh client configuration file that reaches root@`address` on a private sshd
    (`permit_tunnel` False: one that refuses ssh tunnels, as sshd does by default)."""
    if os.geteuid() != 0:
        raise LocalSshdUnavailable("sshd needs root to log in as root, and this is not root")
    if not os.access(SSHD, os.X_OK):
        raise LocalSshdUnavailable(f"{SSHD} is missing: openssh-server is not installed "
                                   "(scripts/install-deps.sh installs it)")
    if shutil.which("ssh") is None:
        raise LocalSshdUnavailable("ssh is missing: openssh-client is not installed")
    made_privsep = not PRIVSEP_DIR.exists()
    home = Path(tempfile.mkdtemp(prefix="testbed-sshd-"))
    daemon = None
    try:
        os.chmod(home, 0o755)
        for key in ("host_key", "client_key"):
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / key)])
        shutil.copy(home / "client_key.pub", home / "authorized_keys")
        os.chmod(home / "authorized_keys", 0o600)
        port = _free_port()
        (home / "sshd_config").write_text(
            f"Port {port}\nListenAddress {address}\nHostKey {home / 'host_key'}\n"
            f"AuthorizedKeysFile {home / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            f"PermitTunnel {'yes' if permit_tunnel else 'no'}\nUseDNS no\n"
            # as docs/cluster.md asks: a run's shared connection carries a session per node at once
            "MaxSessions 200\nMaxStartups 100:30:200\n"
            # the key files sit under /tmp, which everyone may write: StrictModes would refuse them
            "StrictModes no\n"
            f"PidFile {home / 'sshd.pid'}\n")
        config = home / "ssh_config"
        config.write_text(f"Host {address}\n  Port {port}\n  User root\n  IdentityFile {home / 'client_key'}\n"
                          f"  IdentitiesOnly yes\n  UserKnownHostsFile {home / 'known_hosts'}\n")
        if made_privsep:
            PRIVSEP_DIR.mkdir(mode=0o755)
        # -D: stays in the foreground as our child, so it is ours to stop; -e: its log on stderr
        log = open(home / "sshd.log", "w")
        daemon = subprocess.Popen([SSHD, "-D", "-e", "-f", str(home / "sshd_config")], stdout=log, stderr=log,
                                  start_new_session=True)
        deadline = time.monotonic() + 10
        while True:
            with socket.socket() as probe:
                if probe.connect_ex((address, port)) == 0:
                    break
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise LocalSshdUnavailable(f"sshd did not start: {(home / 'sshd.log').read_text().strip()}")
            time.sleep(0.05)
        check = subprocess.run(["ssh", "-F", str(config), "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                                "-o", "StrictHostKeyChecking=accept-new", address, "true"],
                               capture_output=True, text=True, timeout=20)
        if check.returncode != 0:
            raise LocalSshdUnavailable(f"ssh to root@{address} on the private sshd failed: {check.stderr.strip()}")
        yield config
    finally:
        if daemon is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGTERM)  # the daemon and any session it forked
            daemon.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)
        if made_privsep:
            with contextlib.suppress(OSError):
                PRIVSEP_DIR.rmdir()
