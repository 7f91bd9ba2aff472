"""Which of this machine's measured runs a planned load's cost comes from.

A switch or an agent costs less per packet the more packets share a wake-up:
a run slowed by `--fit` costs 1.5-3 times more per agent datagram than the
same fabric at its written rate. So a cost is taken from the runs measured
nearest the planned load, not from the last few runs whatever their rate.

The model: each calibration entry records its load, switch packets per second
per switch process and agent datagrams per second per agent process. For a
planned load the runs are ranked by their distance to it in the log of the
rate, |ln(run's load / planned load)|, the newer first on a tie; the switch
cost and the agent cost are ranked each by its own load. The nearest
NEAREST_RUNS runs give the cost, their median weighted by the packets (or
datagrams) each counted. Above every run's load the nearest runs are the
fastest, which is conservative, as the cost falls with the rate. An entry
without a load (kept before loads were recorded) ranks behind every entry
with one, newest first; without a planned load the newest runs decide. So a
file of old entries gives what the last NEAREST_RUNS runs gave before.

The fabric first: a switch packet's cost depends on the fabric as much as on the
load (most of a k=4 fat-tree's hops are cables inside its fabric process, most
of a leaf-spine's cross a veth: 10 and 27 us per packet on one machine at like
loads), and an agent datagram's on its transport's work. So each entry also
records its fabric (`capacity.fabric_signature`), and a cost is chosen among the
runs of the planned fabric when there are any; a fabric new to this machine
borrows the other fabrics' runs, and the source line says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NEAREST_RUNS = 5  # one run on a busy machine does not decide

# (cost key, count key, load key, load unit) of each cost a run records
SWITCH = ("switch_us_per_packet", "switch_packets", "switch_packets_per_s_per_process", "packets/s per switch process")
AGENT = ("agent_us_per_datagram", "agent_datagrams", "agent_datagrams_per_s_per_process",
         "datagrams/s per agent process")


@dataclass(frozen=True)
class Figure:
    """A cost chosen for a planned load, and which runs it came from."""

    value: float
    runs: tuple[dict, ...]
    planned: float | None  # the planned load in the cost's load unit (None: not given)
    kind: tuple[str, str, str, str]
    fabric: str | None = None  # the planned fabric (None: not given)
    own_fabric: bool = False  # the runs are the planned fabric's own

    def source(self) -> str:
        """The figure with the runs and loads behind it, in one phrase."""
        cost, _count, load, load_unit = self.kind
        who = "switches" if cost == SWITCH[0] else "agents"
        recorded = any(_load(r, load) is not None for r in self.runs)
        near = (f"nearest the planned {self.planned:,.0f} {load_unit}" if self.planned is not None and recorded
                else "newest")
        runs = "; ".join(f"{r.get('from', 'unnamed')} at "
                         + (f"{float(r[load]):,.0f}/s" if _load(r, load) is not None else "an unrecorded load")
                         for r in self.runs)
        of = ("" if self.fabric is None else f" of this fabric ({self.fabric})" if self.own_fabric
              else f" of other fabrics (none of {self.fabric} yet)")
        return f"{who}: the weighted median of the {len(self.runs)} runs{of} {near} [{runs}]"


def _load(run: dict, key: str) -> float | None:
    value = run.get(key)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def weighted_median(values: list[tuple[float, float]]) -> float:
    """The median of (value, weight) pairs: the value at which half the weight lies on each side,
    the mean of two values when the halves meet between them (equal weights: statistics.median)."""
    ordered = sorted(values)
    half = sum(w for _, w in ordered) / 2
    seen = 0.0
    for i, (value, weight) in enumerate(ordered):
        seen += weight
        if seen > half:
            return value
        if seen == half:
            return (value + ordered[i + 1][0]) / 2
    return ordered[-1][0]


def nearest(runs: list[dict], kind: tuple, planned: float | None) -> list[dict]:
    """The runs (oldest first in `runs`) that measured this cost and are nearest `planned`, at most
    NEAREST_RUNS: by log distance, the newer first on a tie; those without a load behind, newest
    first; with no planned load, the newest."""
    cost, _count, load = kind[:3]
    measured = [(i, r) for i, r in enumerate(runs) if r.get(cost)]
    if planned is None or planned <= 0:
        return [r for _, r in measured[-NEAREST_RUNS:]]

    def rank(item: tuple[int, dict]) -> tuple[int, float, int]:
        i, run = item
        at = _load(run, load)
        return (1, 0.0, -i) if at is None else (0, abs(math.log(at / planned)), -i)

    chosen = sorted(measured, key=rank)[:NEAREST_RUNS]
    return [r for _, r in sorted(chosen, key=lambda item: item[0])]  # oldest first, as kept


def typical(runs: list[dict], kind: tuple) -> float | None:
    """Their median weighted by the packets (or datagrams) each counted; every run weighs one when
    any lacks its count (entries kept before the counts were)."""
    cost, count = kind[:2]
    if not runs:
        return None
    counted = all(isinstance(r.get(count), (int, float)) and r[count] > 0 for r in runs)
    return weighted_median([(float(r[cost]), float(r[count]) if counted else 1.0) for r in runs])


def of_fabric(runs: list[dict], kind: tuple, fabric: str | None) -> list[dict]:
    """The runs of `fabric` that measured this cost, when any did; else `runs` (a fabric new to
    this machine borrows the others'), in the order kept."""
    own = [r for r in runs if r.get(kind[0]) and r.get("fabric") == fabric]
    return own if fabric is not None and own else runs


def figure(runs: list[dict], kind: tuple, planned: float | None, fabric: str | None = None) -> Figure | None:
    """The cost for a planned load of a fabric (None when no run measured it)."""
    pool = of_fabric(runs, kind, fabric)
    chosen = nearest(pool, kind, planned)
    value = typical(chosen, kind)
    own = fabric is not None and bool(chosen) and all(r.get("fabric") == fabric for r in chosen)
    return None if value is None else Figure(value, tuple(chosen), planned, kind, fabric, own)


def turning_loads(runs: list[dict], kind: tuple) -> list[float]:
    """The planned loads at which the ranking of the runs by distance can change, so where the
    chosen runs can: the geometric means of two recorded loads (equally far from both). Between two
    of them the figure is the same."""
    cost, _count, load = kind[:3]
    loads = sorted({at for r in runs if r.get(cost) and (at := _load(r, load)) is not None})
    return [math.sqrt(a * b) for i, a in enumerate(loads) for b in loads[i + 1:]]
