"""TiTa-style receiver-driven credits with ExpressPass feedback.

Credits: the receiver learns a sender's demand from CREDIT_REQUEST (cells
queued) and paces credits. The host never exceeds one credit per (data +
credit) frame time at its link rate, nor one BDP of credits outstanding (at
the measured credit round trip, at most two base BDPs). Each flow is paced at
its own ExpressPass rate, at most one credit per DATA frame time and never
above the switches' credit meters (`TransportConfig.flow_credit_rate`).
Data takes its credit's entropy, so it returns on the credit's path.

Feedback, once per measured credit round trip (at least one base RTT):
loss > target -> rate = measured * (1 + target) and w halves; else w grows
and the rate moves toward the maximum. Loss is inferred: a credit unanswered
for max(credit_timeout_rtt * base RTT, srtt + 4 rttvar) is lost, as is one
issued more than skew = max(0.5 base RTT, 4 rttvar) before an answered one.
DATA echoing a credit already declared lost withdraws that loss.

Pacing: the receiver's downlink is a pacer at the link rate with the NIC's
catch-up (`pacing.Pacer`). Each credit is charged one DATA frame and each
control frame that arrives its own size. A flow's credits sit on a fixed
grid; jitter is an offset from the grid point, and a late wake-up sends the
credits that came due since (at most one cell time of catch-up).

Demand: a request sets it to the announced cells; each credit issued
consumes one; a lost credit or a NACK adds one back; CREDIT_STOP clears it.

Order: a flow whose request (made with nothing outstanding) announced at
most one BDP is credited first until served, as Homa grants short messages
first; long flows share round robin. `credit_order: srpt` credits the due
flow with the least demand left; `overcommit: K` lets the K such flows share
the credits, each going to the one credited longest ago. A flow not due on
its grid lets the next one in, so the link stays full. The figures behind
these rules are in docs/measurements.md ("TiTa's rules").
"""

from __future__ import annotations

import heapq
import random
from collections import deque

from testbed.cells import wire
from testbed.host.cc.base import ReceiverCC, SenderCC
from testbed.host.config import TransportConfig
from testbed.host.entropy import EntropySource, flow_start
from testbed.host.pacing import Pacer

MAX_FLOWS = 4096
MAX_DEMAND_CELLS = 1 << 24


class TitaSender(SenderCC):
    """Sender half: data only on credit; requests and stops demand."""

    credit_gated = True

    def __init__(self, cfg: TransportConfig, now: float) -> None:
        self.rtt = cfg.rtt_s
        self.retry = cfg.tita.request_retry_rtt * cfg.rtt_s
        self.last_request = float("-inf")
        self.last_credit = float("-inf")
        self.last_credit_seq = 0  # echoed in requests (TitaReceiver.on_control)
        self.last_stop = float("-inf")
        self.credits_received = 0
        self.credits_wasted = 0
        # Credits that came while the send window was full (its unacknowledged cells at the reorder
        # window), as (credit seq, entropy): spent as ACKs open the window or a timeout or NACK queues a
        # retransmission (which needs no window). The receiver's budget
        # may reach two BDPs of credits, more than the window once ACKs lag, and a credit dropped
        # there was only re-issued after the receiver's credit timeout: a message's last cell then
        # waited 3 base RTTs (simulator, 2-tier permutation: 0.74 of the payload rate, not 0.82).
        self.held_credits: deque[tuple[int, int]] = deque()
        self.credits_held = 0
        self.requests_sent = 0
        self.stops_sent = 0

    def retry_deadline(self) -> float:
        return max(self.last_request, self.last_credit) + self.retry


