"""One incoming flow (one peer -> this host): reorder, acknowledge, reassemble.

Cells enter the bounded reorder buffer; the in-order run is reassembled into
messages, each checked against its CRC-32 trailer before the application
sees it. When the application says what a message must carry (`expect`, the
bytes it built ahead), each in-order cell is compared with its place in them and
the CRC advanced as it comes (segment.Unframer), so a message's completion costs
no pass over it; otherwise its cells are joined and checked when it completes.
A message whose cells disagree (msg_id, length, LAST flag) or whose
checksum fails is counted as corrupt and never delivered. Holes that persist
for the NACK delay are NACKed, which tolerates the reordering of sprayed cells.

ACKs (cumulative psn + 64-bit SACK) are coalesced: every `ack_every`-th
in-order DATA cell is acknowledged, and at once any cell that arrives out of
order, fills a hole, is a duplicate, stale or beyond the window, carries a
CE mark (the ECE echo; DCQCN's CNPs are the receiver CC's, not ACKs), is
the LAST cell of its message or a retransmission. A cell that is not
acknowledged at once waits at most `ack_delay_s` (the delayed-ACK timer,
`deadline()`), so a tail never waits for cells that will not come. The
cumulative ack and the bitmap carry all the state, so a coalesced ACK
acknowledges every cell since the previous one; it takes the entropy of the
cell that triggered it (ACKs retrace that cell's path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, cast

from testbed.cells import segment, wire
from testbed.host.config import TransportConfig
from testbed.host.entropy import tor_group
from testbed.host.reorder import ReorderBuffer, Verdict

NACKS_PER_ROUND = 8


@dataclass
class MsgReorder:
    """Reordering seen by one message's cells."""

    first_cell_s: float
    cells_out_of_order: int = 0
    max_ooo_distance_cells: int = 0
    peak_buffer_cells: int = 0
    window_overflows: int = 0
    duplicates: int = 0
    ce_cells: int = 0


@dataclass
class Delivered:
    src: str
    flow_id: int
    msg_id: int
    payload: bytes = field(repr=False)
    delivered_s: float
    cells: int
    reorder: MsgReorder
    # whether the payload is the bytes the application expected (ReceiverFlow's `expect`); None:
    # nothing was expected, the application checks it itself
    matches_expected: bool | None = None


@dataclass
class _Assembly:
    msg_id: int
    framed_len: int
    ncells: int
    unframer: segment.Unframer | None  # None: the message is already known to be inconsistent
    cells: int = 0


