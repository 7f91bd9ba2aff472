"""Switch process speed: forwarded packets/s between veth pairs, against the machine's floor.

In one run, under identical conditions:
  * raw floor: a plain Python AF_PACKET receive-and-send forwarder (what any
    Python switch pays for the sockets alone), on its own veth pairs;
  * native floor: the same in C with batched recvmmsg/sendmmsg
    (benchmarks/native_floor.c, built with the system compiler), on its own
    veth pairs: what a native engine pays for its ports alone;
  * the builtin switch running tests/p4programs/basic_ipv4.p4 (8 ports, one
    flow port 1 -> port 2), and the ratio;
  * the builtin switch with 8 ports busy (each port's host sends to the next);
  * simple_switch_grpc on the same harness, where it is installed.

Fairness: both forwarders run for the whole benchmark (each on its own
veths, idle while the other is measured) and are measured in alternating
rounds (floor, switch, floor, switch, ...), so background load on a shared
machine hits both alike; the ratio is the median of the per-round ratios.
Both are fed by the same sender program, a separate process sending
batches of BURST frames per time check (optionally capped at SEND_PPS).
The sender itself needs a core to saturate the forwarder, so its CPU share
is printed too.

Figures: forwarded packets/s (the far host interface's kernel rx counter,
so no user-space receiver limits the figure) and the forwarder's CPU time
per forwarded packet (user + system time of the whole process from
/proc/PID/stat, so the kernel work of its own receive and send calls is
included).  CPU per packet is the figure that does not depend on how busy
the machine is; packets/s depends on it.  Needs root; bounded < 60 s.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from pathlib import Path

from benchmarks import targets
from testbed.p4model.backend.native import compiler

REPO = Path(__file__).resolve().parents[1]
PROGRAM = REPO / "tests" / "p4programs" / "basic_ipv4.p4"
WINDOW_S = 2.5
ROUNDS = 3
BURST = 64
SEND_PPS = 0  # 0: as fast as the sender can (saturate the forwarder)
TAG = f"tsb{os.getpid() % 1000}"
SWITCH_PORTS = 8
FLOOR_PORTS = (SWITCH_PORTS + 1, SWITCH_PORTS + 2)
NATIVE_FLOOR_PORTS = (SWITCH_PORTS + 3, SWITCH_PORTS + 4)
NATIVE_FLOOR_SOURCE = Path(__file__).with_name("native_floor.c")

SENDER = r"""
import socket, sys, time
window, burst, pps = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
pairs = [(sys.argv[i], bytes.fromhex(sys.argv[i + 1])) for i in range(4, len(sys.argv), 2)]
socks = []
for iface, frame in pairs:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    socks.append((s.send, frame))
batch = [socks[i % len(socks)] for i in range(burst * len(socks))]
gap = len(batch) / pps if pps else 0.0
start = time.monotonic()
end = start + window
due = start
while True:
    now = time.monotonic()
    if now >= end:
        break
    if gap:
        if now < due:
            time.sleep(due - now)
        due += gap
    for send, frame in batch:
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

_TICK = os.sysconf("SC_CLK_TCK")


def _sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def _mac(n: int) -> str:
    return f"00:00:00:00:00:{n:02x}"


def _frame(dst_net: int) -> str:
    eth = bytes.fromhex("0000000000fe" + "000000000001" + "0800")
    ip = bytes([0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, dst_net, 1])
    return (eth + ip + bytes(30)).hex()


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


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


class Sample:
    """One measurement window: forwarded packets/s, forwarder CPU, sender CPU."""

    def __init__(self, pps: float, cpu_s: float, sender_cpu_s: float) -> None:
        self.pps = pps
        self.cpu_s = cpu_s
        self.sender_cpu_s = sender_cpu_s

    @property
    def us_per_packet(self) -> float:
        packets = self.pps * WINDOW_S
        return 1e6 * self.cpu_s / packets if packets else float("inf")


def _measure(veths: _Veths, flows: list[tuple[int, int]], forwarder_pid: int) -> Sample:
    """flows: (from port, to port); the same sender program for every forwarder."""
    args = []
    for src, dst in flows:
        args += [veths.host(src), _frame(dst)]
    dsts = sorted({d for _, d in flows})
    before, cpu = sum(veths.rx(d) for d in dsts), _cpu_s(forwarder_pid)
    sender = subprocess.Popen([sys.executable, "-c", SENDER, str(WINDOW_S), str(BURST), str(SEND_PPS), *args])
    _, status, usage = os.wait4(sender.pid, 0)
    sender.returncode = os.waitstatus_to_exitcode(status)
    time.sleep(0.1)  # let the forwarder drain what it already holds
    forwarded = sum(veths.rx(d) for d in dsts) - before
    return Sample(forwarded / WINDOW_S, _cpu_s(forwarder_pid) - cpu, usage.ru_utime + usage.ru_stime)


def _start_builtin(veths: _Veths, backend: str) -> subprocess.Popen:
    import p4runtime_sh.shell as sh

    argv = [sys.executable, "-m", "testbed.p4model.switch", "--backend", backend]
    for i in range(1, SWITCH_PORTS + 1):
        argv += ["-i", f"{i}@{veths.sw(i)}"]
    argv += ["--thrift-port", "0", str(PROGRAM), "--", "--grpc-server-addr", "127.0.0.1:0"]
    switch = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    match = re.search(r"grpc \S+:(\d+)", switch.stdout.readline())
    if not match:
        _stop(switch)
        raise RuntimeError("the builtin switch did not start")
    _routes(sh, f"127.0.0.1:{match.group(1)}", SWITCH_PORTS, None)
    return switch


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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


