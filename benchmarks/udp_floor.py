"""The kernel's UDP floor: CPU per datagram that sending and receiving cell-sized UDP datagrams costs
a process in the kernel alone, between two network namespaces joined by a veth pair (as a host and
its ToR are in an emulated run), with no Python on the path.

benchmarks/udp_floor.c is built with the system C compiler into a temporary directory at each run.
Its receiver blocks in recvmmsg on a socket with SO_TIMESTAMPNS and IP_RECVTOS set, as the agent's
is; its sender paces datagrams with a timerfd, one sendmmsg of one datagram per wake-up (or of a
batch, for the split below). Each end reports its own process's CPU (getrusage: user + system)
over its datagrams, so a figure is CPU microseconds per datagram sent, or received, at that end
(user + system together: the kernel apportions the two by tick samples, too coarse to print apart
for a tenth of a CPU second).
On a veth pair the kernel does a datagram's receive processing (up to waking the receiver) in the
sender's system call, so the split between the ends is the kernel's accounting; their mean is the
floor in the agent's unit (CPU per datagram sent or received) for a host that sends as many
datagrams as it receives and wakes once per datagram.

The split: an end's CPU is modelled as a cost per wake-up (a timer expiry, a blocking recvmmsg
that returns) plus a cost per datagram; two measurements at one datagram rate with different
datagrams per wake-up (1 and a batch) give both, for a loop that wakes less than once per datagram.

The namespaces and the veth pair carry a prefix of this benchmark's own (NAME_PREFIX) and the
process id, and are removed when the measurement ends, also when it fails. Needs root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("udp_floor.c")
NAME_PREFIX = "tbfl-"
DATAGRAM_BYTES = 1100  # UDP payload: a 1,024-byte cell with the transport's header is 1,048
PORT = 4999
HOST_ADDR, TOR_ADDR = "10.254.0.1", "10.254.0.2"
IDLE_MS = 5000  # the receiver stops once no datagram came for this long


class FloorUnavailable(Exception):
    """The floor cannot be measured here (no root, no C compiler); the message says why."""


@dataclass(frozen=True)
class End:
    """One end's report: datagrams, CPU seconds (user, system), wake-ups, and its extra count (the
    sender's late wake-ups, the receiver's datagrams without ECT(0) or a receive time)."""

    datagrams: int
    user_s: float
    system_s: float
    wakeups: int
    extra: int

    @property
    def us_per_datagram(self) -> float:
        return (self.user_s + self.system_s) * 1e6 / self.datagrams if self.datagrams else float("inf")


@dataclass(frozen=True)
class Floor:
    rate: float  # datagrams per second the sender was paced at
    batch: int  # datagrams per sender wake-up
    sent: End
    received: End

    @property
    def mean_us(self) -> float:
        """CPU us per datagram sent or received, for as many sent as received."""
        return (self.sent.us_per_datagram + self.received.us_per_datagram) / 2


_LINE = re.compile(r"(send|recv) datagrams=(\d+) user_s=([\d.]+) system_s=([\d.]+) wakeups=(\d+) \w+=(\d+)")


def parse(line: str) -> End:
    match = _LINE.fullmatch(line.strip())
    if match is None:
        raise RuntimeError(f"udp_floor printed {line.strip()!r}, not its report line")
    return End(int(match[2]), float(match[3]), float(match[4]), int(match[5]), int(match[6]))


def check_can_run() -> str:
    """The C compiler to build with; FloorUnavailable says why the floor cannot run here."""
    if os.geteuid() != 0:
        raise FloorUnavailable("needs root (network namespaces and a veth pair)")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise FloorUnavailable("no C compiler (cc or gcc) found")
    if shutil.which("ip") is None:
        raise FloorUnavailable("no ip command (iproute2) found")
    return compiler


def build(compiler: str, workdir: str) -> str:
    binary = os.path.join(workdir, "udp_floor")
    done = subprocess.run([compiler, "-O2", "-o", binary, str(SOURCE)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{SOURCE.name} did not build: {done.stderr.strip()}")
    return binary


def _ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *argv], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(argv)}: {done.stderr.strip()}")
    return done


class VethPair:
    """Two namespaces, `host` and `tor`, joined by a veth pair with an address at each end; `close`
    removes all of it (what it made, only)."""

    def __init__(self, tag: str | None = None) -> None:
        tag = tag or str(os.getpid())
        self.host, self.tor = f"{NAME_PREFIX}{tag}-h", f"{NAME_PREFIX}{tag}-t"
        self.host_dev, self.tor_dev = f"tbfl{tag[-8:]}h", f"tbfl{tag[-8:]}t"  # 15 characters at most
        self._made: list[str] = []
        try:
            for ns in (self.host, self.tor):
                _ip("netns", "add", ns)
                self._made.append(ns)
            _ip("link", "add", self.host_dev, "type", "veth", "peer", "name", self.tor_dev)
            self._made.append("veth")
            for ns, dev, addr in ((self.host, self.host_dev, HOST_ADDR), (self.tor, self.tor_dev, TOR_ADDR)):
                _ip("link", "set", dev, "netns", ns)
                _ip("-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
                _ip("-n", ns, "link", "set", dev, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if "veth" in self._made:  # still here only if it never moved into a namespace
            _ip("link", "del", self.host_dev, check=False)
        for ns in self._made:
            if ns != "veth":
                _ip("netns", "del", ns, check=False)  # takes the veth end inside it along
        self._made = []

    def exists(self) -> list[str]:
        """What of this pair is on the machine: its namespaces, and its veth ends wherever they are
        (the root namespace or its own)."""
        present = [ns for ns in (self.host, self.tor) if ns in _ip("netns", "list", check=False).stdout.split()]
        links = _ip("-o", "link", "show", check=False).stdout
        links += "".join(_ip("-n", ns, "-o", "link", "show", check=False).stdout for ns in present)
        return present + [dev for dev in (self.host_dev, self.tor_dev) if f" {dev}@" in links or f" {dev}:" in links]


def measure(binary: str, pair: VethPair, rate: float, count: int, batch: int = 1,
            timeout_s: float | None = None) -> Floor:
    """`count` datagrams from the host namespace to the ToR namespace at `rate` per second, `batch`
    per sender wake-up."""
    timeout_s = timeout_s or count / rate + 60
    receiver = subprocess.Popen(["ip", "netns", "exec", pair.tor, binary, "recv", str(PORT), str(count),
                                 str(IDLE_MS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = receiver.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError(f"udp_floor receiver did not start: {ready.strip() or receiver.stderr.read().strip()}")
        sender = subprocess.run(["ip", "netns", "exec", pair.host, binary, "send", TOR_ADDR, str(PORT),
                                 f"{rate:g}", str(count), str(DATAGRAM_BYTES), str(batch)],
                                capture_output=True, text=True, timeout=timeout_s)
        if sender.returncode != 0:
            raise RuntimeError(f"udp_floor sender failed: {sender.stderr.strip()}")
        out, err = receiver.communicate(timeout=timeout_s)
        if receiver.returncode != 0:
            raise RuntimeError(f"udp_floor receiver failed: {err.strip()}")
        return Floor(rate, batch, parse(sender.stdout), parse(out))
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()


def line(f: Floor) -> str:
    s, r = f.sent, f.received
    lost = "" if r.datagrams == s.datagrams else f"; {s.datagrams - r.datagrams} datagrams sent were not received"
    per_wakeup = "one" if f.batch == 1 else f"{f.batch}"
    return (f"kernel UDP floor, C, veth between two namespaces, {f.rate:,.0f} datagrams/s of {DATAGRAM_BYTES} B, "
            f"{per_wakeup} per sender wake-up: "
            f"send {s.us_per_datagram:.1f} CPU us/datagram ({s.datagrams} sent, {s.extra} late wake-ups), receive "
            f"{r.us_per_datagram:.1f} CPU us/datagram ({r.datagrams} received in {r.wakeups} recvmmsg calls, "
            f"{r.extra} without ECT(0) or a receive time); mean of the two {f.mean_us:.1f} CPU us/datagram{lost}")


def measure_all(settings: tuple[tuple[float, int], ...], seconds: float = 3.0) -> list[Floor]:
    """One measurement per (datagrams per second, datagrams per sender wake-up), each `seconds`
    long, on one veth pair built for them and removed after; FloorUnavailable where it cannot run."""
    compiler = check_can_run()
    floors = []
    with tempfile.TemporaryDirectory(prefix="udp-floor-") as workdir:
        binary = build(compiler, workdir)
        pair = VethPair()
        try:
            for rate, batch in settings:
                floors.append(measure(binary, pair, rate, int(rate * seconds), batch))
        finally:
            pair.close()
    return floors


@dataclass(frozen=True)
class Split:
    """One end's CPU as `per_wakeup_us` for each wake-up + `per_datagram_us` for each datagram."""

    per_wakeup_us: float
    per_datagram_us: float


