"""The network of a fabric spread over several servers (`placement.servers`).

Each server builds its own part through its Runner (emulation/cluster.py):
its hosts are named network namespaces (`tb<run tag>-<host>`; a host runs on
the server of its first ToR, topo/partition.py), its cables are veth pairs
as on one machine (network.py: addresses, static neighbours, pacing and
checksum offload off, the same way), and its switch interfaces stay in its
root namespace for its switch processes to open.

A cable whose two switches run on different servers is a tunnel carrying
Ethernet frames: `ssh -o Tunnel=ethernet -w N:M` from one end's server to
the other's, a tap device at each end, renamed to the switch interface name
the switch process opens (switch_interface()) and given the port's MAC. The
tap numbers are distinct per cable end (TAP_BASE + 2 x cable, + 1 for the far
end), so both ends can live on one machine: the cluster edition's hard-wired
tap9 cannot. The ssh client runs on the end that is this machine when there
is one, else on the first end's server (which must then reach the other with
its own root key). docs/cluster.md says why ssh rather than a kernel tunnel.
Each tunnel's one-way delay is measured with timestamped probes echoed back
(emulation/tunnel_probe.py) once it is up and before any switch opens it.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

from testbed.emulation.cluster import Runner, ServerNode
from testbed.emulation.network import FabricNetwork, NetworkError, Pacing, offload_off
from testbed.topo.interfaces import host_interface, local_interface, switch_interface
from testbed.topo.model import Topology

TAP_BASE = 6000
TUNNEL_WAIT_S = 20.0


@dataclass(frozen=True)
class Tunnel:
    """One cable between servers: the end on `client` starts the ssh that carries it."""

    cable: str
    client: int  # server index of the end that runs the ssh client
    client_interface: str
    client_mac: str
    client_tap: int
    server: int  # the other end's server
    server_interface: str
    server_mac: str
    server_tap: int


class ClusterNetwork(FabricNetwork):
    """Builds and removes one run's network on every server."""

    def __init__(self, topology: Topology, pacing: Pacing | None, in_memory, local_pacing: Pacing | None,
                 runners: list[Runner], switch_server: dict[str, int], tag: str) -> None:
        super().__init__(topology, pacing, in_memory, local_pacing)
        self.runners = runners
        self.switch_server = switch_server
        self.tag = tag
        t = topology
        self.host_server = {h: switch_server[t.tors_of(h)[0]] for h in t.hosts}
        for h in t.hosts:
            for port in t.ports(h):
                if switch_server[port.peer] != self.host_server[h]:
                    raise NetworkError(f"host {h} plugs into {t.tors_of(h)[0]} and {port.peer}, which run on "
                                       "different servers: place a host's ToRs on one server "
                                       "(placement.servers[].switches)")
        for link in t.local_links:
            if self.host_server[link.a] != self.host_server[link.b]:
                raise NetworkError(f"GPUs {link.a} and {link.b} of one server are placed on different servers: "
                                   "place their ToRs on one server (placement.servers[].switches)")
        self.tunnels = self._plan_tunnels()
        self.tunnel_processes: list[subprocess.Popen] = []
        self.remote_tunnels: list[tuple[Runner, int, int]] = []  # ssh clients on other servers: pid, start
        self.net = {}
        for h in t.hosts:
            self.net[h] = ServerNode(h, runners[self.host_server[h]], self.namespace(h))
        for s in t.switches:
            self.net[s] = ServerNode(s, runners[switch_server[s]])

    # -- what exists where -------------------------------------------------------
    def namespace(self, host: str) -> str:
        return f"tb{self.tag}-{host}"

    def _plan_tunnels(self) -> list[Tunnel]:
        t = self.topology
        out = []
        for link in t.links:
            if link.tier != "fabric" or link.name in self.in_memory:
                continue
            a, b = self.switch_server[link.a], self.switch_server[link.b]
            if a == b:
                continue
            ends = [(a, link.a, link.a_port), (b, link.b, link.b_port)]
            if self.runners[b].local and not self.runners[a].local:
                ends.reverse()
            (cs, cn, cp), (ss, sn, sp) = ends
            n = TAP_BASE + 2 * len(out)
            out.append(Tunnel(link.name, cs, switch_interface(cn, cp), t.port(cn, cp).mac, n,
                              ss, switch_interface(sn, sp), t.port(sn, sp).mac, n + 1))
        return out

    def server_parts(self) -> dict[int, dict]:
        """Per server: the root-namespace interfaces and the namespaces the build may create."""
        t = self.topology
        parts = {i: {"interfaces": [], "namespaces": []} for i in range(len(self.runners))}
        for h in t.hosts:
            parts[self.host_server[h]]["namespaces"].append(self.namespace(h))
        tunnelled = {x.cable for x in self.tunnels}
        for link in t.links:
            if link.name in self.in_memory or link.name in tunnelled:
                continue
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                if not t.node(node).is_host:
                    parts[self.switch_server[node]]["interfaces"].append(switch_interface(node, port))
        for x in self.tunnels:
            parts[x.client]["interfaces"] += [x.client_interface, f"tap{x.client_tap}"]
            parts[x.server]["interfaces"] += [x.server_interface, f"tap{x.server_tap}"]
        return parts

    # -- build -------------------------------------------------------------------
    def build(self, on_host=None, on_tunnel=None, log_dir=None) -> None:
        """Namespaces and veths on every server, then the tunnels, then every interface configured.
        `on_tunnel(server index, pid, start time there or None here, argv)` is told of each tunnel's
        ssh client as it starts; one started on another server logs to `log_dir` there."""
        t = self.topology
        scripts = {i: [] for i in range(len(self.runners))}
        for h in t.hosts:
            scripts[self.host_server[h]].append(f"ip netns add {self.namespace(h)}")
        tunnelled = {x.cable for x in self.tunnels}
        for link in t.links:
            if link.name in self.in_memory or link.name in tunnelled:
                continue
            ends = []
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                is_host = t.node(node).is_host
                name = host_interface(node, port) if is_host else switch_interface(node, port)
                where = f" netns {self.namespace(node)}" if is_host else ""
                ends.append(f"{name} address {t.port(node, port).mac}{where}")
                server = self.host_server[node] if is_host else self.switch_server[node]
            scripts[server].append(f"ip link add {ends[0]} type veth peer name {ends[1]}")
        from testbed.emulation.network import local_mac
        for link in t.local_links:
            a = f"{local_interface(link.a, link.b_gpu)} address {local_mac(t, link.a, link.b_gpu)} " \
                f"netns {self.namespace(link.a)}"
            b = f"{local_interface(link.b, link.a_gpu)} address {local_mac(t, link.b, link.a_gpu)} " \
                f"netns {self.namespace(link.b)}"
            scripts[self.host_server[link.a]].append(f"ip link add {a} type veth peer name {b}")
        for i, lines in scripts.items():
            if lines:
                self.runners[i].script("\n".join(lines) + "\n", "create its hosts and cables")
        if on_host is not None:
            for h in t.hosts:
                on_host(h, None)
        self._start_tunnels(on_tunnel, log_dir)
        self._configure_switch_interfaces()
        for name in t.hosts:
            self._configure_host(name)

    def _start_tunnels(self, on_tunnel, log_dir) -> None:
        if not self.tunnels:
            return
        for x in self.tunnels:
            runner = self.runners[x.client]
            argv = tunnel_argv(self.runners[x.server], x.client_tap, x.server_tap, here=runner.local)
            if runner.local:
                process = runner.popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       start_new_session=True)
                pid, start = process.pid, None
            else:
                process, pid, start = runner.spawn(argv, log_dir / f"tunnel-{x.cable}.log")
                self.remote_tunnels.append((runner, pid, start))
            self.tunnel_processes.append(process)
            if on_tunnel is not None:
                on_tunnel(x.client, pid, start, argv)
        expected = {i: set() for i in range(len(self.runners))}
        for x in self.tunnels:
            expected[x.client].add(f"tap{x.client_tap}")
            expected[x.server].add(f"tap{x.server_tap}")
        deadline = time.monotonic() + TUNNEL_WAIT_S
        while True:
            for x, process in zip(self.tunnels, self.tunnel_processes):
                if process.poll() is not None:
                    said = process.stderr.read() if process.stderr is not None else ""
                    said = said.decode(errors="replace") if isinstance(said, bytes) else said
                    said = " ".join(said.split())[-300:]
                    raise NetworkError(f"the tunnel of cable {x.cable} ({self.runners[x.client].label} to "
                                       f"{self.runners[x.server].label}) ended: {said or 'no output'}")
            missing = {}
            for i, names in expected.items():
                if names:
                    present = set(self.runners[i].run(["ls", "/sys/class/net"], "list its interfaces").split())
                    if names - present:
                        missing[i] = sorted(names - present)
            if not missing:
                break
            if time.monotonic() > deadline:
                i, names = next(iter(missing.items()))
                raise NetworkError(f"{self.runners[i].label}: tunnel interfaces {', '.join(names[:4])} did not "
                                   f"appear within {TUNNEL_WAIT_S:g} s (sshd needs PermitTunnel yes)")
            time.sleep(0.2)
        scripts = {i: [] for i in range(len(self.runners))}
        for x in self.tunnels:
            for i, tap, name, mac in ((x.client, x.client_tap, x.client_interface, x.client_mac),
                                      (x.server, x.server_tap, x.server_interface, x.server_mac)):
                scripts[i].append(f"ip link set tap{tap} down && ip link set tap{tap} name {name} address {mac}")
        for i, lines in scripts.items():
            if lines:
                self.runners[i].script("\n".join(lines) + "\n", "name its tunnel ends")

    def _configure_switch_interfaces(self) -> None:
        """Each server, in one command: its switch interfaces up, IPv6 off, checksum offload off."""
        t = self.topology
        scripts = {i: [] for i in range(len(self.runners))}
        for name in t.switches:
            for port in t.ports(name):
                if port.link in self.in_memory:
                    continue
                interface = switch_interface(name, port.number)
                scripts[self.switch_server[name]] += [
                    f"sysctl -qw net.ipv6.conf.{interface}.disable_ipv6=1",
                    f"ip link set {interface} up",
                    shlex.join(offload_off(interface)) + " >/dev/null"]
        for i, lines in scripts.items():
            if lines:
                self.runners[i].script("\n".join(lines) + "\n", "configure its switch interfaces")

    # -- the tunnels' own delay --------------------------------------------------
    def measure_tunnels(self, repo_root, count: int = 200, gap_ms: float = 2.0) -> dict[str, dict]:
        """Each tunnel's round trips of `count` timestamped probes echoed by its far end
        (emulation/tunnel_probe.py), before any switch opens the interfaces: cable -> figures."""
        if not self.tunnels:
            return {}
        seconds = count * gap_ms / 1e3 + 5.0
        reflectors = []
        try:
            for i in sorted({x.server for x in self.tunnels}):
                names = [x.server_interface for x in self.tunnels if x.server == i]
                reflectors.append(self.runners[i].popen(
                    [sys.executable, "-m", "testbed.emulation.tunnel_probe", "reflect", "--seconds",
                     f"{seconds + 5:g}", *names], cwd=repo_root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True))
            for process in reflectors:  # each says "ready" once its sockets are bound
                line = process.stdout.readline()
                if "ready" not in line:
                    raise NetworkError(f"the tunnel probe's reflector did not start: {line.strip() or 'no output'}")
            out = {}
            for i in sorted({x.client for x in self.tunnels}):
                mine = [x for x in self.tunnels if x.client == i]
                text = self.runners[i].run(
                    [sys.executable, "-m", "testbed.emulation.tunnel_probe", "send", "--count", str(count),
                     "--gap-ms", f"{gap_ms:g}", *[x.client_interface for x in mine]], "probe its tunnels",
                    cwd=repo_root, timeout_s=seconds + 30)
                figures = json.loads(text.strip().splitlines()[-1])
                for x in mine:
                    out[x.cable] = {"servers": [self.runners[x.client].server.name,
                                                self.runners[x.server].server.name],
                                    **figures[x.client_interface]}
            return out
        finally:
            for process in reflectors:  # stdin closed: each reflector ends, here or over ssh
                try:
                    process.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.communicate()

    # -- teardown ----------------------------------------------------------------
    def stop(self) -> list[str]:
        """Remove everything the build made on every server: the tunnels' ssh clients (their taps
        go with them), every process left in a host namespace, the namespaces (their veths go with
        them) and the switch interfaces. Returns what could not be removed (one line per server)."""
        problems = []
        for runner, pid, start in self.remote_tunnels:
            check = f"[ \"$(awk '{{print $22}}' /proc/{pid}/stat 2>/dev/null)\" = {start} ]"
            runner.run(["sh", "-c", f"{check} && kill {pid}; true"], "stop a tunnel", check=False, timeout_s=20)
        self.remote_tunnels = []
        for process in self.tunnel_processes:
            if process.poll() is None:
                process.terminate()
        for process in self.tunnel_processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.tunnel_processes = []
        for i, part in self.server_parts().items():
            try:
                self.runners[i].script(removal_script(part["namespaces"], part["interfaces"]),
                                       "remove its hosts and cables")
            except Exception as error:  # one server's failure must not keep the others' parts
                problems.append(str(error))
        self.net = {}
        return problems


