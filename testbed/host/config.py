"""Transport parameters, scaled down from real fabrics (keep the ratios).

Everything that is a time is derived from the base RTT and everything that
is a size from the BDP in cells, so a scenario that changes the link rate or
delay keeps DCQCN thresholds, RTOs and credit budgets at the same ratios.
Times are seconds (float), rates bits per second.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace
from functools import cached_property

from testbed.errors import TestbedError
from testbed.cells import wire
from testbed.topo.entropy import EntropyLayout

CC_NAMES = ("tita", "dcqcn", "nscc", "none")
CREDIT_ORDERS = ("fair", "srpt")
# DCQCN's byte counter B over one rate-increase timer period at line rate, in
# Zhu et al. (SIGCOMM 2015): 10 MB at 40 Gbit/s against T = 55 us.
DCQCN_BYTE_COUNTER_TIMER_PERIODS = 10e6 * 8 / 40e9 / 55e-6


class ConfigError(TestbedError):
    """A transport parameter out of its valid range."""


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN constants (Zhu et al., SIGCOMM 2015), times in RTTs and sizes in BDPs."""

    g: float = 1 / 256
    # N: at most one CNP per flow per interval. 5 RTT like the other timers: at
    # 1 RTT a flow got several CNPs before its first cut could show in the queue
    # and collapsed to a few % of the link (measured in the simulator).
    cnp_interval_rtt: float = 5.0
    alpha_timer_rtt: float = 5.0  # K
    increase_timer_rtt: float = 5.0  # T
    # B: Zhu et al.'s 10 MB at 40 Gbit/s is 36.4 of their 55 us timer periods at line
    # rate; kept as that ratio to the increase timer (36.4 x 5 RTT = 182 BDP), so rate
    # increase is timer-driven as in the paper (it was 4 BDP, under one timer period).
    byte_counter_bdp: float = DCQCN_BYTE_COUNTER_TIMER_PERIODS * 5.0
    fast_recovery_steps: int = 5  # F
    rate_ai_fraction: float = 0.001  # R_AI as a fraction of the link
    hai_factor: float = 10.0  # R_HAI = hai_factor * R_AI
    min_rate_fraction: float = 0.001


@dataclass(frozen=True)
class TitaParams:
    """Credit scheduling (ExpressPass feedback + per-receiver budget)."""

    outstanding_bdp: float = 1.0  # credits in flight per receiver, in BDPs
    initial_w: float = 1 / 16
    max_w: float = 0.5
    min_w: float = 0.01
    jitter: float = 0.1  # credits jittered +-10%
    credit_timeout_rtt: float = 3.0  # an unanswered credit counts as lost after this
    request_retry_rtt: float = 4.0  # re-announce demand if no credit came for this long
    min_rate_fraction: float = 0.01
    target_loss_factor: float = 0.125  # target_loss = (1 - rate/max_rate) * this
    # Which flow a receiver credits next: "fair" (demands of at most one BDP first, the rest round
    # robin) or "srpt" (the least remaining demand first, Homa's order: an incast finishes its
    # senders one after another, which lowers the median FCT and gives up equal shares)
    credit_order: str = "fair"
    # srpt only: how many of the least-remaining due flows share the credits, round robin (Homa's
    # degree of overcommitment); 1 serves one flow at a time, more trade median FCT for equal shares
    overcommit: int = 1


