"""The Mininet realisation of a Topology.

Hosts are Mininet hosts (a shell in its own network namespace).  Switches
are not Mininet-managed processes: their interfaces live in the root
namespace and a separate switch process (builtin or bmv2) opens them, as
bmv2 does under Mininet.  Links are plain veth pairs: rate, buffer and
delay are modelled by the switches' traffic managers (this kernel has no
netem), and each host NIC is paced to its link rate with `tbf`.

Addressing: every host NIC gets the host's address; routes for the fabric
(10.0.0.0/8) leave through the first NIC (the second, on dual-homed hosts,
has a higher metric and takes over on failure); neighbours are static
(every other host's address -> the MAC of the ToR port the NIC plugs into),
so no ARP crosses the fabric and the switches only route.

Multi-GPU servers: the local channel between two GPUs of one server is a
direct veth between their namespaces (`h<n>-nv<peer gpu>`), never seen by a
switch; each end carries the host's address, a /32 route to the peer (more
specific than the fabric's /8) and a static neighbour entry for the peer's
end, and is paced with `tbf` at the channel's rate when `local_pacing` is
given.  The channel's delay is applied by the sending agents, as the
host->ToR delay is.

Checksum offload is turned off on every interface: a veth leaves UDP/TCP
checksums for "hardware" to fill in, the switch process forwards the frame
through a raw socket as it is, and the receiving kernel would drop it as
corrupt.  With offload off, hosts compute their checksums in software.
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.errors import TestbedError
from testbed.topo.interfaces import LOCAL_PORT_BASE, host_interface, local_interface, switch_interface  # noqa: F401 (names re-exported)
from testbed.topo.model import Topology

FABRIC_PREFIX = "10.0.0.0/8"


def offload_off(interface: str) -> list[str]:
    """ethtool argv turning off checksum and segmentation offloads (see module docstring)."""
    return ["ethtool", "--offload", interface, "rx", "off", "tx", "off", "sg", "off",
            "tso", "off", "gso", "off", "gro", "off"]


class NetworkError(TestbedError):
    """A host or link that could not be set up; names the command and its output."""


def local_mac(topology: Topology, host: str, peer_gpu: int) -> str:
    """The MAC of host's end of its local channel to GPU peer_gpu: host MAC with port byte 0x10 + peer_gpu."""
    from testbed.topo.addressing import host_mac

    return host_mac(topology.node(host).ip, 0x10 + peer_gpu)


@dataclass(frozen=True)
class Pacing:
    """tbf settings of a host NIC: never faster than its link."""

    rate_mbps: float
    burst_bytes: int = 16 * 1024
    latency_ms: int = 50

    def tc_args(self, interface: str) -> list[str]:
        return ["tc", "qdisc", "replace", "dev", interface, "root", "tbf",
                "rate", f"{self.rate_mbps}mbit", "burst", str(self.burst_bytes),
                "latency", f"{self.latency_ms}ms"]


def interface_names(topology: Topology, in_memory=frozenset()) -> list[str]:
    """Every root-namespace interface the network creates (switch sides of
    all links but those `in_memory` of a fabric process, and host sides until
    Mininet moves them into the hosts)."""
    names = []
    for link in topology.links:
        if link.name in in_memory:
            continue
        for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if topology.node(node).is_host:
                names.append(host_interface(node, port))
            else:
                names.append(switch_interface(node, port))
    for link in topology.local_links:
        names += [local_interface(link.a, link.b_gpu), local_interface(link.b, link.a_gpu)]
    return names