def _start_floor(veths: _Veths) -> subprocess.Popen:
    a, b = FLOOR_PORTS
    forwarder = subprocess.Popen([sys.executable, "-c", FORWARDER, veths.sw(a), veths.sw(b)],
                                 stdout=subprocess.PIPE, text=True)
    forwarder.stdout.readline()
    return forwarder


def _start_native_floor(veths: _Veths, workdir: str) -> subprocess.Popen | None:
    """The C forwarder on its own veths, None (and no figure) where no C compiler is found."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    binary = os.path.join(workdir, "native_floor")
    _sh(compiler, "-O2", "-o", binary, str(NATIVE_FLOOR_SOURCE))
    a, b = NATIVE_FLOOR_PORTS
    forwarder = subprocess.Popen([binary, veths.sw(a), veths.sw(b)], stdout=subprocess.PIPE, text=True)
    forwarder.stdout.readline()
    return forwarder


def _bmv2(veths: _Veths, flows, workdir: str) -> Sample:
    import p4runtime_sh.shell as sh

    json_path, info_path = os.path.join(workdir, "p.json"), os.path.join(workdir, "p.p4info.txtpb")
    _sh("p4c-bm2-ss", "--arch", "v1model", "-o", json_path, "--p4runtime-files", info_path, str(PROGRAM))
    argv = ["simple_switch_grpc"]
    for i in range(1, SWITCH_PORTS + 1):
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
        _routes(sh, "127.0.0.1:59599", SWITCH_PORTS, sh.FwdPipeConfig(info_path, json_path))
        return _measure(veths, flows, switch.pid)
    finally:
        _stop(switch)


def _line(name: str, samples: list[Sample]) -> str:
    pps = statistics.median(s.pps for s in samples)
    us = statistics.median(s.us_per_packet for s in samples)
    sender = statistics.median(s.sender_cpu_s for s in samples) / WINDOW_S
    return (f"{name}: {pps:,.0f} packets/s, {us:.2f} CPU us/packet "
            f"(= {1e6 / us:,.0f} packets per CPU-second; sender used {100 * sender:.0f}% of a core)")


def run() -> list[str]:
    if os.geteuid() != 0:
        return ["switch_bench: skipped: needs root (veth pairs and raw sockets)"]
    lines = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="switch-bench-") as workdir:
        veths = _Veths(SWITCH_PORTS + 4)
        floor_proc = native_proc = switch = None
        try:
            floor_proc = _start_floor(veths)
            native_proc = _start_native_floor(veths, workdir)
            floor, native = [], []
            backends = ("python", "native") if compiler() else ("python",)
            one: dict[str, list[Sample]] = {b: [] for b in backends}
            eight: dict[str, Sample] = {}
            for backend in backends:  # each back end's switch alone on the ports, floors alongside
                switch = _start_builtin(veths, backend)
                for _ in range(ROUNDS):  # alternate, so background load hits all alike
                    floor.append(_measure(veths, [FLOOR_PORTS], floor_proc.pid))
                    if native_proc is not None:
                        native.append(_measure(veths, [NATIVE_FLOOR_PORTS], native_proc.pid))
                    one[backend].append(_measure(veths, [(1, 2)], switch.pid))
                flows = [(i, i % SWITCH_PORTS + 1) for i in range(1, SWITCH_PORTS + 1)]
                eight[backend] = _measure(veths, flows, switch.pid)
                _stop(switch)
                switch = None
            lines.append(_line("raw AF_PACKET forwarder (floor)", floor))
            if native:
                lines.append(_line("native AF_PACKET forwarder, C, recvmmsg/sendmmsg (native floor)", native))
            else:
                lines.append("native floor: no C compiler (cc or gcc) found, not measured")
            for backend in backends:
                runs = one[backend]
                lines.append(_line(f"builtin switch, {backend} packet path, basic_ipv4, 2 ports", runs))
                floors = floor[-ROUNDS:] if backend == backends[-1] else floor[:ROUNDS]
                cpu_ratio = statistics.median(f.us_per_packet / o.us_per_packet for f, o in zip(floors, runs))
                lines.append(f"  {backend} / floor: {100 * cpu_ratio:.0f}% of the Python floor's packets per CPU-second")
                if native:
                    natives = native[-ROUNDS:] if backend == backends[-1] else native[:ROUNDS]
                    ratio = statistics.median(n.us_per_packet / o.us_per_packet for n, o in zip(natives, runs))
                    lines.append(targets.at_least(
                        f"  {backend} / native floor, same rounds: {100 * ratio:.1f}% of its packets per CPU-second",
                        ratio, 0.5, "50%"))
                lines.append(_line(f"builtin switch, {backend} packet path, basic_ipv4, 8 ports busy",
                                   [eight[backend]]))
            one = one["python"]
            if shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss"):
                bmv2 = _bmv2(veths, [(1, 2)], workdir)
                lines.append(_line("simple_switch_grpc, basic_ipv4, 2 ports", [bmv2]))
                lines.append(f"builtin/bmv2 = {statistics.median(s.pps for s in one) / bmv2.pps if bmv2.pps else 0:.2f}")
            else:
                lines.append("simple_switch_grpc: not installed, not measured")
        finally:
            for process in (switch, floor_proc, native_proc):
                if process is not None:
                    _stop(process)
            veths.close()
    lines.append(f"(sender: bursts of {BURST} frames, {'uncapped' if not SEND_PPS else f'{SEND_PPS:,} packets/s'}; "
                 f"{ROUNDS} alternating rounds of {WINDOW_S:g} s per forwarder, medians; "
                 f"{time.monotonic() - started:.0f} s in all)")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
    sys.exit(targets.exit_code())