@dataclass(frozen=True)
class NsccParams:
    """NSCC's constants (UEC htsim's model), times in base RTTs, sizes in BDPs.

    The four quadrants of (queueing delay against the target, ECN echoed): low + ECN
    no change; high + ECN multiplicative decrease by max(1 - md_gain (avg - target) / avg,
    md_floor) at most once per RTT; low, no ECN, proportional increase; high, no ECN, fair
    (additive) increase. Quick adapt cuts the window to what was acknowledged over the last
    base RTT when a delay sample exceeds quick_adapt_x_target x target, or on a loss."""

    # Target queueing delay: 0.75 RTT with packet trimming, 1.0 without; this fabric has
    # no trimming.
    target_qdelay_rtt: float = 1.0
    max_wnd_bdp: float = 1.5
    initial_wnd_bdp: float = 1.0
    min_wnd_cells: float = 1.0
    md_gain: float = 0.8
    md_floor: float = 0.5
    delay_ewma: float = 0.0125  # weight of one delay sample (one ACK) in the average
    quick_adapt_x_target: float = 4.0
    # Increases are additive per RTT (each acknowledged cell adds its share x/W of them),
    # so with the multiplicative decrease windows converge to equal shares (AIMD).
    # Proportional increase (delay d below the target): pi_bdp x (target - d) / target
    # BDPs per RTT.
    pi_bdp: float = 0.1
    # Fair increase (delay above the target, no ECN): fi_bdp BDPs per RTT.
    fi_bdp: float = 0.02