class _CreditFlow:
    __slots__ = (
        "src", "flow_id", "demand", "outstanding", "next_seq", "rate", "w", "next_time", "grid",
        "period_start", "period_end", "used", "lost", "good_rounds", "issued", "entropy", "total_lost",
        "total_used", "short", "served", "presumed", "round", "last_issue_s", "issued_in_order",
    )

    def __init__(self, src: str, flow_id: int, rate: float, w: float, now: float, rtt: float) -> None:
        self.src = src
        self.flow_id = flow_id
        self.demand = 0
        self.outstanding: dict[int, float] = {}  # credit seq -> issue time, in issue order
        # Whether every credit was issued no earlier than the one before it, so that the first
        # outstanding credit is the oldest (a clock that went back clears it for good).
        self.last_issue_s = float("-inf")
        self.issued_in_order = True
        self.next_seq = 1  # 0 means "unscheduled" in DATA
        self.rate = rate
        self.w = w
        self.next_time = now  # the grid point plus this credit's jitter offset
        self.grid = now  # the flow's unjittered schedule: when its next credit is due
        self.period_start = now
        self.period_end = now + rtt
        self.used = 0
        self.lost = 0
        self.good_rounds = 0
        self.issued = 0
        self.entropy: EntropySource | None = None
        self.total_lost = 0
        self.total_used = 0
        self.short = False  # credited ahead of the others (see the module docstring)
        self.served = 0  # when it last got a credit, as the receiver's count of credits issued
        self.presumed: dict[int, tuple[int, float]] = {}  # credit seq declared lost -> (its round, issued)
        self.round = 0  # feedback rounds completed


