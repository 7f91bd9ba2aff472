"""The NIC's timed send queue: datagrams handed over with the time each reaches the ToR.

Model: the transport's pacer fixes when each datagram starts on the host's wire; the
agent adds the host->ToR link (serialisation on its port, then the propagation delay,
`NicPorts.on_wire`) and hands the datagram here with that release time.  The queue sends
each datagram at its release time, earliest first, datagrams with the same release time
in the order they were handed over, and records for each how late it left (send time
minus release time): the host half of the fidelity verdict.  The Python loop is not
woken for any of this: like a NIC pacing in hardware, the queue runs on its own.

Two engines behave the same:
* `NativeNic`: a thread of the agent's process in C (`testbed.host.nic_native`) that
  sleeps until the earliest release and sends what is due with sendmmsg; `receive`
  reads arrivals in batches with recvmmsg, each with its TOS byte and kernel receive time.
  `stage` collects datagrams and `flush` hands them over in one call (the agent flushes
  once per wake-up of its loop, before it sleeps: long before any is due, as a release
  time is at least the host link's delay after the hand-over); `submit` is both at once.
  Several hosts' NICs may share one such thread (`NativePacer` with a lane per host, a
  group of agents in one process): each `NativeNic` of it is its host's lane, with its
  own counters and lateness, and stops on its own (its queued datagrams dropped). The
  lanes stage into their pacer's one buffer (each record carries its lane), so a flush
  of any lane, or `NativePacer.flush`, hands every lane's staged datagrams over in one
  call: a group flushes once per wake-up, after its round of members' steps.
* `PythonNic`: a heap the agent's loop releases from (`release(now)`), waking at
  `next_due()`; arrivals are read one recvmsg at a time.  Used where no C compiler is
  found or with TESTBED_NIC=python.
"""

from __future__ import annotations

import ctypes
import heapq
import socket
import struct
import sys
import time
from typing import Callable

from testbed.host import nic_native
from testbed.cells.flowports import FlowSocket

SO_TIMESTAMPNS = 35  # Linux <asm-generic/socket.h> (SCM_TIMESTAMPNS is the same)
TIMESPEC = struct.Struct("@qq")
RECV_ANCILLARY = socket.CMSG_SPACE(4) + socket.CMSG_SPACE(TIMESPEC.size)
RECV_BATCH = 64
# nic_submit_many's record header (pacer.c `record`): release time (ns, CLOCK_REALTIME), socket,
# destination address and port (network order), TOS byte, length, lane; the datagram's bytes follow.
RECORD = struct.Struct("=qiIHHII")
SLOT = 2048  # bytes per received datagram (a cell is at most cell_size + header + 100 B of INT records)


