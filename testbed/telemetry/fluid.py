"""The ideal a run is held against: max-min fair fluid sharing of the same placement.

Why: a measured goodput or completion time means little alone; beside what
perfectly shared links would have given for the same messages, on the same
paths, at the same rates, it says how much the transport and the load
balancing lost.

Model.  A flow is a sequence of messages sent back to back (a message starts
at the later of its planned start and the end of the flow's previous
message).  A flow's *usage* of a link is how many bits that link carries per
bit of the flow's progress: 1 on every link of its only path, 1/k on each of
k paths it is split over evenly, and a small share on the reverse links that
carry its ACKs.  At every instant the active flows' rates are max-min fair
under those usages (progressive filling: all unfrozen flows rise together;
when a link fills, the flows that use it freeze), and they are recomputed
whenever a message starts or ends.  Pure Python, exact up to float rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_EPS = 1e-12


@dataclass
class FluidFlow:
    """Messages (size in bits of flow progress, planned start in s) over fixed link usages."""

    name: str
    messages: list[tuple[float, float]]
    usage: dict[str, float]  # link -> link bits per bit of progress


@dataclass
class FluidResult:
    # per flow, per message: (ideal first transmission s, ideal completion s)
    messages: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    link_bits: dict[str, float] = field(default_factory=dict)  # bits each link carried

    def start_s(self) -> float | None:
        starts = [m[0] for ms in self.messages.values() for m in ms]
        return min(starts) if starts else None

    def end_s(self) -> float | None:
        ends = [m[1] for ms in self.messages.values() for m in ms]
        return max(ends) if ends else None


def usage_from_paths(paths: list[list[str]], weight: float = 1.0) -> dict[str, float]:
    """Usage of a flow split evenly over `paths` (each a list of link names), times `weight`."""
    usage: dict[str, float] = {}
    for path in paths:
        for link in path:
            usage[link] = usage.get(link, 0.0) + weight / len(paths)
    return usage


def add_usage(into: dict[str, float], more: dict[str, float]) -> dict[str, float]:
    for link, share in more.items():
        into[link] = into.get(link, 0.0) + share
    return into


def max_min_rates(usages: dict[str, dict[str, float]], capacity_bps: dict[str, float]) -> dict[str, float]:
    """Max-min fair rates (bits of progress / s) for flows with these link usages."""
    rates: dict[str, float] = {}
    unfrozen = {f for f, u in usages.items() if any(v > 0 for v in u.values())}
    for f in set(usages) - unfrozen:
        rates[f] = float("inf")  # uses no modelled link
    frozen_load = {link: 0.0 for link in capacity_bps}
    level = 0.0
    while unfrozen:
        best = None
        for link, cap in capacity_bps.items():
            s = sum(usages[f].get(link, 0.0) for f in unfrozen)
            if s <= _EPS:
                continue
            t = (cap - frozen_load[link]) / s
            if best is None or t < best:
                best = t
        if best is None:
            raise ValueError(f"flows {sorted(unfrozen)} use links without a capacity")
        level = max(level, best)
        full = set()
        for link, cap in capacity_bps.items():
            s = sum(usages[f].get(link, 0.0) for f in unfrozen)
            if s > _EPS and frozen_load[link] + level * s >= cap * (1 - 1e-9):
                full.add(link)
        freeze = {f for f in unfrozen if any(usages[f].get(link, 0.0) > _EPS for link in full)}
        for f in freeze:
            rates[f] = level
            for link, share in usages[f].items():
                if link in frozen_load:
                    frozen_load[link] += level * share
        unfrozen -= freeze
    return rates


def simulate(flows: list[FluidFlow], capacity_bps: dict[str, float]) -> FluidResult:
    """Run the fluid model until every message has completed."""
    for flow in flows:
        missing = sorted(set(flow.usage) - set(capacity_bps))
        if missing:
            raise ValueError(f"flow {flow.name} uses links {missing} that have no capacity")
    result = FluidResult(messages={f.name: [] for f in flows}, link_bits={link: 0.0 for link in capacity_bps})
    by_name = {f.name: f for f in flows}
    next_index = {f.name: 0 for f in flows}
    ready_at = {f.name: f.messages[0][1] for f in flows if f.messages}  # planned start of the next message
    active: dict[str, list[float]] = {}  # flow -> [remaining bits, ideal first transmission]
    now = min(ready_at.values(), default=0.0)
    while active or ready_at:
        for name in [n for n, t in ready_at.items() if t <= now + _EPS]:
            size = by_name[name].messages[next_index[name]][0]
            active[name] = [size, now]
            del ready_at[name]
        if not active:
            now = min(ready_at.values())
            continue
        rates = max_min_rates({n: by_name[n].usage for n in active}, capacity_bps)
        step = min(active[n][0] / rates[n] for n in active)
        if ready_at:
            step = min(step, min(ready_at.values()) - now)
        step = max(step, 0.0)
        for name, state in active.items():
            progress = rates[name] * step if rates[name] != float("inf") else state[0]
            state[0] -= progress
            for link, share in by_name[name].usage.items():
                result.link_bits[link] += progress * share
        now += step
        for name in [n for n, s in active.items() if s[0] <= _EPS * max(1.0, by_name[n].messages[0][0])]:
            first_tx = active.pop(name)[1]
            result.messages[name].append((first_tx, now))
            next_index[name] += 1
            if next_index[name] < len(by_name[name].messages):
                ready_at[name] = max(now, by_name[name].messages[next_index[name]][1])
    return result
