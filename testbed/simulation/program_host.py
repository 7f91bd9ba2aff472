"""The hosts of the program network (program_net.py): their NIC wires and their transport.

A host is the real sans-IO Endpoint and WorkloadRunner on the model clock (integer nanoseconds).
It sends the frames a UDP agent puts on the wire: Ethernet, IPv4 (ECT(0) for DATA, the header
checksum right), UDP from the flow's source port (`cells.flowports`, chosen as the agent chooses
it) to the cell port, then the cell. A NIC port is a `Wire` of the host link's rate and delay: a
frame starts when the port is free and reaches its ToR one serialisation and one delay later. The
GPUs of a server talk over their local channel, a wire of `links.local`. The network around the
hosts (`net`: its engine, event list and address book) is program_net.ProgramNetwork.

This module is on the hot path of every simulated cell, so it is compiled with the transport
(testbed/compiled: mypyc; the source is the reference and runs as it is without a build).
"""

from __future__ import annotations

import heapq
import math
import socket
import struct
from typing import Any

from testbed.cells import wire
from testbed.cells.flowports import FLOW_PORT_BASE, FLOW_PORTS, flow_source_port
from testbed.host.app import WorkloadRunner
from testbed.host.endpoint import Endpoint, channel_of_datagram

ECT0 = 2  # the IPv4 ECN field of an ECN-capable (DATA) cell
_IP = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_TEN_WORDS = struct.Struct("!10H")
MIN_FRAME_BYTES = 64  # the shortest Ethernet frame: the least one serialisation can take
FOREVER = 1 << 62
WAKE, DELIVER, LOCAL, LOOK = 0, 1, 2, 3
_OUT_RECORD = struct.Struct("<qIII4x")  # engine.c eng_inject_many: at_ns, switch, port, length
_KEPT_RECORD = struct.Struct("<qII")  # engine.c eng_kept: at_ns, host (NIC index), length
_PAD = bytes(8)


def mac_bytes(text: str) -> bytes:
    """aa:bb:cc:dd:ee:ff as six bytes."""
    return bytes(int(x, 16) for x in text.split(":"))


def ser_ns(nbytes: int, rate_bps: float) -> int:
    """Nanoseconds to serialise `nbytes` at `rate_bps` (engine.c's rounding: up)."""
    return math.ceil(nbytes * 8e9 / rate_bps)


class Wire:
    """One direction of a host's cable: a NIC port to its ToR port (or a local channel to a
    peer GPU), free again at `free_ns`; on a lossless fabric, the port's PFC gate (host/pfc.py:
    DATA held while the ToR pauses it, in order). While `down` (a cut cable, program_faults.py)
    what it sends still takes its time on the wire and is lost (`lost` counts it)."""

    switch: int
    port: int
    rate_bps: float
    delay_ns: int
    free_ns: int
    eth: bytes
    gate: Any  # host/pfc.PauseGate, or None
    down: bool
    lost: int
    data_lost: int

    def __init__(self, switch: int, port: int, rate_bps: float, delay_ns: int, eth: bytes,
                 gate: Any = None) -> None:
        self.switch, self.port, self.rate_bps, self.delay_ns = switch, port, rate_bps, delay_ns
        self.free_ns, self.eth, self.gate = 0, eth, gate
        self.down, self.lost, self.data_lost = False, 0, 0

    def send(self, now_ns: int, wire_bytes: int) -> int:
        """The frame starts when the wire is free; when its last bit reaches the far end."""
        begin = now_ns if now_ns > self.free_ns else self.free_ns
        self.free_ns = begin + ser_ns(wire_bytes, self.rate_bps)
        return self.free_ns + self.delay_ns


