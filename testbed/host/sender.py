"""One outgoing flow (this host -> one peer): messages, cells, reliability, CC.

Messages are queued back to back in one psn space; each cell is built when
it is actually sent (so a retransmission re-reads the message bytes and
gets a fresh entropy value). Congestion control decides when: rate-paced
for `none`/`dcqcn`, one cell per credit for `tita`, and for `nscc` also how
many cells may be in flight (its window; ACKs carry its signals).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import cast

from testbed.cells import segment, wire
from testbed.host.cc import make_sender_cc
from testbed.host.cc.tita import TitaSender
from testbed.host.entropy import EntropySource, flow_start
from testbed.host.config import TransportConfig
from testbed.host.reliability import SendWindow


@dataclass
class OutMessage:
    msg_id: int
    framed: bytes
    payload_bytes: int
    first_psn: int
    ncells: int
    start_s: float
    acked_cells: int = 0
    retransmissions: int = 0
    done_s: float | None = None
    first_tx_s: float | None = None  # when its first DATA cell left (queued until then)


class SenderFlow:
    def __init__(self, cfg: TransportConfig, dst: str, flow_id: int, now: float) -> None:
        self.cfg = cfg
        self.dst = dst
        self.flow_id = flow_id
        rtt = cfg.rtt_s
        self.window = SendWindow(
            cfg.window, cfg.rto_low_rtt * rtt, cfg.rto_high_rtt * rtt, cfg.rto_low_max_inflight,
            min_retx_gap=0.5 * rtt,
        )
        self.cc = make_sender_cc(cfg, now)
        self._msgs: list[OutMessage] = []
        self._firsts: list[int] = []
        self.end_psn = 0
        # Spraying round robin from the flow id hashed, as a credit flow's (entropy.flow_start): a
        # host's flows all started at its salt, so a sender's first cells to every peer took one path.
        self.entropy = EntropySource(cfg.entropy_values, cfg.entropy_choice, flow_start(flow_id), seed=cfg.seed ^ flow_id)
        self.cells_sent = 0
        self.unfinished = 0
        self.last_psn = -1  # the psn of the cell `build` returned last
        self.ready_at = 0.0  # when it last became sendable (a message, an ACK, a timer): none of its cells leaves earlier

    # -- application side --------------------------------------------------
    def enqueue(self, now: float, msg_id: int, payload: bytes | segment.Framed) -> OutMessage:
        """Queue a message: its payload, or the segment.Framed of it built ahead."""
        framed, payload_bytes = segment.framed(payload)
        if len(framed) > wire.U32:
            raise ValueError(f"message of {payload_bytes} B does not fit the 32-bit length field")
        ncells = segment.cell_count(len(framed), self.cfg.cell_size)
        if self.end_psn + ncells > wire.U32:
            raise ValueError("flow exhausted its 32-bit psn space")
        msg = OutMessage(msg_id, framed, payload_bytes, self.end_psn, ncells, now)
        self._msgs.append(msg)
        self._firsts.append(msg.first_psn)
        self.end_psn += ncells
        self.unfinished += 1
        return msg

    def backlog_cells(self) -> int:
        return self.window.pending_retx() + (self.end_psn - self.window.next_psn)

    def sendable(self) -> bool:
        limit = self.cc.window_cells
        if limit is not None and self.window.inflight() >= limit:
            return False
        return self.window.has_sendable(self.end_psn)

    def _message_of(self, psn: int) -> OutMessage:
        return self._msgs[bisect.bisect_right(self._firsts, psn) - 1]

    # -- building cells ----------------------------------------------------
    def build(self, now: float, credit_seq: int = 0, entropy: int | None = None,
              sent_at: float | None = None) -> bytes | None:
        """The next cell to send, or None; `sent_at` (default `now`) is when it starts on the wire,
        the time its round-trip sample and its message's first transmission count from."""
        if sent_at is None:
            sent_at = now
        taken = self.window.take(sent_at, self.end_psn)
        if taken is None:
            return None
        psn, retx = taken
        self.last_psn = psn
        msg = self._message_of(psn)
        if msg.first_tx_s is None:
            msg.first_tx_s = sent_at
        index = psn - msg.first_psn
        flags = wire.FLAG_LAST if index == msg.ncells - 1 else 0
        if retx:
            flags |= wire.FLAG_RETX
            msg.retransmissions += 1
        if entropy is None:
            entropy = self.entropy.next()
        cell = wire.CellPacket(
            type=wire.DATA, flags=flags, entropy=entropy, flow_id=self.flow_id, msg_id=msg.msg_id,
            psn=psn, credit_seq=credit_seq, aux=len(msg.framed),
            body=segment.cell_body(msg.framed, index, self.cfg.cell_size),
        )
        self.cells_sent += 1
        return wire.encode(cell)

    def control(self, cell_type: int, aux: int = 0, credit_seq: int = 0) -> wire.CellPacket:
        return wire.CellPacket(type=cell_type, flow_id=self.flow_id, aux=min(aux, wire.U32), credit_seq=credit_seq)

    def request(self, now: float) -> wire.CellPacket:
        """The cells still to send that hold no credit, and the last credit that came: a request
        may cross credits on their way, and the receiver counts those off what it announces."""
        cc = cast(TitaSender, self.cc)  # only a credit-gated flow requests
        cc.last_request = now
        cc.requests_sent += 1
        uncredited = max(0, self.backlog_cells() - len(cc.held_credits))
        return self.control(wire.CREDIT_REQUEST, uncredited * self.cfg.cell_size, cc.last_credit_seq)

    # -- feedback ------------------------------------------------------------
    def on_ack(self, now: float, cell: wire.CellPacket) -> list[OutMessage]:
        window = self.window
        acked = window.on_ack(cell.psn, wire.sack_decode(cell.body), wire.SACK_BITS, now,
                              ack_delay=cell.aux / 1e6)
        if acked:
            self.cc.on_ack(now, len(acked), window.sample_sent, window.sample_rtt, cell.has(wire.FLAG_ECE))
        done = []
        for psn in acked or ():
            msg = self._message_of(psn)
            msg.acked_cells += 1
            if msg.acked_cells == msg.ncells:
                msg.done_s = now
                msg.framed = b""  # release the bytes
                self.unfinished -= 1
                done.append(msg)
        return done

    def on_nack(self, now: float, cell: wire.CellPacket) -> None:
        if self.window.on_nack(now, cell.psn):
            self.cc.on_loss(now)

    def deadline(self) -> float | None:
        due = self.window.deadline()
        t = self.cc.deadline()
        if t is not None and (due is None or t < due):
            due = t
        if self.cc.credit_gated and self.backlog_cells():
            t = cast(TitaSender, self.cc).retry_deadline()
            if due is None or t < due:
                due = t
        return due

    def on_timer(self, now: float) -> list[wire.CellPacket]:
        """Service RTO and CC timers; returns control cells (credit requests) to send."""
        out = []
        requeued = 0
        deadline = self.window.deadline()
        if deadline is not None and now >= deadline:
            requeued = self.window.on_timer(now)
            if requeued:
                self.cc.on_loss(now, timeout=True)
        self.cc.on_timer(now)
        if self.cc.credit_gated and self.backlog_cells():
            if requeued or now >= cast(TitaSender, self.cc).retry_deadline():
                out.append(self.request(now))
        return out
