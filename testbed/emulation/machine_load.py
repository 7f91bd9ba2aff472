"""The machine's CPU over a run's traffic: how busy its cores were, and how much its hypervisor took.

A fabric that needs more CPU than the machine has runs late whatever its settings: the fidelity
verdict's lateness says that the run fell behind, these figures say whether the cores were why.
/proc/stat's first line counts the ticks (1/100 s) of all cores since boot: idle and iowait are
idle time, steal is time the hypervisor gave to others while this machine had work, and the rest
is busy (steal counts as busy: the work was there, the core was not). `MachineLoad` reads it when
the traffic starts, every SAMPLE_PERIOD_S from a thread of its own, and when the run measures its
costs; the run keeps every reading (result.json's costs, `machine_cpu_samples`), so the shares
below can be recomputed from the run directory:

- busy share: busy ticks over all ticks between the first and the last reading (the traffic
  phase: from when the run starts the agents to its end);
- busiest-second share: the highest busy share between two consecutive readings at least
  MIN_INTERVAL_S apart, over all cores together (cores saturated for a second are what makes
  the kernel throttle real-time threads, and a share over the whole traffic hides such a second);
- steal share: steal ticks over all ticks between the first and the last reading.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import NamedTuple

SAMPLE_PERIOD_S = 1.0
MIN_INTERVAL_S = 0.5  # a shorter interval (the last one) holds too few ticks to give a share


class Ticks(NamedTuple):
    steal: int
    idle: int
    total: int


def machine_cpu_ticks() -> Ticks | None:
    """The machine's CPU ticks so far (/proc/stat's cpu line), None where there is no such file."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, IndexError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already inside user and nice]
    fields += [0] * (8 - len(fields))
    return Ticks(fields[7], fields[3] + fields[4], sum(fields[:8]))


def steal_share(before: Ticks | None, after: Ticks | None) -> float | None:
    """The share of all ticks between two readings that the hypervisor gave to others: time every
    process of the run waited for, whatever the scheduling; None without two readings."""
    if before is None or after is None or after.total <= before.total:
        return None
    return round((after.steal - before.steal) / (after.total - before.total), 4)


def busy_share(before: Ticks | None, after: Ticks | None) -> float | None:
    """The share of all ticks between two readings that were not idle; None without two readings."""
    if before is None or after is None or after.total <= before.total:
        return None
    return round(1 - (after.idle - before.idle) / (after.total - before.total), 4)


def shares(samples: list[list[float]]) -> dict:
    """The busy, busiest-second and steal shares of readings [[t_s, steal, idle, total], ...] in time
    order (the rule is in the module's docstring); None for a share the readings cannot give."""
    ticks = [(t, Ticks(int(s), int(i), int(n))) for t, s, i, n in samples]
    if len(ticks) < 2:
        return {"machine_cpu_busy_share": None, "machine_cpu_busiest_second_share": None,
                "machine_cpu_steal_share": None}
    seconds = [busy_share(a, b) for (ta, a), (tb, b) in zip(ticks, ticks[1:]) if tb - ta >= MIN_INTERVAL_S]
    seconds = [s for s in seconds if s is not None]
    return {"machine_cpu_busy_share": busy_share(ticks[0][1], ticks[-1][1]),
            "machine_cpu_busiest_second_share": max(seconds) if seconds else None,
            "machine_cpu_steal_share": steal_share(ticks[0][1], ticks[-1][1])}


class MachineLoad:
    """Readings of the machine's ticks from `start()` to `stop()`, every SAMPLE_PERIOD_S between."""

    def __init__(self, read=machine_cpu_ticks, period_s: float = SAMPLE_PERIOD_S) -> None:
        self.read, self.period_s = read, period_s
        self.samples: list[list[float]] = []
        self._t0 = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="machine-load", daemon=True)

    def _take(self) -> None:
        ticks = self.read()
        if ticks is not None:
            self.samples.append([round(time.monotonic() - self._t0, 3), *ticks])

    def start(self) -> "MachineLoad":
        self._t0 = time.monotonic()
        self._take()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._done.wait(self.period_s):
            self._take()

    def stop(self) -> dict:
        """The last reading, the shares (`shares`) and every reading, as result.json's costs keep them."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(2 * self.period_s)
        self._take()
        return {**shares(self.samples), "machine_cpu_samples": self.samples}