class ReceiverFlow:
    def __init__(self, cfg: TransportConfig, src: str, flow_id: int, here: str = "",
                 expect: Callable[[str, int], bytes | None] | None = None) -> None:
        """`expect(src, msg_id)`: the bytes the application will check a message from `src`
        against, or None; asked at a message's first cell."""
        self.cfg = cfg
        self.expect = expect
        self.src = src
        self.here = here
        self.flow_id = flow_id
        # echo()'s terms, fixed for the flow: its ACKs retrace the path of the cell they answer
        self._layout = cfg.layout
        self._same_tor_group = tor_group(here) == tor_group(src)
        self.buf = ReorderBuffer(cfg.window)
        self.nack_delay = cfg.nack_delay_rtt * cfg.rtt_s
        self._assembly: _Assembly | None = None  # (not `_asm`: mypyc names the C field `__asm`, a C keyword)
        self._stats: dict[int, MsgReorder] = {}
        self.hole_since: float | None = None
        self.last_nack = float("-inf")
        self.delivered = 0
        self.corrupt = 0
        self.nacks_sent = 0
        self.unattributed_overflows = 0
        self.ack_every = cfg.ack_every
        self.ack_delay = cfg.ack_delay_s
        self.unacked = 0  # in-order cells received since the last ACK
        self.ack_due: float | None = None  # delayed-ACK deadline while unacked > 0
        self._last_cell: wire.CellPacket | None = None  # newest cell, for a timer ACK's ids
        self._last_arrival = 0.0  # when the newest DATA cell arrived: a timer ACK says how long it waited
        self.data_cells = 0
        self.in_order_cells = 0  # cells passed on in order: what the application has received
        self.acks_sent = 0
        self.acks_delayed = 0  # ACKs sent by the timer

    def _stats_for(self, now: float, msg_id: int) -> MsgReorder:
        st = self._stats.get(msg_id)
        if st is None:
            if len(self._stats) > 4 * self.cfg.window:  # garbage msg_ids must not grow memory
                self._stats.pop(next(iter(self._stats)))
            st = self._stats[msg_id] = MsgReorder(first_cell_s=now)
        return st

    def on_data(self, now: float, cell: wire.CellPacket, ce: bool) -> tuple[wire.CellPacket | None, list[Delivered]]:
        """Take one DATA cell; returns the ACK to send now (None: coalesced) and delivered messages."""
        self.data_cells += 1
        had_hole = len(self.buf) > 0
        verdict, distance = self.buf.offer(cell.psn, cell)
        delivered: list[Delivered] = []
        immediate = ce or bool(cell.flags & (wire.FLAG_LAST | wire.FLAG_RETX))
        if verdict is Verdict.ACCEPTED:
            st = self._stats_for(now, cell.msg_id)
            if distance > 0:
                st.cells_out_of_order += 1
                st.max_ooo_distance_cells = max(st.max_ooo_distance_cells, distance)
                immediate = True
            elif had_hole:
                immediate = True  # fills (part of) a hole: the sender learns at once
            if len(self.buf) > st.peak_buffer_cells:
                st.peak_buffer_cells = len(self.buf)
            if ce:
                st.ce_cells += 1
            for _, ready in self.buf.pop_ready():
                self.in_order_cells += 1
                done = self._assemble(now, cast(wire.CellPacket, ready))
                if done is not None:
                    delivered.append(done)
        else:
            immediate = True  # duplicate, stale or overflow: the sender's view is behind
            if verdict is Verdict.OVERFLOW:
                seen = self._stats.get(cell.msg_id)
                if seen is not None:
                    seen.window_overflows += 1
                else:
                    self.unattributed_overflows += 1
            elif verdict is Verdict.DUPLICATE:
                seen = self._stats.get(cell.msg_id)
                if seen is not None:
                    seen.duplicates += 1
        if len(self.buf):
            if self.hole_since is None or verdict is Verdict.ACCEPTED and distance == 0:
                self.hole_since = now
        else:
            self.hole_since = None
        self.unacked += 1
        self._last_arrival = now
        if immediate or self.unacked >= self.ack_every:
            return self._ack(cell, ce), delivered
        self._last_cell = cell
        if self.ack_due is None:
            self.ack_due = now + self.ack_delay
        return None, delivered

    def _ack(self, cell: wire.CellPacket, ce: bool = False, now: float | None = None) -> wire.CellPacket:
        held_us = 0 if now is None else min(wire.U32, max(0, round((now - self._last_arrival) * 1e6)))
        self.unacked = 0
        self.ack_due = None
        self._last_cell = None
        self.acks_sent += 1
        return wire.CellPacket(
            type=wire.ACK, flow_id=self.flow_id, msg_id=cell.msg_id, psn=self.buf.base,
            # echo(): back along the cell's path
            entropy=self._layout.mirror(cell.entropy, same_tor_group=self._same_tor_group),
            flags=wire.FLAG_ECE if ce else 0, aux=held_us,
            body=wire.sack_encode(self.buf.sack_bits(wire.SACK_BITS)),
        )

    def ack_deadline(self) -> float | None:
        """When the delayed ACK of coalesced cells is due (None: nothing pending)."""
        return self.ack_due

    def ack_due_now(self, now: float) -> wire.CellPacket | None:
        """The delayed ACK, if its timer has expired. It says the newest cell was held until the
        timer's time, when the ACK starts on the modelled wire (its `ready`), not until `now`: a
        driver that polls late must not make the sender's round-trip sample shorter than the path."""
        due = self.ack_due
        if due is None or now < due or self._last_cell is None:
            return None
        self.acks_delayed += 1
        return self._ack(self._last_cell, now=due)

    def _assemble(self, now: float, cell: wire.CellPacket) -> Delivered | None:
        """One in-order DATA cell into its message: the message ends at its LAST cell or once it
        has as many cells as its length says; it is delivered only if every cell agreed on its
        msg_id and length, both ends came together, and its bytes pass the CRC-32 trailer."""
        asm = self._assembly
        if asm is None:
            ncells = segment.cell_count(cell.aux, self.cfg.cell_size)
            unframer = None
            if cell.aux <= self.cfg.max_message_bytes:
                expected = self.expect(self.src, cell.msg_id) if self.expect is not None else None
                unframer = segment.Unframer(cell.aux, expected)
            asm = self._assembly = _Assembly(cell.msg_id, cell.aux, ncells, unframer)
        elif asm.unframer is not None and (cell.msg_id != asm.msg_id or cell.aux != asm.framed_len):
            asm.unframer = None  # inconsistent: its bytes need not be kept
        asm.cells += 1
        if asm.unframer is not None:
            asm.unframer.add(cell.body)
        last = cell.has(wire.FLAG_LAST)
        full = asm.cells >= asm.ncells
        if not (last or full):
            return None
        self._assembly = None
        stats = self._stats.pop(asm.msg_id, None) or MsgReorder(first_cell_s=now)
        payload = None
        if asm.unframer is not None and last and full:
            payload = asm.unframer.result()
        if payload is None:
            self.corrupt += 1
            return None
        self.delivered += 1
        unframer = asm.unframer
        assert unframer is not None  # it gave the payload
        return Delivered(self.src, self.flow_id, asm.msg_id, payload, now, asm.ncells, stats,
                         unframer.matches if unframer.expected is not None else None)

    def deadline(self) -> float | None:
        if self.hole_since is None:
            return None
        return max(self.hole_since, self.last_nack) + self.nack_delay

    def nacks_due(self, now: float) -> list[wire.CellPacket]:
        due = self.deadline()
        if due is None or now < due:
            return []
        self.last_nack = now
        holes = self.buf.holes(NACKS_PER_ROUND)
        self.nacks_sent += len(holes)
        return [wire.CellPacket(type=wire.NACK, flow_id=self.flow_id, psn=p) for p in holes]
