"""Switch process speed: forwarded packets/s between veth pairs, against the machine's floor.

In one run, on the same veths and the same traffic:
  * raw floor: a plain Python AF_PACKET receive-and-send forwarder (what any
    Python switch pays for the sockets alone);
  * the builtin switch running tests/p4programs/basic_ipv4.p4, and the ratio;
  * the builtin switch with 8 ports busy (each port's host sends to the next);
  * simple_switch_grpc on the same harness, where it is installed.
Traffic: a Python raw-socket sender blasting 64-byte IPv4/UDP frames into
port 1 for WINDOW_S; forwarded = the far interface's kernel rx counter, so
no user-space receiver limits the figure.  Needs root; bounded < 60 s.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRAM = REPO / "tests" / "p4programs" / "basic_ipv4.p4"
WINDOW_S = 3.0
TAG = f"tsb{os.getpid() % 1000}"

SENDER = r"""
import socket, sys, time
pairs = [(sys.argv[i], bytes.fromhex(sys.argv[i + 1])) for i in range(2, len(sys.argv), 2)]
socks = []
for iface, frame in pairs:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    socks.append((s.send, frame))
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(200):
        for send, frame in socks:
            try:
                send(frame)
            except OSError:
                pass
"""

FORWARDER = r"""
import select, socket, sys
def port(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
    s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)
    s.bind((iface, 0)); s.setblocking(False)
    return s
a, b = port(sys.argv[1]), port(sys.argv[2])
out = {a.fileno(): b, b.fileno(): a}
print("ready", flush=True)
while True:
    for fd in select.select(list(out), [], [])[0]:
        src = a if fd == a.fileno() else b
        dst = out[fd]
        try:
            for _ in range(64):
                dst.send(src.recv(65536))
        except (BlockingIOError, OSError):
            pass
"""


def _sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def _mac(n: int) -> str:
    return f"00:00:00:00:00:{n:02x}"


def _frame(dst_net: int) -> str:
    eth = bytes.fromhex("0000000000fe" + "000000000001" + "0800")
    ip = bytes([0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, dst_net, 1])
    return (eth + ip + bytes(30)).hex()


class _Veths:
    def __init__(self, n: int) -> None:
        self.n = n
        for i in range(1, n + 1):
            _sh("ip", "link", "add", self.sw(i), "type", "veth", "peer", "name", self.host(i))
            for dev in (self.sw(i), self.host(i)):
                _sh("sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
                _sh("ip", "link", "set", dev, "up")

    def sw(self, i):
        return f"{TAG}s{i}"

    def host(self, i):
        return f"{TAG}h{i}"

    def rx(self, i) -> int:
        return int(Path(f"/sys/class/net/{self.host(i)}/statistics/rx_packets").read_text())

    def close(self) -> None:
        for i in range(1, self.n + 1):
            _sh("ip", "link", "del", self.sw(i), check=False)


def _measure(veths: _Veths, flows: list[tuple[int, int]]) -> float:
    """flows: (from port, to port); returns forwarded packets/s summed over the destinations."""
    args = []
    for src, dst in flows:
        args += [veths.host(src), _frame(dst)]
    dsts = sorted({d for _, d in flows})
    before = sum(veths.rx(d) for d in dsts)
    sender = subprocess.Popen([sys.executable, "-c", SENDER, str(WINDOW_S), *args])
    sender.wait(WINDOW_S + 10)
    time.sleep(0.2)
    return (sum(veths.rx(d) for d in dsts) - before) / WINDOW_S


def _builtin(veths: _Veths, flows, workdir: str) -> float:
    import p4runtime_sh.shell as sh

    argv = [sys.executable, "-m", "testbed.p4model.switch"]
    for i in range(1, veths.n + 1):
        argv += ["-i", f"{i}@{veths.sw(i)}"]
    argv += ["--thrift-port", "0", str(PROGRAM), "--", "--grpc-server-addr", "127.0.0.1:0"]
    switch = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        match = re.search(r"grpc \S+:(\d+)", switch.stdout.readline())
        if not match:
            raise RuntimeError("the builtin switch did not start")
        _routes(sh, f"127.0.0.1:{match.group(1)}", veths.n, None)
        return _measure(veths, flows)
    finally:
        switch.terminate()
        switch.wait(10)


def _routes(sh, addr: str, n: int, config) -> None:
    sh.setup(device_id=0, grpc_addr=addr, election_id=(0, 1), config=config, verbose=False)
    try:
        for i in range(1, n + 1):
            te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.set_nhop")
            te.match["hdr.ipv4.dstAddr"] = f"10.0.{i}.0/24"
            te.action["dstAddr"] = _mac(i)
            te.action["port"] = str(i)
            te.insert()
    finally:
        sh.teardown()


def _raw_floor(veths: _Veths) -> float:
    forwarder = subprocess.Popen([sys.executable, "-c", FORWARDER, veths.sw(1), veths.sw(2)],
                                 stdout=subprocess.PIPE, text=True)
    try:
        forwarder.stdout.readline()
        return _measure(veths, [(1, 2)])
    finally:
        forwarder.terminate()
        forwarder.wait(5)


def _bmv2(veths: _Veths, flows, workdir: str) -> float:
    import p4runtime_sh.shell as sh

    json_path, info_path = os.path.join(workdir, "p.json"), os.path.join(workdir, "p.p4info.txtpb")
    _sh("p4c-bm2-ss", "--arch", "v1model", "-o", json_path, "--p4runtime-files", info_path, str(PROGRAM))
    argv = ["simple_switch_grpc"]
    for i in range(1, veths.n + 1):
        argv += ["-i", f"{i}@{veths.sw(i)}"]
    argv += ["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:59599"]
    switch = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import socket
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", 59599)) == 0:
                    break
            time.sleep(0.1)
        _routes(sh, "127.0.0.1:59599", veths.n, sh.FwdPipeConfig(info_path, json_path))
        return _measure(veths, flows)
    finally:
        switch.terminate()
        switch.wait(10)


def run() -> list[str]:
    if os.geteuid() != 0:
        return ["switch_bench: skipped: needs root (veth pairs and raw sockets)"]
    lines = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="switch-bench-") as workdir:
        veths = _Veths(8)
        try:
            floor = _raw_floor(veths)
            one = _builtin(veths, [(1, 2)], workdir)
            lines.append(f"raw AF_PACKET forwarder (floor): {floor:,.0f} packets/s")
            lines.append(f"builtin switch, basic_ipv4, 2 ports: {one:,.0f} packets/s "
                         f"({100 * one / floor if floor else 0:.0f}% of the floor; target >= 50%)")
            flows = [(i, i % 8 + 1) for i in range(1, 9)]
            eight = _builtin(veths, flows, workdir)
            lines.append(f"builtin switch, basic_ipv4, 8 ports busy: {eight:,.0f} packets/s")
            if shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss"):
                bmv2 = _bmv2(veths, [(1, 2)], workdir)
                lines.append(f"simple_switch_grpc, basic_ipv4, 2 ports: {bmv2:,.0f} packets/s "
                             f"(builtin/bmv2 = {one / bmv2 if bmv2 else 0:.2f})")
            else:
                lines.append("simple_switch_grpc: not installed, not measured")
        finally:
            veths.close()
    lines.append(f"(window {WINDOW_S:.0f} s per figure, {time.monotonic() - started:.0f} s in all)")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
