"""Test networks for the switch process: namespaces, veths, the switch itself.

Every name starts with `tsw` + a per-test tag, so the tests only ever touch
what they created; `SwitchNet.close()` (used from fixtures/finally) removes
it all. What it makes (namespaces, the root-namespace veth ends, the switch
process) is listed in a run manifest first, registered in the session's
registry: the runs of a killed session are cleaned by the next one.  Hosts: `h<N>` in namespace tsw<tag>h<N>, address 10.0.<N>.1/24,
gateway 10.0.<N>.254 with a static ARP entry for GATEWAY_MAC; the switch
port N is the root-namespace end `tsw<tag>s<N>` (MTU 9000).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "p4programs"
GATEWAY_MAC = "00:00:00:00:fe:fe"
READY = re.compile(r"switch ready: grpc (\S+):(\d+), control (\d+), (\d+) ports")


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def host_mac(n: int) -> str:
    return f"00:00:00:00:00:{n:02x}"


def install_host_routes(sh, hosts) -> None:
    """Through a set-up p4runtime-shell: host n's /24 leaves on port n with its MAC."""
    for n in hosts:
        te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.set_nhop")
        te.match["hdr.ipv4.dstAddr"] = f"10.0.{n}.0/24"
        te.action["dstAddr"] = host_mac(n)
        te.action["port"] = str(n)
        te.insert()