@dataclass(frozen=True)
class TransportConfig:
    """Per-host transport settings; derived values are properties."""

    cc: str = "tita"
    cell_size: int = 1024
    link_rate_bps: float = 20e6
    bdp_cells: int = 16
    base_rtt_s: float | None = None  # default: bdp_cells cell times at link rate
    reorder_window_cells: int | None = None  # default: 2 BDP
    entropy_values: int = 32
    entropy_choice: str = "rr"  # rr: cycle through the values; random: a uniform draw per cell
    # (nic, dtor, parallel, tier1, tier2) radices of testbed.topo.entropy.EntropyLayout:
    # how echoed cells mirror an entropy value; all 1 = echo unchanged
    entropy_layout: tuple[int, int, int, int, int] = (1, 1, 1, 1, 1)
    rto_low_rtt: float = 5.0
    rto_high_rtt: float = 15.0
    rto_low_max_inflight: int = 3  # IRN: few cells in flight -> low RTO
    nack_delay_rtt: float = 1.0  # a hole older than this is NACKed
    # ACK coalescing: one ACK per `ack_every` in-order DATA cells (1 = every cell);
    # out-of-order, duplicate, CE-marked and LAST cells are acknowledged at once,
    # and a pending ACK waits at most ack_delay_rtt base RTTs (and at most the
    # time `ack_every` cells take at the link rate).
    ack_every: int = 4
    ack_delay_rtt: float = 0.25
    # NIC pacer catch-up: a driver that wakes late may make up this many cell
    # times (a late wake-up sends at most 1 + this many cells back to back),
    # never more than the link rate on average. 0 = strict release times.
    nic_catchup_cells: float = 1.0
    # The share of each link's bytes the switches' credit meters give credits (the scenario's
    # fabric.credits.rate_fraction); None: no meter on this host's paths.
    credit_meter_share: float | None = None
    max_message_bytes: int = 1 << 30
    seed: int = 1
    dcqcn: DcqcnParams = field(default_factory=DcqcnParams)
    tita: TitaParams = field(default_factory=TitaParams)
    nscc: NsccParams = field(default_factory=NsccParams)

    def __post_init__(self) -> None:
        if self.cc not in CC_NAMES:
            raise ConfigError(f"congestion control {self.cc!r} is not one of {', '.join(CC_NAMES)}")
        if not 16 <= self.cell_size <= 9000:
            raise ConfigError(f"cell size {self.cell_size} B is outside 16..9000 B")
        if self.link_rate_bps <= 0:
            raise ConfigError(f"link rate {self.link_rate_bps} bit/s must be positive")
        if self.bdp_cells < 1:
            raise ConfigError(f"BDP of {self.bdp_cells} cells must be at least 1")
        if self.window < 2:
            raise ConfigError(f"reorder window of {self.window} cells must be at least 2")
        if not 1 <= self.ack_every <= wire.SACK_BITS:
            raise ConfigError(f"ack_every={self.ack_every} outside 1..{wire.SACK_BITS} cells")
        if self.ack_delay_rtt <= 0:
            raise ConfigError(f"ack_delay_rtt={self.ack_delay_rtt} must be positive")
        if self.nic_catchup_cells < 0:
            raise ConfigError(f"nic_catchup_cells={self.nic_catchup_cells} must not be negative")
        if self.credit_meter_share is not None and not 0 < self.credit_meter_share < 1:
            raise ConfigError(f"credit meter share {self.credit_meter_share} outside (0, 1)")
        if not 1 <= self.entropy_values <= 65536:
            raise ConfigError(f"entropy values {self.entropy_values} outside 1..65536")
        if self.entropy_choice not in ("rr", "random"):
            raise ConfigError(f"entropy choice {self.entropy_choice!r} is not rr or random")
        if self.tita.credit_order not in CREDIT_ORDERS:
            raise ConfigError(f"tita credit order {self.tita.credit_order!r} is not one of {', '.join(CREDIT_ORDERS)}")
        if self.tita.overcommit < 1:
            raise ConfigError(f"tita overcommit {self.tita.overcommit} must be at least 1")
        if self.tita.overcommit > 1 and self.tita.credit_order != "srpt":
            raise ConfigError(f"tita overcommit {self.tita.overcommit} needs credit_order srpt (fair order shares every flow)")
        if len(self.entropy_layout) != 5 or min(self.entropy_layout) < 1:
            raise ConfigError(f"entropy layout {self.entropy_layout} must be five radices of at least 1")

    @cached_property
    def layout(self) -> EntropyLayout:  # read per echoed cell: built once
        return EntropyLayout(*self.entropy_layout)

    def with_scenario(self, transport: dict) -> "TransportConfig":
        """Apply a scenario's resolved `transport` section (testbed.scenario's names and units)."""
        changes: dict = {}
        for key in ("rto_low_rtt", "rto_high_rtt"):
            if key in transport:
                changes[key] = float(transport[key])
        t = transport.get("tita") or {}
        tita = {"outstanding_bdp": t.get("max_outstanding_bdp"), "initial_w": t.get("initial_w"),
                "target_loss_factor": t.get("target_loss_factor")}
        changes["tita"] = replace(self.tita, **{k: float(v) for k, v in tita.items() if v is not None},
                                  **({"credit_order": str(t["credit_order"])} if t.get("credit_order") else {}),
                                  **({"overcommit": int(t["overcommit"])} if t.get("overcommit") else {}))
        q = transport.get("dcqcn") or {}
        dcqcn = {"g": q.get("g"), "rate_ai_fraction": q.get("r_ai_fraction"), "hai_factor": q.get("hyper_factor"),
                 "alpha_timer_rtt": q.get("timer_rtt"), "increase_timer_rtt": q.get("timer_rtt"),
                 "cnp_interval_rtt": q.get("cnp_interval_rtt")}
        dcqcn = {k: float(v) for k, v in dcqcn.items() if v is not None}
        if q.get("fast_recovery_steps") is not None:
            dcqcn["fast_recovery_steps"] = int(q["fast_recovery_steps"])
        if q.get("byte_counter_bytes") is not None:
            dcqcn["byte_counter_bdp"] = float(q["byte_counter_bytes"]) / (self.bdp_cells * self.data_wire_bytes)
        changes["dcqcn"] = replace(self.dcqcn, **dcqcn)
        n = transport.get("nscc") or {}
        names = {f: f for f in NsccParams.__dataclass_fields__}
        changes["nscc"] = replace(self.nscc, **{names[k]: float(v) for k, v in n.items() if k in names})
        cfg = replace(self, **changes)
        if not 0 < cfg.rto_low_rtt < cfg.rto_high_rtt:
            raise ConfigError(f"RTOs of {cfg.rto_low_rtt:g}/{cfg.rto_high_rtt:g} RTT: low must be positive and below high")
        return cfg

    def for_local_channel(self, rate_bps: float, delay_s: float) -> "TransportConfig":
        """The same transport on a server's GPU-GPU channel: its rate, its RTT (one hop there and
        back, a cell and an ACK serialised), its BDP and a reorder window of 2 of its BDPs.

        Its retransmission timeouts are never shorter, in seconds, than the fabric's: the
        channel's RTT is a fraction of a millisecond, less than an agent's wake-up jitter, and
        a timeout that short fires on a late loop, not on a loss (the first emulated run
        retransmitted 84 cells on a channel that lost none)."""
        ack_wire = wire.FRAME_OVERHEAD + wire.HEADER_LEN + 8
        rtt = 2 * delay_s + (self.data_wire_bytes + ack_wire) * 8 / rate_bps
        bdp = max(2, math.ceil(rate_bps * rtt / 8 / self.data_wire_bytes))
        stretch = self.rtt_s / rtt
        return replace(self, link_rate_bps=rate_bps, base_rtt_s=rtt, bdp_cells=bdp, credit_meter_share=None,
                       reorder_window_cells=2 * bdp,
                       rto_low_rtt=max(self.rto_low_rtt, self.rto_low_rtt * stretch),
                       rto_high_rtt=max(self.rto_high_rtt, self.rto_high_rtt * stretch))

    def with_(self, **changes) -> "TransportConfig":
        return replace(self, **changes)

    @property
    def data_wire_bytes(self) -> int:
        return wire.wire_bytes(self.cell_size, wire.DATA)

    @property
    def credit_wire_bytes(self) -> int:
        return wire.wire_bytes(self.cell_size, wire.CREDIT)

    @property
    def cell_time_s(self) -> float:
        """Serialisation time of one DATA cell at the link rate."""
        return self.data_wire_bytes * 8 / self.link_rate_bps

    @property
    def rtt_s(self) -> float:
        if self.base_rtt_s is not None:
            return self.base_rtt_s
        return self.bdp_cells * self.cell_time_s

    @property
    def ack_delay_s(self) -> float:
        """Longest an in-order DATA cell waits for its (coalesced) ACK."""
        return min(self.ack_delay_rtt * self.rtt_s, self.ack_every * self.cell_time_s)

    @property
    def nic_catchup_s(self) -> float:
        return self.nic_catchup_cells * self.cell_time_s

    @property
    def window(self) -> int:
        """Cells a sender may have beyond the cumulative ack (= receiver's reorder window)."""
        if self.reorder_window_cells is not None:
            return self.reorder_window_cells
        return 2 * self.bdp_cells

    @property
    def max_credit_rate(self) -> float:
        return self.flow_credit_rate(self.link_rate_bps)

    def flow_credit_rate(self, link_rate_bps: float) -> float:
        """The most credits per second one flow gets (ExpressPass's maximum rate): one per DATA
        frame time of the link, and no more than a credit meter on its path passes. The meter
        reserves each cell's ACK and credit on the link its credits cross, so one sender is held
        below the receiver's line (88.6% at 1 KiB cells); credits issued above the meter's rate
        only waited in its queue and were dropped once it filled: srpt, which credits one sender at
        a time, lost 23 credits at 7:1 (simulator) and its median FCT grew 7.5%. The rest of the
        receiver's link goes to the next flow. The receiver's credit gate, at one DATA frame per
        credit plus every control frame that arrives (TitaReceiver.on_downlink), keeps the sum of
        its flows within its link."""
        line = link_rate_bps / 8 / self.data_wire_bytes
        if self.credit_meter_share is None:
            return line
        # in the meters' whole credits per second: a flow credited at the exact share ran 3.5%
        # above a meter at 0.2 Mbit/s (20.7 against 20), which dropped its last credits, and each
        # such flow ended more than a base RTT late (emulated 3-tier permutation)
        return min(line, wire.credit_meter_rate(link_rate_bps, self.credit_meter_share, self.cell_size))
