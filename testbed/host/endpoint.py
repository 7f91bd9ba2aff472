"""The sans-IO host transport: all flows of one host behind one paced NIC.

Drivers feed it datagrams (`receive`) and the clock (`poll`), send what
`poll` returns and call `poll` again at `next_deadline()`. It never reads a
clock, a socket or a random source of its own, so the same object runs in
the simulated network (virtual time) and in the UDP agent (wall time).

Anything a peer sends that is malformed or unexpected (unknown flow, wrong
peer, ack for cells never sent) is counted in `errors` and dropped: bad
input can neither crash the host nor reach a delivered message.
"""

from __future__ import annotations

import zlib
from collections import Counter, deque
from dataclasses import dataclass
from typing import Callable, cast

from testbed.errors import TestbedError
from testbed.cells import segment, wire
from testbed.host.cc import make_receiver_cc
from testbed.host.cc.nscc import NsccSender
from testbed.host.cc.tita import TitaSender
from testbed.host.config import TransportConfig
from testbed.host.entropy import echo
from testbed.host.pacing import Pacer
from testbed.host.receiver import Delivered, ReceiverFlow
from testbed.host.sender import OutMessage, SenderFlow

MAX_RECEIVER_FLOWS = 4096
INT_RECORDS_MAX = 200_000  # DATA cells whose INT records a host keeps (about 40 MB of records)
# A sender flow's id: the host's 16-bit salt, then the collective channel it carries (6 bits,
# channels 0..63 as the scenario schema allows) and its number among that channel's flows
# (10 bits). Every cell of a flow, DATA and the control cells answering it, carries the id, so a
# driver can tell a cell's channel from its header alone (`channel_of`): the agent sends each
# channel from its own UDP source port, answers included, so flow-hash ECMP sees each channel as
# a flow of its own in both directions.
CHANNEL_SHIFT, CHANNEL_BITS, FLOW_NUMBER_BITS = 10, 6, 10
MAX_CHANNELS = 1 << CHANNEL_BITS
MAX_FLOWS_PER_CHANNEL = (1 << FLOW_NUMBER_BITS) - 1
ECN_MASK = 0x03
ECN_CE = 0x03
ECT0 = 0x02


_RX_COUNTER = {t: f"rx_{name}" for t, name in wire.TYPE_NAMES.items()}  # decode() admits no other type


def channel_of(flow_id: int) -> int:
    """The collective channel a flow id carries (0 for every flow that is not a channel's)."""
    return (flow_id >> CHANNEL_SHIFT) & (MAX_CHANNELS - 1)


def channel_of_datagram(data: bytes) -> int:
    """The channel of an encoded cell, from its header's flow id (bytes 4-7, wire.py)."""
    return (data[6] >> (CHANNEL_SHIFT - 8)) & (MAX_CHANNELS - 1) if len(data) >= 8 else 0


class EndpointError(TestbedError):
    """A flow the endpoint cannot number (too many flows of one channel, a channel out of range)."""


@dataclass(slots=True, init=False)
class Transmit:
    """One datagram to send: destination, UDP payload, whether it is ECT(0), and its wire start."""

    dst: str
    data: bytes
    ect: bool
    start: float  # when the NIC puts it on the wire (the pacer's schedule; may be before `now`)
    ready: float | None  # when it came to be or was due: its start is never earlier

    def __init__(self, dst: str, data: bytes, ect: bool, start: float = 0.0, ready: float | None = None) -> None:
        """Written out, as wire.CellPacket's: compiled, it is native code (one per datagram)."""
        self.dst = dst
        self.data = data
        self.ect = ect
        self.start = start
        self.ready = ready