class FabricNetwork:
    """Builds and tears down the Mininet network of one run."""

    def __init__(self, topology: Topology, pacing: Pacing | None, in_memory=frozenset(),
                 local_pacing: Pacing | None = None) -> None:
        self.topology = topology
        self.pacing = pacing
        self.in_memory = in_memory  # cables a fabric process carries in memory: no veth
        self.local_pacing = local_pacing
        self.net = None

    def build(self, on_host=None) -> None:
        """Create the network; `on_host(name, pid)` is called as soon as each
        host's shell exists, before anything else, so a run manifest can
        record it even if the build is then killed."""
        from mininet.net import Mininet
        from mininet.node import Host, Switch

        class RootNamespaceSwitch(Switch):
            """A switch whose forwarding is done by an external process."""

            def __init__(self, name, **params):
                params["inNamespace"] = False
                super().__init__(name, **params)

            def start(self, controllers):
                pass

            def stop(self, deleteIntfs=True):
                super().stop(deleteIntfs)

        net = Mininet(topo=None, build=False, controller=None, switch=RootNamespaceSwitch,
                      host=Host, autoSetMacs=False, autoStaticArp=False, waitConnected=False)
        self.net = net
        t = self.topology
        for name in t.hosts:
            host = net.addHost(name, ip=None)
            if on_host is not None:
                on_host(name, host.pid)
        for name in t.switches:
            net.addSwitch(name, dpid=f"{t.node(name).device_id:016x}")
        for link in t.links:
            if link.name in self.in_memory:
                continue
            ends = []
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                name = host_interface(node, port) if t.node(node).is_host else switch_interface(node, port)
                ends.append((node, port, name, t.port(node, port).mac))
            (n1, p1, i1, m1), (n2, p2, i2, m2) = ends
            net.addLink(n1, n2, port1=p1, port2=p2, intfName1=i1, intfName2=i2,
                        addr1=m1, addr2=m2)
        for link in t.local_links:
            net.addLink(link.a, link.b, port1=LOCAL_PORT_BASE + link.b_gpu, port2=LOCAL_PORT_BASE + link.a_gpu,
                        intfName1=local_interface(link.a, link.b_gpu), intfName2=local_interface(link.b, link.a_gpu),
                        addr1=local_mac(t, link.a, link.b_gpu), addr2=local_mac(t, link.b, link.a_gpu))
        net.build()
        for name in t.switches:
            for port in t.ports(name):
                if port.link in self.in_memory:
                    continue
                interface = switch_interface(name, port.number)
                # Per-interface settings vanish with the interface: nothing global is changed.
                run_in(net[name], ["sysctl", "-qw", f"net.ipv6.conf.{interface}.disable_ipv6=1"],
                       what=f"disable IPv6 on {interface}")
                run_in(net[name], ["ip", "link", "set", interface, "up"], what=f"bring up {interface}")
                run_in(net[name], offload_off(interface), what=f"turn off offloads on {interface}")
        for name in t.hosts:
            self._configure_host(name)

    def _configure_host(self, name: str) -> None:
        t = self.topology
        host = self.net[name]
        ip = t.node(name).ip
        run_in(host, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                      "net.ipv6.conf.default.disable_ipv6=1"], what=f"disable IPv6 in {name}")
        batch = []
        for index, port in enumerate(t.ports(name)):
            interface = host_interface(name, port.number)
            tor_mac = t.port(port.peer, port.peer_port).mac
            batch.append(f"addr add {ip}/32 dev {interface}")
            batch.append(f"link set {interface} up")
            run_in(host, offload_off(interface), what=f"turn off offloads on {interface}")
            batch.append(f"route add {FABRIC_PREFIX} dev {interface} src {ip} metric {index + 1}")
            for other in t.hosts:
                if other != name:
                    batch.append(f"neigh replace {t.node(other).ip} lladdr {tor_mac} dev {interface} nud permanent")
            if self.pacing is not None:
                run_in(host, self.pacing.tc_args(interface), what=f"pace {interface}")
        for peer in t.local_peers(name):
            me, other = t.node(name), t.node(peer)
            interface = local_interface(name, other.gpu)
            batch.append(f"addr add {ip}/32 dev {interface}")
            batch.append(f"link set {interface} up")
            run_in(host, offload_off(interface), what=f"turn off offloads on {interface}")
            batch.append(f"route add {other.ip}/32 dev {interface} src {ip}")
            batch.append(f"neigh replace {other.ip} lladdr {local_mac(t, peer, me.gpu)} dev {interface} nud permanent")
            if self.local_pacing is not None:
                run_in(host, self.local_pacing.tc_args(interface), what=f"pace {interface}")
        run_in(host, ["ip", "-batch", "-"], stdin="\n".join(batch) + "\n", what=f"configure host {name}")

    def host(self, name: str):
        return self.net[name]

    def stop(self) -> None:
        if self.net is not None:
            self.net.stop()
            self.net = None


def run_in(node, argv: list[str], what: str, stdin: str | None = None) -> str:
    """Run argv in a node's namespace (no shell); raise NetworkError with its output on failure."""
    import subprocess

    process = node.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate(stdin)
    if process.returncode != 0:
        raise NetworkError(f"cannot {what}: {' '.join(argv)} exited with {process.returncode}: "
                           f"{output.strip()}")
    return output