class TitaReceiver(ReceiverCC):
    """Receiver half: one credit scheduler per host across all its senders."""

    def __init__(self, cfg: TransportConfig) -> None:
        p = cfg.tita
        self.cfg = cfg
        self.rtt = cfg.rtt_s
        self.max_rate = cfg.max_credit_rate
        # The receiver's downlink: DATA its credits bring back plus control that arrives.
        self.gate = Pacer(cfg.link_rate_bps, cfg.nic_catchup_s)
        self.data_bytes = cfg.data_wire_bytes
        self.catchup = cfg.nic_catchup_s
        self.min_rate = self.max_rate * p.min_rate_fraction
        self.budget = self.base_budget = max(1, round(p.outstanding_bdp * cfg.bdp_cells))
        self.timeout = self.base_timeout = p.credit_timeout_rtt * cfg.rtt_s
        self.skew = self.base_skew = 0.5 * cfg.rtt_s
        self.p = p
        self.rng = random.Random(cfg.seed)
        self.flows: dict[tuple[str, int], _CreditFlow] = {}
        self._order: list[tuple[str, int]] = []
        self._rr = 0
        self.outstanding = 0
        self.peak_outstanding = 0
        self.credits_sent = 0
        self.credits_lost = 0
        self.srtt: float | None = None  # credit issued -> DATA echoing it arrives
        self.rttvar = 0.0
        self.control_bytes_in = 0  # non-DATA bytes that arrived on the downlink (charged to the gate)
        self.srpt = p.credit_order == "srpt"
        self.overcommit = p.overcommit

    def _rtt_sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.timeout = max(self.base_timeout, self.srtt + 4 * self.rttvar)
        self.skew = max(self.base_skew, 4 * self.rttvar)
        # One BDP at the smoothed credit round trip (at least one base BDP, at most two). The
        # round trip of a host that also sends is longer than the base RTT for good: each credit
        # and each DATA cell it pays for may wait for a DATA frame already on the wire at every
        # egress it crosses. Sized at the shortest sample instead, the budget held a sprayed
        # 2-tier permutation (simulator, 1 MiB) at 0.80 of the hosts' payload rate against 0.88
        # now, whose ceiling is 0.91 (every DATA cell's credit and ACK share also crosses the
        # links). The budget cannot feed its own queue: the gate paces credits at the downlink's
        # rate, so outstanding credits above rate x round trip are never issued.
        self.budget = max(self.base_budget, min(2 * self.base_budget,
                                                round(self.base_budget * self.srtt / self.rtt)))

    # -- events ---------------------------------------------------------
    def _flow(self, now: float, src: str, flow_id: int) -> _CreditFlow | None:
        key = (src, flow_id)
        flow = self.flows.get(key)
        if flow is None:
            if len(self.flows) >= MAX_FLOWS:
                return None
            flow = _CreditFlow(src, flow_id, self.max_rate, self.p.initial_w, now, self.rtt)
            self.flows[key] = flow
            self._order.append(key)
        return flow

    def on_control(self, now: float, src: str, cell: wire.CellPacket) -> list[tuple[str, wire.CellPacket]]:
        if cell.type == wire.CREDIT_REQUEST:
            flow = self._flow(now, src, cell.flow_id)
            if flow is not None:
                idle = flow.demand == 0 and not flow.outstanding
                announced = -(-cell.aux // self.cfg.cell_size) - self._crossing(flow, cell.credit_seq)
                flow.demand = min(MAX_DEMAND_CELLS, max(0, announced))
                flow.short = flow.demand <= self.base_budget and (idle or flow.short)
        elif cell.type == wire.CREDIT_STOP:
            flow = self.flows.get((src, cell.flow_id))
            if flow is not None:
                # The sender has nothing left: retire its credits without
                # counting them as lost, so they are not re-issued.
                flow.demand = 0
                self.outstanding -= len(flow.outstanding)
                flow.outstanding.clear()
        return []

    @staticmethod
    def _crossing(flow: _CreditFlow, last_seen: int) -> int:
        """Credits still outstanding that were issued after the last one the requesting sender had
        (`last_seen`, 0: none yet): they crossed the request, and the cells they will bring are
        still in what it announces. Counted as announced too, a request sent while a flow waited
        its turn re-credited every cell its first credits had paid for (credit_order srpt: 10 of
        129 credits of an incast sender wasted)."""
        if not flow.outstanding:
            return 0
        if last_seen == 0:
            return len(flow.outstanding)
        return sum(1 for seq in flow.outstanding if 0 < (seq - last_seen) & wire.U32 < 1 << 31)

    def on_data(self, now: float, src: str, cell: wire.CellPacket, ce: bool) -> list[tuple[str, wire.CellPacket]]:
        flow = self.flows.get((src, cell.flow_id))
        if flow is None or cell.credit_seq == 0:
            return []
        issued_at = flow.outstanding.pop(cell.credit_seq, None)
        if issued_at is None:
            self._withdraw_loss(flow, cell.credit_seq, now)
            return []  # stale or duplicate echo, or a credit declared lost whose DATA came late
        self.outstanding -= 1
        flow.used += 1
        flow.total_used += 1
        self._rtt_sample(max(0.0, now - issued_at))
        # Credits issued well before this one and still unanswered were dropped.
        cutoff = issued_at - self.skew
        outstanding = flow.outstanding
        # issued in order, the first is the oldest: when it is not before the cutoff, none is (the
        # scan is then skipped, which was a pass over every outstanding credit per DATA cell)
        if outstanding and (not flow.issued_in_order or next(iter(outstanding.values())) < cutoff):
            for seq in [s for s, t in outstanding.items() if s < cell.credit_seq and t < cutoff]:
                self._lose(flow, seq)
        return []

    def set_link_rate(self, rate_bps: float) -> None:
        """The downlink's capacity changed: the gate and every flow's credit rate follow it."""
        self.gate.set_rate(rate_bps)
        self.max_rate = self.cfg.flow_credit_rate(rate_bps)
        self.min_rate = self.max_rate * self.p.min_rate_fraction
        for flow in self.flows.values():
            flow.rate = min(flow.rate, self.max_rate)

    def on_downlink(self, now: float, nbytes: int) -> None:
        self.control_bytes_in += nbytes
        self.gate.consume(now, nbytes)

    def on_nack_sent(self, src: str, flow_id: int, count: int) -> None:
        flow = self.flows.get((src, flow_id))
        if flow is not None:
            flow.demand = min(MAX_DEMAND_CELLS, flow.demand + count)

    def _lose(self, flow: _CreditFlow, seq: int) -> None:
        issued = flow.outstanding.pop(seq)
        self.outstanding -= 1
        flow.lost += 1
        flow.total_lost += 1
        self.credits_lost += 1
        flow.demand = min(MAX_DEMAND_CELLS, flow.demand + 1)
        flow.presumed[seq] = (flow.round, issued)

    def _withdraw_loss(self, flow: _CreditFlow, seq: int, now: float) -> None:
        """DATA echoing a credit declared lost: it was late, not lost (a sender's credits wait for
        its window and its uplink; on a sprayed fabric one path's queue holds them longer than
        another's). Taken back, it re-credits no cell, and in the round that counted it it lowers
        no rate: one late credit in a round of a few read as 25-100% loss, and its flow crawled at
        the end of a 3-tier all-to-all (simulator: 4 credits declared lost, none dropped, the last
        message 0.1 s late)."""
        presumed = flow.presumed.pop(seq, None)
        if presumed is None:
            return
        counted_in, issued = presumed
        self._rtt_sample(now - issued)  # its round trip: the tail the timeout has to cover
        flow.total_lost -= 1
        flow.total_used += 1
        self.credits_lost -= 1
        if flow.demand > 0:
            flow.demand -= 1
        if counted_in == flow.round:
            flow.lost -= 1
            flow.used += 1

    # -- feedback (ExpressPass, once per RTT) ----------------------------
    def period(self) -> float:
        """One feedback round: the measured credit round trip, at least the base RTT."""
        return self.rtt if self.srtt is None else max(self.rtt, self.srtt)

    def _feedback(self, flow: _CreditFlow, now: float) -> None:
        if now >= flow.period_end:
            total = flow.used + flow.lost
            if total:
                loss = flow.lost / total
                target = (1 - flow.rate / self.max_rate) * self.p.target_loss_factor
                # One credit declared lost and none answered is no measured rate: the cut took the
                # flow to its floor (one credit in 0.2 s) where its DATA came 2 ms after the
                # round closed, and the last message of a 3-tier all-to-all ended 3.8 base RTTs
                # after every other (simulator). A loss among two or more samples still cuts.
                if loss > target and total >= 2:
                    measured = flow.used / max(now - flow.period_start, self.rtt)
                    flow.rate = measured * (1 + target)
                    flow.w = max(flow.w / 2, self.p.min_w)
                    flow.good_rounds = 0
                else:
                    flow.good_rounds += 1
                    if flow.good_rounds >= 2:
                        flow.w = min(flow.w + 0.05, self.p.max_w)
                    flow.rate = flow.w * self.max_rate + (1 - flow.w) * flow.rate
                flow.rate = min(self.max_rate, max(self.min_rate, flow.rate))
            flow.used = flow.lost = 0
            flow.period_start = now
            flow.period_end = now + self.period()
            flow.round += 1
            if flow.presumed:  # a loss is taken back in its own round or the next, no later
                flow.presumed = {seq: p for seq, p in flow.presumed.items() if p[0] >= flow.round - 1}

    # -- pacing ----------------------------------------------------------
    def poll(self, now: float) -> list[tuple[str, wire.CellPacket]]:
        out: list[tuple[str, wire.CellPacket]] = []
        for flow in self.flows.values():
            outstanding = flow.outstanding
            # issued in order, the first is the oldest: when it has not expired, none has
            if outstanding and (not flow.issued_in_order or now - next(iter(outstanding.values())) >= self.timeout):
                expired = [s for s, t in outstanding.items() if now - t >= self.timeout]
                for seq in expired:
                    self._lose(flow, seq)
            if now >= flow.period_end:
                self._feedback(flow, now)
        n = len(self._order)
        while n and self.gate.ready(now) and self.outstanding < self.budget:
            chosen, turn, waiting = self._next_flow(now, n)
            if chosen is None:
                if not waiting:  # nothing to credit: an idle downlink saves up no burst
                    self.gate.idle(now)
                break
            if not (chosen.short or self.srpt):
                self._rr = (self._rr + turn + 1) % n  # the round robin is the long flows'
            out.append((chosen.src, self._issue(chosen, now)))
        return out

    def _next_flow(self, now: float, n: int) -> tuple[_CreditFlow | None, int, bool]:
        """The flow the next credit goes to: the first due short flow, else the first due flow in
        round-robin order (srpt: the due flow with the least demand left, the earliest to ask on a
        tie); with its place in that order, and whether a flow with demand is not due yet (when
        none is chosen)."""
        if self.srpt:
            return self._least_remaining(now)
        first, turn, waiting = None, 0, False
        for i in range(n):
            flow = self.flows[self._order[(self._rr + i) % n]]
            if flow.demand <= 0:
                continue
            if flow.next_time > now:
                waiting = True
            elif flow.short:
                return flow, i, waiting
            elif first is None:
                first, turn = flow, i
        return first, turn, waiting

    def _least_remaining(self, now: float) -> tuple[_CreditFlow | None, int, bool]:
        """srpt's choice: of the `overcommit` due flows with the least demand left (the earliest
        to ask on a tie), the one credited longest ago. A flow is due at its unjittered grid point
        (to a millionth of a credit interval, what the gate's own sums may differ by): jittered,
        the lead flow missed a gate slot to the next one whenever its offset fell after it, a
        tenth of them."""
        due, waiting = [], False
        for rank, key in enumerate(self._order):  # arrival order: the first of equal demands leads
            flow = self.flows[key]
            if flow.demand <= 0:
                continue
            if flow.grid > now + 1e-6 / flow.rate:
                waiting = True
            else:
                due.append((flow.demand, rank, flow))
        if not due:
            return None, 0, waiting
        if self.overcommit == 1:
            return min(due, key=lambda d: d[:2])[2], 0, waiting
        lead = heapq.nsmallest(self.overcommit, due, key=lambda d: d[:2])
        return min(lead, key=lambda d: d[2].served)[2], 0, waiting

    def _issue(self, flow: _CreditFlow, now: float) -> wire.CellPacket:
        seq = flow.next_seq
        flow.next_seq = (flow.next_seq + 1) & wire.U32 or 1
        flow.outstanding[seq] = now
        if now < flow.last_issue_s:
            flow.issued_in_order = False
        flow.last_issue_s = now
        flow.demand -= 1
        flow.issued += 1
        self.outstanding += 1
        self.peak_outstanding = max(self.peak_outstanding, self.outstanding)
        self.credits_sent += 1
        flow.served = self.credits_sent
        # The grid advances one interval from where it was (or from `catchup` ago,
        # after a wake-up that came later than that); the jitter is an offset from it.
        step = 1 / flow.rate
        flow.grid = max(flow.grid, now - self.catchup) + step
        flow.next_time = flow.grid + self.p.jitter * (2 * self.rng.random() - 1) * step
        self.gate.consume(now, self.data_bytes)
        if flow.entropy is None:
            flow.entropy = EntropySource(self.cfg.entropy_values, self.cfg.entropy_choice,
                                         flow_start(flow.flow_id), seed=self.cfg.seed ^ flow.flow_id)
        entropy = flow.entropy.next()
        return wire.CellPacket(type=wire.CREDIT, flow_id=flow.flow_id, credit_seq=seq, entropy=entropy)

    def deadline(self) -> float | None:
        times = []
        for flow in self.flows.values():
            if flow.outstanding:
                times.append(next(iter(flow.outstanding.values())) + self.timeout)
                times.append(flow.period_end)
            if flow.demand > 0 and self.outstanding < self.budget:
                # when the flow is due by the rule poll applies: srpt's unjittered grid point, or the
                # jittered one (a deadline at the jittered point under srpt woke the loop before the
                # flow was due, and a simulator waking again 1 ns later spun through the offset:
                # 245 s of wall time for the 4.7 s of the mixed workload)
                due = flow.grid if self.srpt else flow.next_time
                times.append(max(due, self.gate.next_free))
        return min(times) if times else None

    def stats(self) -> dict:
        return {
            "credits_sent": self.credits_sent,
            "credits_lost": self.credits_lost,
            "peak_outstanding_credits": self.peak_outstanding,
            "credit_rtt_ms": None if self.srtt is None else round(self.srtt * 1e3, 3),
            "control_bytes_in": self.control_bytes_in,
        }