class Endpoint:
    def __init__(
        self,
        name: str,
        cfg: TransportConfig,
        on_delivered: Callable[[Delivered], None] | None = None,
        on_acked: Callable[[str, OutMessage], None] | None = None,
        wire_from_schedule: bool = True,
    ) -> None:
        """`wire_from_schedule`: the driver puts each datagram on its wire at `Transmit.start`
        (the agent's link model), which a late wake-up may have passed, so a DATA cell's
        round trip counts from there; a driver that sends at `now` (the simulator) says False."""
        self.name = name
        self.cfg = cfg
        self.nic = Pacer(cfg.link_rate_bps, cfg.nic_catchup_s)
        self.rcc = make_receiver_cc(cfg)
        # dst -> its channel-0 flow; (dst, channel) -> a collective channel's own flow
        self.senders: dict[str | tuple[str, int], SenderFlow] = {}
        self._flows_of_channel: Counter[int] = Counter()
        self._by_flow_id: dict[int, SenderFlow] = {}
        self.receivers: dict[tuple[str, int], ReceiverFlow] = {}
        self.wire_from_schedule = wire_from_schedule
        # Waiting for the NIC, each with the time it came to be or was due (None: a credit the
        # receiver's pacing grid released, which may catch up like the NIC).
        self._control: deque[tuple[str, wire.CellPacket, float | None]] = deque()
        self._credited: deque[tuple[str, bytes, float, SenderFlow, int]] = deque()  # and its flow and psn
        self._restamp: tuple[SenderFlow, int] | None = None
        self._rr = 0
        self._salt = zlib.crc32(name.encode()) & 0xFFFF
        self.on_delivered = on_delivered or (lambda d: self.delivered.append(d))
        self.on_acked = on_acked or (lambda dst, m: self.acked.append((dst, m)))
        # the application's `expect(src, msg_id)`: the bytes a message must carry, compared cell by
        # cell as it is reassembled (ReceiverFlow); None: the application checks what it gets
        self.expect: Callable[[str, int], bytes | None] | None = None
        self.delivered: list[Delivered] = []
        self.acked: list[tuple[str, OutMessage]] = []
        self.errors: Counter[str] = Counter()
        self.counters: Counter[str] = Counter()
        self.int_records: list[dict] = []  # INT hop records of DATA cells received (_keep_int)
        self.tx_types = [0] * 16  # datagrams handed to the driver, per cell type
        self.in_order_cells = 0  # DATA cells passed on in order, all flows: goodput in cells
        self.polled_deadline: float | None = None  # next_deadline() as the last poll left it

    # -- application ---------------------------------------------------------
    def send_message(self, now: float, dst: str, msg_id: int, payload: bytes | segment.Framed,
                     channel: int = 0) -> OutMessage:
        """Queue a message to `dst` on `channel`'s flow: each channel of a collective is a transport
        flow of its own (own flow id, so own ECMP hash, window, CC state and source port)."""
        key = dst if channel == 0 else (dst, channel)
        flow = self.senders.get(key)
        if flow is None:
            if not 0 <= channel < MAX_CHANNELS:
                raise EndpointError(f"channel {channel} is out of range 0..{MAX_CHANNELS - 1}")
            number = self._flows_of_channel[channel] + 1
            if number > MAX_FLOWS_PER_CHANNEL:
                raise EndpointError(f"{self.name} has more than {MAX_FLOWS_PER_CHANNEL} flows on channel {channel}")
            self._flows_of_channel[channel] = number
            flow_id = (self._salt << 16) | (channel << CHANNEL_SHIFT) | number
            flow = SenderFlow(self.cfg, dst, flow_id, now)
            self.senders[key] = flow
            self._by_flow_id[flow_id] = flow
        was_sendable = flow.sendable()
        msg = flow.enqueue(now, msg_id, payload)
        if not was_sendable:
            flow.ready_at = now
        if flow.cc.credit_gated:
            self._control.append((dst, flow.request(now), now))
        return msg

    def set_link_rate(self, rate_bps: float) -> None:
        """The NIC's rate changed (a dual-port NIC lost or regained a port): its pacer, the
        receiver's credit gate and every flow's rate ceiling follow, and new flows start at it."""
        self.cfg = self.cfg.with_(link_rate_bps=rate_bps)
        self.nic.set_rate(rate_bps)
        self.rcc.set_link_rate(rate_bps)
        for flow in self.senders.values():
            flow.cc.set_link_rate(rate_bps)

    def idle(self) -> bool:
        """True when every message this host sent has been acknowledged."""
        return all(f.unfinished == 0 for f in self.senders.values())

    # -- network in -----------------------------------------------------------
    def receive(self, now: float, src: str, data: bytes, tos: int = 0, arrived: float | None = None) -> None:
        """A datagram read at `now` that reached the host at `arrived` (the kernel's receive
        timestamp; default `now`): what it triggers (an ACK, a credit's DATA cell, a cell whose
        window it opened) may start on the wire from its arrival, not before."""
        at = now if arrived is None or arrived > now else arrived
        try:
            cell = wire.decode(data, self.cfg.cell_size)
        except wire.MalformedCell:
            self.errors["malformed"] += 1
            return
        self.counters[_RX_COUNTER[cell.type]] += 1
        if cell.type == wire.DATA:
            if cell.telemetry is not None:
                self._keep_int(at, src, cell)
            self._on_data(now, src, cell, (tos & ECN_MASK) == ECN_CE, at)
            return
        self.rcc.on_downlink(now, len(data) + wire.FRAME_OVERHEAD)  # control shares the downlink
        if cell.type in (wire.CREDIT_REQUEST, wire.CREDIT_STOP):
            if self.cfg.cc != "tita":
                self.errors["unexpected_credit_control"] += 1
                return
            for dst, out in self.rcc.on_control(now, src, cell):
                self._control.append((dst, out, at))
        else:
            flow = self._by_flow_id.get(cell.flow_id)
            if flow is None or flow.dst != src:
                self.errors["unknown_flow"] += 1
                return
            was_sendable = flow.sendable()
            if cell.type == wire.ACK:
                if cell.has(wire.FLAG_ECE):
                    self.counters["ece_acks"] += 1
                for msg in flow.on_ack(now, cell):
                    self.on_acked(flow.dst, msg)
                self._spend_held_credits(now, flow, at)
            elif cell.type == wire.NACK:
                flow.on_nack(now, cell)
                self._spend_held_credits(now, flow, at)
            elif cell.type == wire.CNP:
                flow.cc.on_cnp(now)
            elif cell.type == wire.CREDIT:
                self._on_credit(now, flow, cell, at)
            if not was_sendable and flow.sendable():
                flow.ready_at = at  # the window opened (or a cell is to be resent) only now

    def _keep_int(self, at: float, src: str, cell: wire.CellPacket) -> None:
        """Keep a DATA cell's INT hop records (p4src/README.md, "In-band telemetry"), in path
        order (the first switch crossed first), up to INT_RECORDS_MAX cells; the rest are counted."""
        stack = cell.telemetry
        assert stack is not None  # receive() calls it only for a cell that carries INT
        self.keep_int_hops(at, src, cell.flow_id, cell.psn, stack.overflow,
                           [[h.switch_id, h.egress_port, h.enq_qdepth, h.hop_latency_us]
                            for h in reversed(stack.hops)])

    def keep_int_hops(self, at: float, src: str, flow_id: int, psn: int, overflow: int, hops: list) -> None:
        """One cell's hop records, `hops` in path order as [switch_id, egress_port, enq_qdepth,
        hop_latency_us] (the simulator's model gives them directly)."""
        if len(self.int_records) >= INT_RECORDS_MAX:
            self.counters["int_records_dropped"] += 1
            return
        self.int_records.append({"t_s": round(at, 6), "src": src, "flow_id": flow_id, "psn": psn,
                                 "overflow": overflow, "hops": hops})

    def _on_data(self, now: float, src: str, cell: wire.CellPacket, ce: bool, at: float) -> None:
        key = (src, cell.flow_id)
        flow = self.receivers.get(key)
        if flow is None:
            if len(self.receivers) >= MAX_RECEIVER_FLOWS:
                self.errors["too_many_flows"] += 1
                return
            flow = self.receivers[key] = ReceiverFlow(self.cfg, src, cell.flow_id, here=self.name,
                                                      expect=self.expect)
        if ce:
            self.counters["ce_cells"] += 1
        for dst, out in self.rcc.on_data(now, src, cell, ce):
            self._control.append((dst, out, at))
        before = flow.in_order_cells
        ack, delivered = flow.on_data(now, cell, ce)
        self.in_order_cells += flow.in_order_cells - before
        if ack is not None:
            self._control.append((src, ack, at))
        for d in delivered:
            self.on_delivered(d)

    def _on_credit(self, now: float, flow: SenderFlow, cell: wire.CellPacket, at: float) -> None:
        if not flow.cc.credit_gated:
            self.errors["unexpected_credit"] += 1
            return
        cc = cast(TitaSender, flow.cc)  # the credit-gated sender half
        cc.last_credit = now
        cc.last_credit_seq = cell.credit_seq
        cc.credits_received += 1
        entropy = echo(self.cfg.layout, cell.entropy, self.name, flow.dst)
        self._spend_held_credits(now, flow, at)  # older credits first (a retransmission needs no window)
        data = None if cc.held_credits else flow.build(now, credit_seq=cell.credit_seq, entropy=entropy)
        if data is not None:
            self._credited.append((flow.dst, data, at, flow, flow.last_psn))
            return
        if flow.backlog_cells() and len(cc.held_credits) < self.cfg.window:
            cc.held_credits.append((cell.credit_seq, entropy))  # the window is full: until it opens or a cell is resent
            cc.credits_held += 1
            return
        cc.credits_wasted += 1
        if flow.backlog_cells() == 0 and now - cc.last_stop >= self.cfg.rtt_s:
            cc.last_stop = now
            cc.stops_sent += 1
            self._control.append((flow.dst, flow.control(wire.CREDIT_STOP), at))

    def _spend_held_credits(self, now: float, flow: SenderFlow, ready: float | None = None) -> None:
        """Cells for the credits that waited for the send window, in their order, as far as the
        window (or a retransmission, which needs none) lets them go; none starts before `ready`
        (default `now`), when what let them go arrived."""
        if ready is None:
            ready = now
        if not flow.cc.credit_gated:
            return
        cc = cast(TitaSender, flow.cc)
        held = cc.held_credits
        while held:
            seq, entropy = held[0]
            data = flow.build(now, credit_seq=seq, entropy=entropy)
            if data is None:
                break
            held.popleft()
            self._credited.append((flow.dst, data, ready, flow, flow.last_psn))
        if held and not flow.backlog_cells():  # nothing left to send for them
            cc.credits_wasted += len(held)
            held.clear()

    # -- time and network out ---------------------------------------------------
    def poll(self, now: float) -> list[Transmit]:
        """Service due timers, then hand the NIC every packet it may send by `now`.

        It leaves `polled_deadline` set to `next_deadline()` as it stands on return, so a driver
        that polls and then asks when to poll again, with nothing received in between, need not
        compute it twice."""
        out: list[Transmit] = []
        due = None
        nic = self.nic
        for _ in range(4):  # sending can move a timer (e.g. RTO level); settle it now
            self._service_timers(now)
            while now >= nic.next_free:  # the pacer is ready
                tx = self._next_packet(now)
                if tx is None:
                    nic.idle(now)
                    break
                tx.start = nic.consume(now, len(tx.data) + wire.FRAME_OVERHEAD, tx.ready)
                if self._restamp is not None:
                    flow, psn = self._restamp
                    self._restamp = None
                    if self.wire_from_schedule:
                        flow.window.restamp(psn, tx.start)
                self.tx_types[tx.data[0] & 0x0F] += 1
                out.append(tx)
            due = self.next_deadline()
            if due is None or due > now:
                break
        self.polled_deadline = due
        return out

    def _service_timers(self, now: float) -> None:
        control = self._control
        for flow in self.senders.values():
            due = flow.deadline()
            if due is not None and now >= due:
                was_sendable = flow.sendable()
                for cell in flow.on_timer(now):
                    control.append((flow.dst, cell, due))
                self._spend_held_credits(now, flow)  # a timeout's retransmissions may use them
                if not was_sendable and flow.sendable():
                    flow.ready_at = due
        for rflow in self.receivers.values():
            due = rflow.ack_due
            if due is not None and now >= due:
                ack = rflow.ack_due_now(now)
                if ack is not None:
                    control.append((rflow.src, ack, due))
            if rflow.hole_since is not None:  # no hole, no NACK (nacks_due would say so)
                nacks = rflow.nacks_due(now)
                if nacks:
                    self.rcc.on_nack_sent(rflow.src, rflow.flow_id, len(nacks))
                    control.extend((rflow.src, n, now) for n in nacks)
        credits = self.rcc.poll(now)
        if credits:
            control.extend((dst, cell, None) for dst, cell in credits)

    def _next_packet(self, now: float) -> Transmit | None:
        if self._control:
            dst, cell, ready = self._control.popleft()
            return Transmit(dst, wire.encode(cell), False, ready=ready)
        if self._credited:
            dst, data, ready, flow, psn = self._credited.popleft()
            self._restamp = (flow, psn)  # built when its credit came: its round trip counts from its start
            return Transmit(dst, data, True, ready=ready)
        flows = list(self.senders.values())
        n = len(flows)
        for i in range(n):
            flow = flows[(self._rr + i) % n]
            if flow.cc.credit_gated or not flow.sendable():
                continue
            release = flow.cc.next_send_time()
            if release > now:
                continue
            ready = release if release > flow.ready_at else flow.ready_at
            built = flow.build(now, sent_at=self.nic.start_at(now, ready) if self.wire_from_schedule else now)
            if built is None:
                continue
            self._rr = (self._rr + i + 1) % n
            flow.cc.on_sent(now, len(built) + wire.FRAME_OVERHEAD)
            return Transmit(flow.dst, built, True, ready=ready)
        return None

    def next_deadline(self) -> float | None:
        """When `poll` must next be called (None: only when a datagram arrives)."""
        next_free = self.nic.next_free
        first = next_free if self._control or self._credited else None
        for flow in self.senders.values():
            due = flow.deadline()
            if due is not None and (first is None or due < first):
                first = due
            if not flow.cc.credit_gated and flow.sendable():
                due = flow.cc.next_send_time()
                if due < next_free:
                    due = next_free
                if first is None or due < first:
                    first = due
        for rflow in self.receivers.values():
            due = rflow.deadline()
            if due is not None and (first is None or due < first):
                first = due
            due = rflow.ack_due
            if due is not None and (first is None or due < first):
                first = due
        due = self.rcc.deadline()
        if due is not None:
            if self._control and due < next_free:
                due = next_free
            if first is None or due < first:
                first = due
        return first

    # -- metrics ------------------------------------------------------------------
    def stats(self) -> dict:
        s = {
            "retransmissions": sum(f.window.retransmissions for f in self.senders.values()),
            "timeouts": sum(f.window.timeouts for f in self.senders.values()),
            "nacks_received": sum(f.window.nacks for f in self.senders.values()),
            "nacks_sent": sum(f.nacks_sent for f in self.receivers.values()),
            "data_cells_received": sum(f.data_cells for f in self.receivers.values()),
            "acks_sent": sum(f.acks_sent for f in self.receivers.values()),
            "acks_delayed": sum(f.acks_delayed for f in self.receivers.values()),
            "corrupt_messages": sum(f.corrupt for f in self.receivers.values()),
            "cnps_received": sum(getattr(f.cc, "cnps", 0) for f in self.senders.values()),
            "rate_cuts": sum(getattr(f.cc, "rate_cuts", 0) for f in self.senders.values()),
            "min_rate_mbps": min((f.cc.min_rc / 1e6 for f in self.senders.values() if hasattr(f.cc, "min_rc")),
                                 default=None),
            "srtt_ms_max": max((f.window.srtt * 1e3 for f in self.senders.values() if f.window.srtt is not None),
                               default=None),
            "rtt_min_ms": min((f.window.min_rtt * 1e3 for f in self.senders.values()
                               if f.window.min_rtt is not None), default=None),
            "credits_wasted": sum(getattr(f.cc, "credits_wasted", 0) for f in self.senders.values()),
            "credits_held": sum(getattr(f.cc, "credits_held", 0) for f in self.senders.values()),
            "errors": dict(self.errors),
            "tx_counts": {f"tx_{wire.TYPE_NAMES.get(t, t)}": n for t, n in enumerate(self.tx_types) if n},
        }
        windowed = [f.cc for f in self.senders.values() if isinstance(f.cc, NsccSender)]
        if windowed:  # nscc's window: its cuts and its range
            s.update({"window_decreases": sum(c.decreases for c in windowed),
                      "quick_adapts": sum(c.quick_adapts for c in windowed),
                      "min_window_cells": round(min(c.min_cwnd for c in windowed), 3),
                      "max_window_cells": round(max(c.max_cwnd for c in windowed), 3)})
        s.update(self.rcc.stats())
        return s