def split(one: End, batched: End) -> Split | None:
    """Solve CPU = wake-ups x W + datagrams x D from two measurements; None when their wake-ups per
    datagram differ too little (under 0.2) to tell W from D, or when the noise of the two makes
    either cost negative."""
    if abs(one.wakeups / one.datagrams - batched.wakeups / batched.datagrams) < 0.2:
        return None
    cpu_a, cpu_b = (one.user_s + one.system_s) * 1e6, (batched.user_s + batched.system_s) * 1e6
    det = one.wakeups * batched.datagrams - batched.wakeups * one.datagrams
    fit = Split((cpu_a * batched.datagrams - cpu_b * one.datagrams) / det,
                (one.wakeups * cpu_b - batched.wakeups * cpu_a) / det)
    return fit if fit.per_wakeup_us >= 0 and fit.per_datagram_us >= 0 else None


def split_line(one: Floor, batched: Floor) -> str:
    parts = []
    for name, a, b in (("send", one.sent, batched.sent), ("receive", one.received, batched.received)):
        s = split(a, b)
        parts.append(f"{name}: not separable (wake-ups per datagram {a.wakeups / a.datagrams:.2f} and "
                     f"{b.wakeups / b.datagrams:.2f}, CPU us per datagram {a.us_per_datagram:.1f} and "
                     f"{b.us_per_datagram:.1f})" if s is None else
                     f"{name} {s.per_wakeup_us:.1f} CPU us per wake-up + {s.per_datagram_us:.1f} per datagram")
    return (f"kernel UDP floor split at {one.rate:,.0f} datagrams/s ({one.batch} and {batched.batch} per sender "
            f"wake-up): " + "; ".join(parts))