class PythonNic:
    """The timed send queue in Python: the agent's loop calls `release(now)` at `next_due()`."""

    engine = "python"

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock  # the agent's clock: seconds since its epoch
        self._heap: list[tuple[float, int, FlowSocket, str, int, bytes, int]] = []
        self._seq = 0
        self.sent = 0
        self.errors = 0
        self.late_us: list[float] = []

    def start(self) -> None:
        pass

    def flush(self) -> None:
        pass  # submit queues at once

    def submit(self, due: float, flow: FlowSocket, dst: str, port: int, data: bytes, tos: int) -> None:
        heapq.heappush(self._heap, (due, self._seq, flow, dst, port, data, tos))
        self._seq += 1

    stage = submit

    def next_due(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def release(self, now: float) -> int:
        """Send every datagram due by `now`, earliest first; how many were handed to the kernel."""
        heap, sent = self._heap, 0
        while heap and heap[0][0] <= now:
            due, _seq, flow, dst, port, data, tos = heapq.heappop(heap)
            self.late_us.append((self.clock() - due) * 1e6)
            try:
                flow.send(data, (dst, port), tos)
                sent += 1
            except OSError:
                self.errors += 1  # buffer full or peer unreachable: a loss on the wire
        self.sent += sent
        return sent

    def queued(self) -> int:
        return len(self._heap)

    def lateness_us(self) -> list[float]:
        return list(self.late_us)

    def close(self) -> int:
        dropped = len(self._heap)
        self._heap.clear()
        return dropped


class NativePacer:
    """A native pacing thread and its queue (`nic_native/pacer.c`), with `lanes` lanes: one host's
    NIC, or several hosts' sharing one thread (a `NativeNic` per lane)."""

    def __init__(self, lanes: int = 1) -> None:
        self.lib = nic_native.load()
        self.h = self.lib.nic_open()
        if not self.h:
            raise nic_native.NativeUnavailable("the native NIC could not allocate its queue")
        if lanes > 1 and self.lib.nic_lanes(self.h, lanes) != 0:
            raise nic_native.NativeUnavailable(f"the native NIC could not allocate {lanes} lanes")
        self.lanes = lanes
        self.staged = bytearray()  # every lane's records since the last flush, in hand-over order
        self._submit_many = self.lib.nic_submit_many

    def flush(self) -> None:
        """Hand every lane's staged datagrams to the thread in one call (one lock, one timer arming
        at most); a datagram that could not be queued is counted in its lane (`NativeNic.errors`)."""
        staged = self.staged
        if staged:
            self._submit_many(self.h, bytes(staged), len(staged))
            staged.clear()

    def start(self) -> None:
        """Start the thread (once; it takes the calling thread's scheduling, e.g. SCHED_FIFO)."""
        if self.lib.nic_start(self.h) != 0:
            raise nic_native.NativeUnavailable("the native NIC's thread could not start")

    def stop(self) -> int:
        """Stop the thread; what is still queued (any lane) is dropped (returns how many)."""
        return self.lib.nic_stop(self.h) if self.h else 0

    def __del__(self) -> None:
        h, self.h = getattr(self, "h", None), None
        if h:
            self.lib.nic_free(h)


class NativeNic:
    """The timed send queue on a native thread (`nic_native/pacer.c`); release times are the
    agent's clock (seconds since `epoch`, a CLOCK_REALTIME time) and become absolute ns here.
    With `pacer`, this NIC is its lane `lane` (the thread is shared); without, it has its own."""

    engine = "native"

    def __init__(self, epoch: float, pacer: NativePacer | None = None, lane: int = 0) -> None:
        self.shared = pacer is not None
        self.pacer = pacer if pacer is not None else NativePacer()
        if not 0 <= lane < self.pacer.lanes:
            raise ValueError(f"lane {lane} of a pacer with {self.pacer.lanes}")
        self.lib = self.pacer.lib
        self.lane = lane
        self.epoch = epoch
        self._h = self.pacer.h
        self._addr: dict[str, int] = {}
        self._submit = self.lib.nic_submit
        self._staged = self.pacer.staged  # shared by the pacer's lanes
        self._pack = RECORD.pack
        self.submit_errors = 0  # nic_submit's refusals (nic_submit_many's are counted in the lane)
        self._final: tuple[int, int] | None = None

    def start(self) -> None:
        """Start the pacing thread (it takes the calling thread's scheduling, e.g. SCHED_FIFO);
        a shared thread that runs already goes on."""
        self.pacer.start()

    def submit(self, due: float, flow: FlowSocket, dst: str, port: int, data: bytes, tos: int) -> None:
        addr = self._addr.get(dst)
        if addr is None:
            addr = self._addr[dst] = int.from_bytes(socket.inet_aton(dst), sys.byteorder)
        if self.lane:  # nic_submit is lane 0's: another lane's datagram goes as a record
            self.stage(due, flow, dst, port, data, tos)
            self.flush()
        elif self._submit(self._h, flow.sock.fileno(), addr, socket.htons(port), tos,
                          int((due + self.epoch) * 1e9), data, len(data)) != 0:
            self.submit_errors += 1

    def stage(self, due: float, flow: FlowSocket, dst: str, port: int, data: bytes, tos: int) -> None:
        """Collect a datagram for the next `flush` (the same hand-over as `submit`, in order)."""
        addr = self._addr.get(dst)
        if addr is None:
            addr = self._addr[dst] = int.from_bytes(socket.inet_aton(dst), sys.byteorder)
        staged = self._staged
        staged += self._pack(int((due + self.epoch) * 1e9), flow.sock.fileno(), addr, socket.htons(port), tos,
                             len(data), self.lane)
        staged += data

    def flush(self) -> None:
        """Hand every staged datagram to the thread in one call (of a shared pacer: every lane's)."""
        if self._staged:
            self.pacer.flush()

    def next_due(self) -> float | None:
        return None  # the thread releases on its own

    def release(self, now: float) -> int:
        return 0

    def _counts(self) -> tuple[int, int, int, int, int]:
        """The lane's sent, send errors, queued, lateness samples and datagrams not queued."""
        out = (ctypes.c_uint64 * 5)()
        self.lib.nic_counts(self._h, self.lane, out)
        return out[0], out[1], out[2], out[3], out[4]

    @property
    def sent(self) -> int:
        return self._final[0] if self._final else self._counts()[0]

    @property
    def errors(self) -> int:
        if self._final:
            return self._final[1] + self.submit_errors
        counts = self._counts()
        return counts[1] + counts[4] + self.submit_errors

    def queued(self) -> int:
        return 0 if self._final else self._counts()[2]

    def lateness_us(self) -> list[float]:
        n = self._counts()[3] if self._h else 0
        buf = (ctypes.c_int64 * max(1, n))()
        got = self.lib.nic_lateness(self._h, self.lane, 0, buf, n) if n else 0
        return [buf[i] / 1e3 for i in range(got)]

    def close(self) -> int:
        """Stop the thread (a shared one: this lane only, the thread goes on for the others);
        what is still queued is dropped (returns how many)."""
        if self._final is not None:
            return 0
        self.flush()  # staged datagrams are queued ones: dropped with them if not yet due
        dropped = self.lib.nic_drop_lane(self._h, self.lane) if self.shared else self.pacer.stop()
        counts = self._counts()
        self._final = (counts[0], counts[1] + counts[4])
        return dropped


def open_nic(clock: Callable[[], float], epoch: float, native: bool = True, pacer: NativePacer | None = None,
             lane: int = 0) -> tuple[PythonNic | NativeNic, str | None]:
    """The native NIC if it can be built and loaded here (and `native`), else the Python one;
    with the reason the native one is not used (None when it is). With `pacer`, the native NIC
    is its lane `lane` (a thread shared with other hosts)."""
    if native:
        try:
            return NativeNic(epoch, pacer, lane), None
        except nic_native.NativeUnavailable as e:
            return PythonNic(clock), str(e)
    return PythonNic(clock), "the pure-Python NIC was asked for"


class BatchReceiver:
    """Arrivals of one UDP socket (IP_RECVTOS and SO_TIMESTAMPNS set) read in batches with
    recvmmsg: `read()` returns (data, source address, TOS byte, kernel receive time in the
    agent's clock or None) for each datagram waiting, at most RECV_BATCH.

    nic_recv is called through a prototype that takes the buffers' addresses as plain integers
    (fixed at construction), and the lengths, addresses, TOS bytes and times are read from the
    arrays as memoryviews, a list of each at once; source addresses are turned into text once."""

    def __init__(self, sock: socket.socket, epoch: float) -> None:
        self.lib = nic_native.load()
        self.fd = sock.fileno()
        self.epoch = epoch
        self.buf = ctypes.create_string_buffer(SLOT * RECV_BATCH)
        self.lens = (ctypes.c_int32 * RECV_BATCH)()
        self.addrs = (ctypes.c_uint32 * RECV_BATCH)()
        self.tos = (ctypes.c_int32 * RECV_BATCH)()
        self.stamps = (ctypes.c_int64 * RECV_BATCH)()
        self._view = memoryview(self.buf).cast("B")
        self._lens = memoryview(self.lens).cast("B").cast("i")
        self._addrs = memoryview(self.addrs).cast("B").cast("I")
        self._tos = memoryview(self.tos).cast("B").cast("i")
        self._stamps = memoryview(self.stamps).cast("B").cast("q")
        c = ctypes
        self._recv = c.CFUNCTYPE(c.c_int, c.c_int, c.c_void_p, c.c_size_t, c.c_int, c.c_void_p, c.c_void_p,
                                 c.c_void_p, c.c_void_p)(("nic_recv", self.lib))
        self._args = (self.fd, c.addressof(self.buf), SLOT, RECV_BATCH, c.addressof(self.lens),
                      c.addressof(self.addrs), c.addressof(self.tos), c.addressof(self.stamps))
        self._names: dict[int, str] = {}
        self.errors = 0

    def read(self) -> list[tuple[bytes, str, int, float | None]]:
        n = self._recv(*self._args)
        if n <= 0:
            if n < 0:
                self.errors += 1
            return []
        view, names, epoch, out = self._view, self._names, self.epoch, []
        start = 0
        for length, a, tos, stamp in zip(self._lens[:n].tolist(), self._addrs[:n].tolist(),
                                         self._tos[:n].tolist(), self._stamps[:n].tolist()):
            src = names.get(a)
            if src is None:
                src = names[a] = socket.inet_ntoa(a.to_bytes(4, sys.byteorder))
            out.append((view[start:start + length].tobytes(), src, tos, stamp / 1e9 - epoch if stamp else None))
            start += SLOT
        return out


def wall_clock(epoch: float) -> Callable[[], float]:
    return lambda: time.time() - epoch