class EventList:
    """The hosts' side of the model clock: their pending events and the frames they sent.

    An event is (ns, sequence, kind, target, arg) in a heap: WAKE a host (arg: the timer's time,
    or None), DELIVER a frame to a NIC (target: the engine's NIC index), LOCAL a datagram over a
    server's local channel, LOOK at a dual-homed NIC's ports. Ties go in the order pushed. The
    frames the hosts put on their wires wait in `outbox` as engine.c's inject records, in the order
    sent, and enter the engine in one call (program_net.ProgramNetwork.flush) before the engine
    runs or anyone reads it: the same frames, times and order as one call per frame."""

    heap: list[tuple[int, int, int, Any, Any]]
    seq: int
    now_ns: int
    events: int
    outbox: bytearray
    queued: int

    def __init__(self) -> None:
        self.heap, self.seq, self.now_ns, self.events = [], 0, 0, 0
        self.outbox, self.queued = bytearray(), 0

    def push(self, t_ns: int, kind: int, target: Any, arg: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t_ns, self.seq, kind, target, arg))

    def send(self, switch: int, port: int, frame: bytes, at_ns: int) -> None:
        """`frame` reaches `port` of `switch` at `at_ns` (once flushed into the engine)."""
        n = len(frame)
        self.outbox += _OUT_RECORD.pack(at_ns, switch, port, n)
        self.outbox += frame
        if n & 7:
            self.outbox += _PAD[:8 - (n & 7)]
        self.queued += 1

    def take_outbox(self) -> tuple[bytes, int]:
        """(the records, how many) sent since the last take; the outbox is then empty."""
        out, count = bytes(self.outbox), self.queued
        self.outbox, self.queued = bytearray(), 0
        return out, count

    def deliveries(self, raw: bytes) -> None:
        """A DELIVER event for each delivery the engine kept (engine.c eng_kept's records)."""
        off, n = 0, len(raw)
        while off < n:
            at, nic, length = _KEPT_RECORD.unpack_from(raw, off)
            self.push(at, DELIVER, nic, raw[off + 16:off + 16 + length])
            off += 16 + ((length + 7) & ~7)

    def dispatch(self, reached: int, by_nic: list[Any]) -> None:
        """Every event at or before `reached`, in time order (what a host does may add more)."""
        heap = self.heap
        while heap and heap[0][0] <= reached:
            t, _, kind, target, arg = heapq.heappop(heap)
            self.now_ns = t
            self.events += 1
            if kind == DELIVER:
                host, port = by_nic[target]
                host.receive(t, port, arg)
            elif kind == WAKE:
                if arg is not None:  # a timer: only the latest one set counts
                    if target.wake_ns != arg:
                        continue
                    target.wake_ns = None
                target.kick(t)
            elif kind == LOCAL:
                src, data, tos = arg
                target.receive_local(t, src, data, tos)
            else:
                target.look_at_ports(t)


