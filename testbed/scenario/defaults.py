"""Default values, scaled down from real fabrics (keep the ratios, not the
microseconds).  Values that depend on the fabric are expressed relative to
the bandwidth-delay product (BDP, in cells) and computed in `resolve`.
"""

from __future__ import annotations

import math

from testbed.cells.wire import FRAME_OVERHEAD, HEADER_LEN, SACK_BYTES

DURATION_S = 20.0
SEED = 1

LEAF_SPINE = {"leaves": 4, "spines": 2, "hosts_per_leaf": 2, "uplinks_per_spine": 1,
              "dual_homed": False}
FAT_TREE = {"k": 4, "dual_homed": False}

RATE_MBPS = 20.0
# 1 ms per link: at 20 Mbit/s and 1024-byte cells a leaf-spine BDP is ~23
# cells and a k=4 fat-tree's ~34, the 16-32 cell range of real fabrics.
DELAY_US = 1000.0
BUFFER_BDP = 2.0  # egress queue depth, in BDPs
# The intra-server channel of multi-GPU servers (links.local): NVLink carries
# several times a NIC's rate at a fraction of a network hop's delay.
LOCAL_RATE_X_HOST = 8.0
LOCAL_DELAY_X_HOST = 0.1

TARGET = "auto"
PROGRAM = "p4src/fabric.p4"
LOG_LEVEL = "warn"
PROCESSES = "auto"  # builtin: one fabric process per two cores

LOAD_BALANCING = "ecmp"
LB_ALIASES = {"spray": "spray_rr_entropy"}
CELL_SIZE = 1024
ENTROPY_VALUES = 32  # at least; rounded up to a multiple of the equal-cost path count

# Wire overhead of a cell (Ethernet, IPv4, UDP, cell header) and an ACK's SACK body (testbed.cells.wire).
CELL_OVERHEAD_BYTES = FRAME_OVERHEAD + HEADER_LEN
ACK_BODY_BYTES = SACK_BYTES

ECN_K_BDP = 0.5  # DCTCP guideline K > BDP/7
ECN_KMIN_BDP = 0.2  # DCQCN scaled
ECN_KMAX_BDP = 1.0
ECN_PMAX = 0.2

BURST_CREDITS = 2
QUEUE_CREDITS = 8

# PFC (fabric.pfc): pause a link's sender at 8 DATA cells queued from it, resume at 4, the
# simulator's thresholds (testbed/claims/experiments.py)
PFC_XOFF_CELLS = 8
PFC_XON_CELLS = 4

REORDER_WINDOW_BDP = 2.0
RTO_LOW_RTT = 5.0
RTO_HIGH_RTT = 15.0

TITA = {"max_outstanding_bdp": 1.0, "initial_w": 1 / 16, "target_loss_factor": 0.125, "credit_order": "fair", "overcommit": 1}
DCQCN = {"g": 1 / 256, "r_ai_fraction": 0.001, "hyper_factor": 10.0, "timer_rtt": 5.0,
         "cnp_interval_rtt": 5.0, "fast_recovery_steps": 5}
# NSCC (UEC's htsim model): target queueing delay 1.0 RTT without
# trimming (0.75 with), maxwnd 1.5 BDP, decrease max(1 - 0.8 (avg - target)/avg, 0.5),
# delay EWMA 0.0125, quick adapt at 4x target; the initial window and the two
# additive increases are ours (the model gives none).
NSCC = {"target_qdelay_rtt": 1.0, "max_wnd_bdp": 1.5, "initial_wnd_bdp": 1.0, "min_wnd_cells": 1.0,
        "md_gain": 0.8, "md_floor": 0.5, "delay_ewma": 0.0125, "quick_adapt_x_target": 4.0,
        "pi_bdp": 0.1, "fi_bdp": 0.02}
# B in rate-increase timer periods at line rate: Zhu et al.'s 10 MB at 40 Gbit/s with
# T = 55 us (36.4); the byte counter is this many timer_rtt BDPs.
DCQCN_BYTE_COUNTER_TIMER_PERIODS = 10e6 * 8 / 40e9 / 55e-6

COLLECTIVE_SIZES_BYTES = [1024 * 1024]
COLLECTIVE_ALGORITHM = {"all_reduce": "ring", "all_gather": "ring", "reduce_scatter": "ring",
                        "all_to_all": "direct"}
PHASE_MESSAGE_BYTES = {"incast": 256 * 1024, "permutation": 4 * 1024 * 1024,
                       "all_to_all": 512 * 1024, "ring_allreduce": 1024 * 1024,
                       "poisson": 64 * 1024, "stream": 8 * 1024}
# poisson and stream: the claims experiments' settings (testbed/claims/experiments.py: _run_load's
# 3 s of arrivals, _run_mixed's short messages: 60 of 8 KiB, 30 ms apart)
POISSON_ARRIVALS_S = 3.0
STREAM_COUNT = 60
STREAM_INTERVAL_S = 0.03


def ecn_mode(cc: str) -> str:
    """DCQCN and NSCC need RED-style marking to react to; the others run without ECN."""
    return "red" if cc in ("dcqcn", "nscc") else "none"


def cells(bdp_cells: int, fraction: float) -> int:
    return max(1, math.ceil(bdp_cells * fraction))

# training jobs: iterations and gradient dtype (DDP's bucket caps are host/training.py's)
TRAINING_ITERATIONS = 5
TRAINING_DTYPE = "bf16"