class SwitchNet:
    def __init__(self, hosts: int = 2, tag: str | None = None) -> None:
        self.tag = tag or f"{os.getpid() % 10000}"
        self.hosts = list(range(1, hosts + 1))
        self.switch: subprocess.Popen | None = None
        self.grpc_port = self.control_port = None
        self.log_path = None
        self.manifest = self._manifest()
        try:
            for n in self.hosts:
                ns, host_if, sw_if = self.ns(n), f"tsw{self.tag}h{n}", self.port_if(n)
                sh("ip", "netns", "add", ns)
                sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", host_if)
                sh("ip", "link", "set", host_if, "netns", ns)
                for args in (["ip", "link", "set", sw_if, "mtu", "9000", "up"],
                             ["sysctl", "-q", "-w", f"net.ipv6.conf.{sw_if}.disable_ipv6=1"]):
                    sh(*args, check=False)
                inside = [["ip", "link", "set", "lo", "up"],
                          ["ip", "link", "set", host_if, "address", host_mac(n), "mtu", "9000", "up"],
                          ["ip", "addr", "add", f"10.0.{n}.1/24", "dev", host_if],
                          ["ip", "route", "add", "default", "via", f"10.0.{n}.254"],
                          ["ip", "neigh", "add", f"10.0.{n}.254", "lladdr", GATEWAY_MAC, "dev", host_if],
                          ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]]
                for args in inside:
                    sh("ip", "netns", "exec", ns, *args)
        except BaseException:
            self.close()
            raise

    def _manifest(self):
        """The manifest of what this net makes, written (and so registered) before it makes anything."""
        import tempfile

        from testbed.emulation.manifest import Manifest

        directory = Path(tempfile.mkdtemp(prefix=f"tsw{self.tag}-"))
        manifest = Manifest(run_id=f"switch-net-{directory.name}", path=directory / "manifest.json")
        manifest.claim()
        manifest.plan_namespaces([self.ns(n) for n in self.hosts])
        manifest.plan_interfaces([self.port_if(n) for n in self.hosts])
        return manifest

    def ns(self, n: int) -> str:
        return f"tsw{self.tag}h{n}"

    def port_if(self, n: int) -> str:
        return f"tsw{self.tag}s{n}"

    def host_if(self, n: int) -> str:
        return f"tsw{self.tag}h{n}"

    def exec(self, n: int, *argv: str, check: bool = True, timeout: float = 60):
        return subprocess.run(["ip", "netns", "exec", self.ns(n), *argv], check=check,
                              capture_output=True, text=True, timeout=timeout)

    def start_switch(self, workdir: Path, extra: list[str] = (), program: Path | None = None,
                     target_extra: list[str] = ()) -> None:
        self.log_path = workdir / "switch.log"
        argv = [sys.executable, "-m", "testbed.p4model.switch"]
        for n in self.hosts:
            argv += ["-i", f"{n}@{self.port_if(n)}"]
        argv += ["--device-id", "1", "--thrift-port", "0", "--log-file", str(self.log_path), *extra]
        argv += [str(program)] if program else ["--no-p4"]
        argv += ["--", "--grpc-server-addr", "127.0.0.1:0", "--cpu-port", "255", *target_extra]
        self.switch = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       cwd=REPO)
        self.manifest.add_process(self.switch.pid, "switch", argv)
        line = self.switch.stdout.readline()
        match = READY.search(line)
        if not match:
            self.switch.wait(10)
            raise RuntimeError(f"switch did not start: {line!r} {self.switch.stderr.read()[-2000:]}")
        self.grpc_port, self.control_port = int(match.group(2)), int(match.group(3))

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def switch_alive(self) -> bool:
        return self.switch is not None and self.switch.poll() is None

    def stop_switch(self) -> int | None:
        if self.switch is None:
            return None
        if self.switch.poll() is None:
            self.switch.terminate()
            try:
                self.switch.wait(10)
            except subprocess.TimeoutExpired:
                self.switch.kill()
                self.switch.wait(5)
        code = self.switch.returncode
        for stream in (self.switch.stdout, self.switch.stderr):
            stream.close()
        self.switch = None
        return code

    def rss_kb(self) -> int:
        with open(f"/proc/{self.switch.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def close(self) -> None:
        try:
            self.stop_switch()
        finally:
            for n in self.hosts:
                sh("ip", "link", "del", self.port_if(n), check=False)
                sh("ip", "netns", "del", self.ns(n), check=False)
            self.manifest.finished = True
            self.manifest.save()
            self.manifest.unregister()
            import shutil

            shutil.rmtree(self.manifest.path.parent, ignore_errors=True)


def p4info_file(program: Path, out_dir: Path) -> Path:
    path = out_dir / (program.stem + ".p4info.txtpb")
    subprocess.run([sys.executable, "-m", "testbed.cli", "p4info", str(program), "-o", str(path)],
                   check=True, cwd=REPO, capture_output=True, text=True)
    return path


def wait_for(predicate, timeout: float = 5.0, step: float = 0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


RECEIVER = r"""
import json, select, socket, sys, time
port, count, wait = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0))
print("listening", flush=True)
got, end = [], time.monotonic() + wait
while len(got) < count and time.monotonic() < end:
    r, _, _ = select.select([s], [], [], 0.2)
    if not r:
        continue
    data = s.recv(65536)
    if len(data) < 44 or data[23] != 17 or int.from_bytes(data[36:38], "big") != port:
        continue
    got.append((int.from_bytes(data[42:46], "big"), data[15]))
print(json.dumps(got), flush=True)
"""

SENDER = r"""
import socket, sys, json
dst, port, plan = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for seq, tos in plan:
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.sendto(seq.to_bytes(4, "big") + bytes(60), (dst, port))
"""


def send_and_receive(net, plan, port, wait=5.0):
    receiver = subprocess.Popen(["ip", "netns", "exec", net.ns(2), sys.executable, "-c", RECEIVER,
                                 net.host_if(2), str(port), str(len(plan)), str(wait)],
                                stdout=subprocess.PIPE, text=True)
    assert receiver.stdout.readline().strip() == "listening"
    net.exec(1, sys.executable, "-c", SENDER, "10.0.2.1", str(port), json.dumps(plan))
    out, _ = receiver.communicate(timeout=wait + 10)
    return [tuple(x) for x in json.loads(out)]


def check_link_delay_in_ping_rtt(net, control) -> None:
    """A 20 ms delay on both ports adds 40-50 ms to the ping's minimum RTT (the TM's link model)."""
    def rtt():
        out = net.exec(1, "ping", "-c", "5", "-i", "0.2", "-W", "2", "10.0.2.1", check=False).stdout
        return float(out.strip().splitlines()[-1].split("=")[1].split("/")[0])  # min
    base = rtt()
    with control(net) as c:
        c.set_port_delay_us(20000, 1)
        c.set_port_delay_us(20000, 2)
    try:
        delayed = rtt()
    finally:
        with control(net) as c:
            c.set_port_delay_us(0, 1)
            c.set_port_delay_us(0, 2)
    assert 40.0 <= delayed - base < 50.0, (base, delayed)


def check_tail_drops_are_counted(net, control) -> None:
    """50 datagrams into a 5-packet queue drained at 20 pps: at least 35 tail drops, each counted."""
    with control(net) as c:
        before = sum(q["dropped_full"] for q in c.queue_stats(2))
        c.set_queue_rate(20, 2)
        c.set_queue_depth(5, 2)
    try:
        got = send_and_receive(net, [(i, 0) for i in range(50)], 9003, wait=2.0)
        with control(net) as c:
            dropped = sum(q["dropped_full"] for q in c.queue_stats(2)) - before
    finally:
        with control(net) as c:
            c.set_queue_rate(0, 2)
            c.set_queue_depth(64, 2)
    assert dropped >= 35 and len(got) + dropped == 50, (len(got), dropped)
