"""DCQCN (SIGCOMM 2015) timers in RTTs.

Sender: starts at line rate; a CNP sets Rt = Rc, Rc *= (1 - alpha/2) and
raises alpha; alpha decays every K without CNP; rate-increase events (timer T
or every B bytes) do F rounds of fast recovery, then additive, then hyper
increase, each followed by Rc = (Rt + Rc) / 2.
Receiver: a CE-marked cell of a flow triggers a CNP unless one was sent for
that flow within the last N.

The flow is paced at Rc by the same `pacing.Pacer` as every other sender
(`none`'s flows, the NIC, TiTa's credits), with the NIC's catch-up: a late
wake-up of the agent may send what came due meanwhile (at most
`nic_catchup_cells` cell times of it), never more than Rc on average. A strict
pacer lost every late wake-up for good (0.80 of the line with no congestion
at all and wake-ups up to 1 ms late, in the simulator, against 1.00 for `none`).
"""

from __future__ import annotations

from testbed.cells import wire
from testbed.host.cc.base import ReceiverCC, SenderCC
from testbed.host.config import TransportConfig
from testbed.host.pacing import Pacer


class DcqcnSender(SenderCC):
    def __init__(self, cfg: TransportConfig, now: float) -> None:
        p = cfg.dcqcn
        rtt = cfg.rtt_s
        self.line = cfg.link_rate_bps
        self.g = p.g
        self.rc = self.rt = self.line
        self.alpha = 1.0
        self.min_rate = self.line * p.min_rate_fraction
        self.r_ai = self.line * p.rate_ai_fraction
        self.r_hai = self.r_ai * p.hai_factor
        self.f = p.fast_recovery_steps
        self.k = p.alpha_timer_rtt * rtt
        self.t = p.increase_timer_rtt * rtt
        self.b = p.byte_counter_bdp * cfg.bdp_cells * cfg.data_wire_bytes
        self.timer_events = 0
        self.byte_events = 0
        self.bytes_since = 0.0  # bytes sent since the byte counter last fired (B is not whole)
        self.next_alpha = now + self.k
        self.next_increase = now + self.t
        self._pacer = Pacer(self.rc, cfg.nic_catchup_s)
        self.cnps = 0
        self.rate_cuts = 0  # CNPs that lowered Rc (at the floor a CNP cuts nothing)
        self.min_rc = self.rc
        self.rate_log: list[tuple[float, float]] = []  # (time s, Rc bit/s), for tests and plots

    @property
    def rate_bps(self) -> float:
        return self.rc

    def next_send_time(self) -> float:
        return self._pacer.next_free

    def set_link_rate(self, rate_bps: float) -> None:
        """Line rate is the ceiling of Rc and Rt; a lower line cuts them to it at once."""
        self.line = rate_bps
        self.rt = min(self.rt, rate_bps)
        if self.rc > rate_bps:
            self.rc = rate_bps
            self._pacer.set_rate(self.rc)

    def on_sent(self, now: float, nbytes: int) -> None:
        self._pacer.consume(now, nbytes)
        self.bytes_since += nbytes
        if self.bytes_since >= self.b:
            self.bytes_since -= self.b
            self.byte_events += 1
            self._increase(now)

    def on_cnp(self, now: float) -> None:
        self.cnps += 1
        self.rt = self.rc
        before = self.rc
        self.rc = max(self.min_rate, self.rc * (1 - self.alpha / 2))
        self.rate_cuts += self.rc < before
        self._pacer.set_rate(self.rc)
        self.min_rc = min(self.min_rc, self.rc)
        self.alpha = (1 - self.g) * self.alpha + self.g
        self.timer_events = self.byte_events = 0
        self.bytes_since = 0.0
        self.next_alpha = now + self.k
        self.next_increase = now + self.t
        self.rate_log.append((now, self.rc))

    def _increase(self, now: float) -> None:
        most = max(self.timer_events, self.byte_events)
        least = min(self.timer_events, self.byte_events)
        if most < self.f:
            pass  # fast recovery: Rt unchanged
        elif least > self.f:
            self.rt += (least - self.f) * self.r_hai
        else:
            self.rt += self.r_ai
        self.rt = min(self.rt, self.line)
        self.rc = min(self.line, (self.rt + self.rc) / 2)
        self._pacer.set_rate(self.rc)
        self.rate_log.append((now, self.rc))

    def deadline(self) -> float:
        return min(self.next_alpha, self.next_increase)

    def on_timer(self, now: float) -> None:
        while now >= self.next_alpha:
            self.alpha *= 1 - self.g
            self.next_alpha += self.k
        while now >= self.next_increase:
            self.timer_events += 1
            self.next_increase += self.t
            self._increase(now)


class DcqcnReceiver(ReceiverCC):
    """Notification point: at most one CNP per flow per interval N."""

    def __init__(self, cfg: TransportConfig) -> None:
        self.interval = cfg.dcqcn.cnp_interval_rtt * cfg.rtt_s
        self._last: dict[tuple[str, int], float] = {}
        self.cnps_sent = 0
        self.ce_cells = 0

    def on_data(self, now: float, src: str, cell: wire.CellPacket, ce: bool) -> list[tuple[str, wire.CellPacket]]:
        if not ce:
            return []
        self.ce_cells += 1
        key = (src, cell.flow_id)
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            return []
        self._last[key] = now
        self.cnps_sent += 1
        return [(src, wire.CellPacket(type=wire.CNP, flow_id=cell.flow_id, msg_id=cell.msg_id))]

    def stats(self) -> dict:
        return {"cnps_sent": self.cnps_sent, "ce_cells": self.ce_cells}