class ProgramHost:
    """A host on the program network: its Endpoint, its NIC's wires and its workload."""

    def __init__(self, net: Any, name: str, index: int, ip: str, ep: Endpoint) -> None:
        self.net: Any = net  # program_net.ProgramNetwork
        self.clock: EventList = net.clock
        self.name, self.index, self.ep = name, index, ep
        self.ip = socket.inet_aton(ip)
        self.wires: list[Wire] = []
        self.nic: Any = None  # host/nic.NicPorts of a multi-port NIC
        self.local: Endpoint | None = None
        self.local_wires: dict[str, Wire] = {}
        self.runner: WorkloadRunner | None = None
        self.wake_ns: int | None = None
        self._sport: dict[tuple[str, int], int] = {}
        self._headers: dict[tuple[int, str, int, int, int], bytes] = {}
        self.gated = False  # lossless: its NIC ports obey the ToR's pause frames
        self.rx_not_cells = 0  # frames delivered that are no cell for this host (PFC, not IPv4/UDP)
        self.port_tx: list[int] = []  # frames sent per NIC port
        self.data_tx = self.data_rx = 0  # DATA cells put on the NIC's wires, and delivered by the ToRs
        self.tx_bytes = self.rx_bytes = 0  # frames on the NIC's ports, both ways
        self.nic_sample_ns = 0
        # agent_stall (program_faults.py): the host stops whole; what arrives meanwhile waits here
        self.stalled = False
        # as (arrival ns, NIC port, frame, "", 0), or (arrival ns, -1, data, src, tos) from a local channel
        self.held: list[tuple[int, int, bytes, str, int]] = []

    def source_port(self, dst: str, channel: int) -> int:
        """The flow's UDP source port, as the agent binds it (flowports, the next free one)."""
        known = self._sport.get((dst, channel))
        if known is not None:
            return known
        taken = set(self._sport.values()) | {wire.CELL_UDP_PORT}
        first = flow_source_port(self.net.seed, socket.inet_ntoa(self.ip), self.net.ip_of[dst], channel)
        sport = first
        for step in range(FLOW_PORTS):
            sport = FLOW_PORT_BASE + (first - FLOW_PORT_BASE + step) % FLOW_PORTS
            if sport not in taken:
                break
        self._sport[(dst, channel)] = sport
        return sport

    def frame(self, port: int, dst: str, sport: int, tos: int, data: bytes) -> bytes:
        """Ethernet + IPv4 + UDP + `data`, as the kernel sends a datagram from a flow's socket
        (identification 0, don't-fragment, TTL 64, UDP checksum 0)."""
        key = (port, dst, sport, tos, len(data))
        head = self._headers.get(key)
        if head is None:
            udp_len = 8 + len(data)
            ip = _IP.pack(0x45, tos, 20 + udp_len, 0, 0x4000, 64, 17, 0, self.ip, self.net.ip_bytes[dst])
            total = sum(_TEN_WORDS.unpack(ip))
            while total >> 16:
                total = (total & 0xFFFF) + (total >> 16)
            ip = ip[:10] + struct.pack("!H", ~total & 0xFFFF) + ip[12:]
            head = self._headers[key] = (self.wires[port].eth + ip
                                         + _UDP.pack(sport, wire.CELL_UDP_PORT, udp_len, 0))
        return head + data

    def kick(self, now_ns: int) -> None:
        """Poll the workload and the transport at `now_ns`, put what they release on the wires,
        and schedule the next wake-up (never at the same instant: the host always moves on)."""
        if self.stalled:
            return
        net = self.net
        now = now_ns / 1e9
        if self.runner is not None:
            self.runner.poll(now)
        for tx in self.ep.poll(now):
            data, dst = tx.data, tx.dst
            channel = channel_of_datagram(data)
            sport = self.source_port(dst, channel)
            port = 0
            if self.nic is not None:
                port, data = self.nic.choose(data, sport, channel)
                self.nic.sent(port, now, data[0] & 0x0F)
            frame = self.frame(port, dst, sport, ECT0 if tx.ect else 0, data)
            gate = self.wires[port].gate
            if gate is not None and not gate.admit(data[0] & 0x0F, now, frame, now):
                continue  # paused, or behind held DATA: the gate keeps it in order
            self._put_on_wire(port, frame, now_ns, data[0] & 0x0F == wire.DATA)
        if self.gated:
            self._release_held(now_ns)
        if self.local is not None:
            for tx in self.local.poll(now):
                w = self.local_wires[tx.dst]
                at = w.send(now_ns, len(tx.data) + wire.FRAME_OVERHEAD)
                if w.down:
                    w.lost += 1
                    continue
                self.clock.push(at, LOCAL, net.hosts[tx.dst], (self.name, tx.data, ECT0 if tx.ect else 0))
        times = [t for t in (self.ep.polled_deadline, self.local.polled_deadline if self.local else None,
                             self.runner.next_deadline(now) if self.runner else None) if t is not None]
        if self.gated:
            times += [t for w in self.wires if w.gate is not None
                      for t in (w.gate.wake_at(w.free_ns / 1e9),) if t is not None]
        if not times:
            return
        t = math.ceil(min(times) * 1e9)
        if t <= now_ns:
            t = now_ns + 1
        if self.wake_ns is not None and now_ns <= self.wake_ns <= t:
            return
        self.wake_ns = t
        self.clock.push(t, WAKE, self, t)

    def _release_held(self, now_ns: int) -> None:
        """Each gate's held DATA that may start by now goes on its wire, one at a time."""
        for i, w in enumerate(self.wires):
            gate = w.gate
            while gate is not None:
                start = gate.next_start(now_ns / 1e9, w.free_ns / 1e9)
                if start is None:
                    break
                frame = gate.pop()
                self._put_on_wire(i, frame, max(math.ceil(start * 1e9), now_ns), frame[42] & 0x0F == wire.DATA)

    def _put_on_wire(self, port: int, frame: bytes, start_ns: int, is_data: bool) -> None:
        """Send `frame` on NIC port `port`'s wire from `start_ns` (after what it still serialises):
        into the ToR, or counted lost when the cable is down."""
        w = self.wires[port]
        at = w.send(start_ns, len(frame))
        self.data_tx += is_data
        if w.down:
            w.lost += 1
            w.data_lost += is_data
        else:
            self.clock.send(w.switch, w.port, frame, at)
        self.port_tx[port] += 1
        self.tx_bytes += len(frame)

    def receive(self, now_ns: int, port: int, frame: bytes, arrived_ns: int | None = None) -> None:
        """A frame the fabric delivered to NIC port `port`: the UDP payload to the transport (a
        stalled host keeps it for its resume, which passes it on with its arrival time)."""
        if self.stalled:
            self.held.append((now_ns, port, frame, "", 0))
            return
        self.rx_bytes += len(frame)
        gate = self.wires[port].gate
        if gate is not None and frame[12:14] == b"\x88\x08":  # the ToR's PFC pause frame
            gate.pause.on_frame(frame, now_ns / 1e9)
            self.kick(now_ns)
            return
        if len(frame) < 42 or frame[12] != 0x08 or frame[13] != 0x00:
            self.rx_not_cells += 1  # a PFC pause frame or anything not IPv4
            return
        ihl = (frame[14] & 0x0F) * 4
        udp = 14 + ihl
        if frame[23] != 17 or (frame[udp + 2] << 8 | frame[udp + 3]) != wire.CELL_UDP_PORT:
            self.rx_not_cells += 1
            return
        src = self.net.name_of_ip.get(frame[26:30])
        if src is None:
            self.rx_not_cells += 1
            return
        udp_len = frame[udp + 4] << 8 | frame[udp + 5]
        self.data_rx += frame[udp + 8] & 0x0F == wire.DATA if udp_len > 8 else 0
        now = now_ns / 1e9
        arrived = None if arrived_ns is None else arrived_ns / 1e9
        if self.nic is not None:
            self.nic.heard(port, now if arrived is None else arrived)
        self.ep.receive(now, src, frame[udp + 8:udp + udp_len], frame[15], arrived)
        if arrived_ns is None:
            self.kick(now_ns)

    def receive_local(self, now_ns: int, src: str, data: bytes, tos: int, arrived_ns: int | None = None) -> None:
        local = self.local
        if local is None:
            return
        if self.stalled:
            self.held.append((now_ns, -1, data, src, tos))
            return
        local.receive(now_ns / 1e9, src, data, tos, None if arrived_ns is None else arrived_ns / 1e9)
        if arrived_ns is None:
            self.kick(now_ns)

    def stall(self, stalled: bool, now_ns: int) -> None:
        """agent_stall: the whole host stops (application, transport, timers, NIC), as SIGSTOP stops
        the agent; on resume it reads what arrived meanwhile, each with its arrival time (the
        kernel's receive timestamp), and its late timers fire."""
        self.stalled = stalled
        if stalled:
            return
        held, self.held = self.held, []
        for at, port, data, src, tos in held:
            if port < 0:
                self.receive_local(now_ns, src, data, tos, arrived_ns=at)
            else:
                self.receive(now_ns, port, data, arrived_ns=at)
        self.kick(now_ns)

    def look_at_ports(self, now_ns: int) -> None:
        """A dual-homed NIC's periodic look at its ports (as the agent's sample and sim.py's)."""
        nic = self.nic
        if nic is not None and not self.stalled and nic.check_silence(now_ns / 1e9):
            self.ep.set_link_rate(nic.rate_bps())
            self.kick(now_ns)
        self.clock.push(now_ns + self.nic_sample_ns, LOOK, self, None)


