"""Sender-side reliability: cumulative ack + SACK, NACK, two-level RTO.

Tracks every cell between the cumulative ack (`base`) and the next new psn.
A cell is retransmitted when the receiver NACKs it or when it has been
unacknowledged for the RTO: the low RTO when only a few cells are in flight
(a lost tail cannot be detected by later arrivals), the high RTO otherwise
(IRN's two levels). At most `window` cells are beyond the cumulative ack,
which is the receiver's reorder window, so the receiver never has to drop
for lack of room when the sender behaves.

Both RTO levels are multiples of the *base* RTT, which is what the fabric
would give an idle network. Under queueing (DCQCN, no control) or when the
emulation's CPU runs late, real round trips are several times longer, and a
fixed RTO then fires for cells that are only delayed: every timeout
re-sends the whole unacknowledged window and the retransmissions themselves
overflow the queues (measured: 58,000 retransmissions for 14,000 cells in a
7:1 incast). So the RTO is floored by the measured round trip, as TCP does
(RFC 6298): rto = max(two-level RTO, srtt + 4 * rttvar), with samples taken
from acks of cells sent once (Karn). A NACK for a cell sent less than one
srtt ago is ignored for the same reason.
"""

from __future__ import annotations

from collections import deque


class SendWindow:
    def __init__(self, window: int, rto_low: float, rto_high: float, low_max_inflight: int,
                 min_retx_gap: float) -> None:
        self.window = window
        self.rto_low = rto_low
        self.rto_high = rto_high
        self.low_max_inflight = low_max_inflight
        self.min_retx_gap = min_retx_gap
        self.base = 0
        self.next_psn = 0
        self._last_sent: dict[int, float] = {}  # psn -> last transmission time (unacked only)
        self._retx: deque[int] = deque()
        self._in_retx: set[int] = set()
        self.retransmissions = 0
        self.timeouts = 0
        self.nacks = 0
        self.bogus_acks = 0
        self._resent: set[int] = set()  # psns retransmitted at least once (no RTT samples)
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.rtt_samples = 0
        self.min_rtt: float | None = None  # smallest sample: the emulated base RTT plus host time
        # The last on_ack's sample (None: it gave none): send time of the newest cell it
        # acknowledged that was sent once, and that cell's round trip (ack delay left out).
        self.sample_sent: float | None = None
        self.sample_rtt: float | None = None
        # Oldest send time among cells waiting for an ack (not queued for
        # retransmission), cached: deadline() runs on every event-loop turn.
        self._oldest: float | None = None
        self._oldest_valid = True

    # -- sending ---------------------------------------------------------
    def inflight(self) -> int:
        return len(self._last_sent) - len(self._in_retx)

    def pending_retx(self) -> int:
        return len(self._retx)

    def can_send_new(self, end_psn: int) -> bool:
        return self.next_psn < end_psn and self.next_psn < self.base + self.window

    def has_sendable(self, end_psn: int) -> bool:
        return bool(self._retx) or self.can_send_new(end_psn)

    def restamp(self, psn: int, sent: float) -> None:
        """`psn` went on the wire at `sent`, not when it was taken (a credit's DATA cell waits
        for the NIC and may start, by its catch-up, before that): its round trip counts from there."""
        if psn in self._last_sent:
            self._last_sent[psn] = sent
            if self._oldest is not None and sent < self._oldest:
                self._oldest = sent

    def take(self, now: float, end_psn: int) -> tuple[int, bool] | None:
        """Next psn to transmit (retransmissions first) and whether it is a retransmission."""
        while self._retx:
            psn = self._retx.popleft()
            self._in_retx.discard(psn)
            if psn in self._last_sent:
                self._last_sent[psn] = now
                self._resent.add(psn)
                self.retransmissions += 1
                if self._oldest is None:  # times only grow: an older waiting cell stays oldest
                    self._oldest = now
                return psn, True
        if self.can_send_new(end_psn):
            psn = self.next_psn
            self.next_psn += 1
            self._last_sent[psn] = now
            if self._oldest is None:
                self._oldest = now
            return psn, False
        return None

    # -- feedback --------------------------------------------------------
    def on_ack(self, cum: int, sack: int, sack_bits: int, now: float | None = None,
               ack_delay: float = 0.0) -> list[int] | None:
        """Newly acknowledged psns, or None if the ack claims cells never sent.

        With `now`, the most recently sent of the newly acknowledged cells that
        were sent only once gives an RTT sample (Karn). With coalesced ACKs one
        ACK covers several cells; the newest of them is the one that triggered
        it, so the sample is not inflated by the older cells' wait; a timer ACK
        says how long it waited after that cell (`ack_delay`), which is left out too."""
        if cum > self.next_psn:
            self.bogus_acks += 1
            return None
        acked = []
        last_sent = self._last_sent
        resent = self._resent
        newest = -1.0
        if cum > self.base:
            for psn in range(self.base, cum):
                sent = last_sent.pop(psn, None)
                if sent is not None:
                    acked.append(psn)
                    if sent > newest and psn not in resent:
                        newest = sent
            self.base = cum
        psn = cum + 1
        while sack and psn < self.next_psn:
            if sack & 1:
                sent = last_sent.pop(psn, None)
                if sent is not None:
                    acked.append(psn)
                    if sent > newest and psn not in resent:
                        newest = sent
            sack >>= 1
            psn += 1
            if psn > cum + sack_bits:
                break
        if acked:
            self._oldest_valid = False
            if self._in_retx:
                self._in_retx.difference_update(acked)
            if resent:
                resent.difference_update(acked)
        self.sample_sent = self.sample_rtt = None
        if newest >= 0 and now is not None:
            rtt = now - newest - ack_delay  # the receiver's delayed-ACK wait is not the path's
            self._rtt_sample(rtt)
            if rtt >= 0:
                self.sample_sent, self.sample_rtt = newest, rtt
        return acked

    def _rtt_sample(self, rtt: float) -> None:
        if rtt < 0:
            return
        self.rtt_samples += 1
        self.min_rtt = rtt if self.min_rtt is None else min(self.min_rtt, rtt)
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt

    def on_nack(self, now: float, psn: int) -> bool:
        """Queue psn for retransmission; False if it needs none (acked, queued, or just resent)."""
        sent = self._last_sent.get(psn)
        gap = self.min_retx_gap if self.srtt is None else max(self.min_retx_gap, self.srtt)
        if sent is None or psn in self._in_retx or now - sent < gap:
            return False
        self.nacks += 1
        self._queue(psn)
        return True

    def _queue(self, psn: int) -> None:
        self._retx.append(psn)
        self._in_retx.add(psn)
        self._oldest_valid = False

    # -- timer -----------------------------------------------------------
    def rto(self) -> float:
        level = self.rto_low if self.inflight() <= self.low_max_inflight else self.rto_high
        if self.srtt is None:
            return level
        return max(level, self.srtt + 4 * self.rttvar)

    def deadline(self) -> float | None:
        if not self._oldest_valid:
            in_retx = self._in_retx
            if in_retx:
                self._oldest = min((t for p, t in self._last_sent.items() if p not in in_retx), default=None)
            else:
                self._oldest = min(self._last_sent.values(), default=None)
            self._oldest_valid = True
        return None if self._oldest is None else self._oldest + self.rto()

    def on_timer(self, now: float) -> int:
        """Queue every cell unacknowledged for the RTO; returns how many."""
        rto = self.rto()
        expired = [p for p, t in self._last_sent.items() if p not in self._in_retx and t + rto <= now]
        for psn in sorted(expired):
            self._queue(psn)
        if expired:
            self.timeouts += 1
        return len(expired)