def tunnel_argv(far: Runner, near_tap: int, far_tap: int, here: bool = True) -> list[str]:
    """The ssh client of one tunnel: its own connection (not the shared one: tun forwarding is its
    whole purpose), no command, and an exit if the far end refuses the tunnel. Started on another
    server (`here` false), it uses that server's own ssh configuration."""
    from testbed.scenario.servers import ssh_command

    return ssh_command(far.server, options=("-N", "-o", "Tunnel=ethernet", "-o", "ExitOnForwardFailure=yes",
                                            "-o", "ControlPath=none", "-o", "ServerAliveInterval=5",
                                            "-w", f"{near_tap}:{far_tap}"), config=far.ssh_config if here else "")


def removal_script(namespaces: list[str], interfaces: list[str]) -> str:
    """sh: stop every process in each namespace, delete the namespaces, then the interfaces that
    exist; never fails on what is already gone."""
    lines = ["set +e"]
    for ns in namespaces:
        q = shlex.quote(ns)
        lines.append(f"if [ -e /var/run/netns/{q} ]; then "
                     f"for p in $(ip netns pids {q}); do kill -9 $p; done; ip netns del {q}; fi")
    for name in interfaces:
        q = shlex.quote(name)
        lines.append(f"[ -e /sys/class/net/{q} ] && ip link del {q}")
    lines.append("true")
    return "\n".join(lines) + "\n"
