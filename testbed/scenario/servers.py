"""The machines of a scenario's `placement.servers`: reached, and what each has.

A server is reached the way Mininet's cluster edition reaches it: ssh in
batch mode (a key, never a password prompt), as `user@address`, except the
address `localhost`, which the cluster edition runs here without ssh. The
probe asks each server for its usable cores (`nproc`) and its available
memory (`MemAvailable` of /proc/meminfo), which the capacity check plans
each server's share of the fabric against. A server ssh cannot reach within
`CONNECT_TIMEOUT_S` is refused at its line with ssh's own words.
`TESTBED_SSH_CONFIG`, when set, is the ssh client configuration file used
instead of ~/.ssh/config (ports, keys and host aliases of a cluster kept
apart from the user's own).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from testbed.errors import TestbedError

CONNECT_TIMEOUT_S = 5
# The probe's own limit, beyond the connection: a server that accepts and then hangs is unreachable too.
PROBE_TIMEOUT_S = 15
PROBE = "nproc; grep MemAvailable: /proc/meminfo"


class ServerUnreachable(TestbedError):
    """ssh could not run the probe on a server."""


@dataclass(frozen=True)
class ServerFacts:
    cores: int
    memory_bytes: int


def is_local(server) -> bool:
    """Whether the cluster edition runs this server's nodes here, without ssh."""
    return server.address == "localhost"


def ssh_command(server, *command: str, options: tuple[str, ...] = (), config: str | None = None) -> list[str]:
    """ssh to `server` in batch mode: a key or nothing, a bounded wait for the connection, a new
    host key accepted once and checked afterwards; `options` go before the login, `config` is the
    client configuration file (None: TESTBED_SSH_CONFIG, else ssh's own)."""
    config = config if config is not None else os.environ.get("TESTBED_SSH_CONFIG")
    return ["ssh", *(["-F", config] if config else []), "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}", "-o", "StrictHostKeyChecking=accept-new",
            *options, server.login, *command]


def probe(server) -> ServerFacts:
    """The server's cores and available memory; ServerUnreachable (one line) when ssh fails."""
    command = ["sh", "-c", PROBE] if is_local(server) else ssh_command(server, PROBE)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except FileNotFoundError:
        raise ServerUnreachable(f"server {server.name}: ssh is not installed here "
                                "(Debian: apt-get install openssh-client)") from None
    except subprocess.TimeoutExpired:
        raise ServerUnreachable(f"server {server.name} ({server.login}): no answer within "
                                f"{PROBE_TIMEOUT_S} s") from None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) < 3 or not lines[0].isdigit() or not lines[2].isdigit():
        said = " ".join(done.stderr.split()) or f"exit status {done.returncode}, output {done.stdout.strip()!r}"
        raise ServerUnreachable(f"server {server.name} ({server.login}) cannot be reached with ssh "
                                f"(BatchMode, ConnectTimeout {CONNECT_TIMEOUT_S} s): {said}")
    return ServerFacts(int(lines[0]), int(lines[2]) * 1024)


_FACTS: dict[str, ServerFacts] = {}


def facts(server) -> ServerFacts:
    """probe(server), once per login and process (a check and the run that follows ask twice)."""
    key = f"{server.login}/{os.getpid()}/{os.environ.get('TESTBED_SSH_CONFIG', '')}"
    if key not in _FACTS:
        _FACTS[key] = probe(server)
    return _FACTS[key]


def server_switches(scenario) -> list[list[str]]:
    """The switches of each server, in placement.servers order: as the scenario names them, else
    the partition's balanced split cutting the fewest cables (testbed.topo.partition)."""
    from testbed.topo.partition import split_servers

    servers = scenario.servers
    if servers and servers[0].switches:
        return [list(s.switches) for s in servers]
    return split_servers(scenario.topo, len(servers))


def server_hosts(scenario, switches: list[list[str]]) -> list[list[str]]:
    """The hosts of each server: a host runs where its first ToR does."""
    where = {name: i for i, group in enumerate(switches) for name in group}
    out: list[list[str]] = [[] for _ in switches]
    for host in scenario.topo.hosts:
        out[where[scenario.topo.tors_of(host)[0]]].append(host)
    return out
