"""A sender-window congestion control in the style of Ultra Ethernet's NSCC.

UEC's htsim model and how each part is realised here:

* Signals, per ACK: the queueing delay of the newest cell the ACK acknowledges that
  was sent once (its round trip from the sender's own send time, the receiver's
  delayed-ACK hold left out, minus the base RTT) and whether that cell was CE-marked
  (the receiver acknowledges a CE cell at once with ECE set, so an ACK's ECE speaks
  for the newest cell it covers; the cells it also covers were unmarked).
* The base RTT is the scenario's derived one, lowered to the smallest round trip the
  flow measures if that is shorter.
* Target queueing delay: `target_qdelay_rtt` base RTTs, 1.0 (no trimming here; 0.75 with).
* The four quadrants, decided on each ACK's own delay sample against the target:
  - low delay + ECN: no change (a queue somewhere is building, but the delay is still
    under the target: let load balancing move the entropy);
  - high delay + ECN: multiplicative decrease, W *= max(1 - md_gain (avg - target) /
    avg, md_floor), with avg the EWMA of the delay samples (gain `delay_ewma` per
    sample), at most once per RTT: a decrease waits until an ACK acknowledges a cell
    sent after the previous one, so it sees the effect of the last cut. A factor
    above 1 (the average still under the target) is no change;
  - low delay, no ECN: proportional increase, pi_bdp x (target - delay) / target BDPs
    per RTT (each acknowledged cell adds its 1/W share of it), so growth slows as the
    delay nears the target and stops there;
  - high delay, no ECN (the model names no rule): fair increase, fi_bdp BDPs per
    RTT, the same for every flow.
  Additive increases and a multiplicative decrease: flows converge to equal windows.
* maxwnd: `max_wnd_bdp` (1.5) BDPs; never below `min_wnd_cells`.
* Quick adapt: a delay sample above quick_adapt_x_target (4) x the target, or a loss
  the reliability layer acted on a NACK for, sets the window to the cells
  acknowledged over the last base RTT (what the path delivered without the queue),
  at most once per measured RTT, and the next decrease waits for cells sent after it.
  A retransmission timeout does not: the flow heard nothing for an RTO, so what it had
  acknowledged over the last RTT is nothing, and a window pinned to one cell regrows
  only by the proportional increase, which vanishes at the target (docs/measurements.md).

The flow is also paced at the line rate with the NIC's catch-up, as every other
sender is (`none`'s pacer): the window decides how much, the pacer how fast.
No new wire field and no receiver half: `host/reliability.py` keeps the send times and
the receiver's transport already echoes CE on ACKs.
"""

from __future__ import annotations

from collections import deque

from testbed.host.cc.none import NoneReceiver, NoneSender
from testbed.host.config import TransportConfig


class NsccSender(NoneSender):
    """The window decides how much; NoneSender's line-rate pacer how fast."""

    def __init__(self, cfg: TransportConfig, now: float) -> None:
        p = cfg.nscc
        self.base_rtt = cfg.rtt_s
        self.bdp_cells = cfg.bdp_cells
        self.target = p.target_qdelay_rtt * self.base_rtt
        self.max_wnd = p.max_wnd_bdp * self.bdp_cells
        self.min_wnd = min(p.min_wnd_cells, self.max_wnd)
        self.md_gain = p.md_gain
        self.md_floor = p.md_floor
        self.ewma = p.delay_ewma
        self.qa_threshold = p.quick_adapt_x_target * self.target
        self.pi_cells = p.pi_bdp * self.bdp_cells
        self.fi_cells = p.fi_bdp * self.bdp_cells
        self.cwnd = self._clamp(p.initial_wnd_bdp * self.bdp_cells)
        self.window_cells: float | None = self.cwnd  # SenderCC's window: cwnd, kept equal by _set
        self.avg_delay: float | None = None
        self.last_rtt = self.base_rtt  # the newest round-trip sample
        self.last_decrease = float("-inf")  # when the window was last cut (decrease or quick adapt)
        self.qa_allowed = float("-inf")  # no quick adapt before this time
        self._acked: deque[tuple[float, int]] = deque()  # (time, cells) acknowledged, the last base RTT
        super().__init__(cfg, now)  # the line-rate pacer
        # counters, for stats, tests and the report
        self.decreases = 0
        self.quick_adapts = 0
        self.unchanged_ecn = 0  # low delay + ECN
        self.proportional = 0  # low delay, no ECN
        self.fair = 0  # high delay, no ECN
        self.min_cwnd = self.cwnd
        self.max_cwnd = self.cwnd
        self.wnd_log: list[tuple[float, float]] = []  # (time s, window cells) after each cut

    # -- window ----------------------------------------------------------------
    def _clamp(self, w: float) -> float:
        """`w` within the window's bounds, a float even when a bound or `w` (cells acknowledged)
        is a whole number: a compiled build stores it as a float, and the reports print it."""
        return float(min(self.max_wnd, max(self.min_wnd, w)))

    def _set(self, w: float) -> None:
        self.cwnd = self.window_cells = self._clamp(w)
        self.min_cwnd = min(self.min_cwnd, self.cwnd)
        self.max_cwnd = max(self.max_cwnd, self.cwnd)

    def on_ack(self, now: float, acked_cells: int, sent_s: float | None, rtt_s: float | None,
               ece: bool) -> None:
        acked = self._acked
        acked.append((now, acked_cells))
        while acked and acked[0][0] <= now - self.base_rtt:
            acked.popleft()
        if rtt_s is None or sent_s is None:
            return  # every cell it acknowledges was retransmitted: no delay sample (Karn)
        if rtt_s < self.base_rtt:
            self.base_rtt = rtt_s
        self.last_rtt = rtt_s
        delay = rtt_s - self.base_rtt
        self.avg_delay = delay if self.avg_delay is None else self.avg_delay + self.ewma * (delay - self.avg_delay)
        if delay > self.qa_threshold and self._quick_adapt(now):
            return
        high = delay > self.target
        if ece:
            if not high:
                self.unchanged_ecn += 1
            elif sent_s >= self.last_decrease:
                self._decrease(now)
        elif not high:
            self.proportional += 1
            self._set(self.cwnd + self.pi_cells * (self.target - delay) / self.target * acked_cells / self.cwnd)
        else:
            self.fair += 1
            self._set(self.cwnd + self.fi_cells * acked_cells / self.cwnd)

    def _decrease(self, now: float) -> None:
        avg = self.avg_delay
        if avg is None or avg <= self.target:
            return  # the factor would not be below 1
        factor = max(1 - self.md_gain * (avg - self.target) / avg, self.md_floor)
        self._set(self.cwnd * factor)
        self.decreases += 1
        self.last_decrease = now
        self.wnd_log.append((now, self.cwnd))

    def _quick_adapt(self, now: float) -> bool:
        if now < self.qa_allowed:
            return False
        achieved = sum(n for t, n in self._acked if t > now - self.base_rtt)
        self._set(achieved)
        self.quick_adapts += 1
        self.qa_allowed = now + max(self.last_rtt, self.base_rtt)
        self.last_decrease = now
        self.wnd_log.append((now, self.cwnd))
        return True

    def on_loss(self, now: float, timeout: bool = False) -> None:
        if not timeout:
            self._quick_adapt(now)


class NsccReceiver(NoneReceiver):
    """Nothing beyond the transport's own ACKs, which echo CE (FLAG_ECE)."""
