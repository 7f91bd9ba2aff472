"""What a run cost in CPU: per switch packet and per agent datagram, and what the switches
spend with no packet at all.

The run's `result.json` reports it, and a run that kept real time also feeds
the pre-flight capacity check's calibration (`scenario.capacity`): an
overloaded run spends more per packet and would make the next check refuse
what fits.

Why the idle part is measured apart: a switch process spends CPU with no
traffic too (its gRPC servers, timers, telemetry), and a slowed run (`--fit`)
stretches its quiet spells (a workload that starts at 0.5 s starts at 20 s
when every time is stretched 40 times).  Folded into the per-packet figure,
that idle time made slower runs look dearer per packet, so the next check
chose a slower rate still.  `IdlePeriod` samples the switches' CPU over the
quiet spell between the traffic epoch and the first message's start; the
per-packet figure is what is left after that rate times the window. A run
whose idle estimate takes more than MAX_IDLE_SHARE of the switches' CPU, or
that has too few packets, or whose switch CPU could not be read, records no
per-packet figure (and says why), never a zero: a zero would calibrate the
pre-flight check to rates the machine cannot hold. The agents' figure follows
the same rule with their quiet wake-ups (capacity.DEFAULT_IDLE_CPU_PER_AGENT
over each loop) as the idle part. A group of agents in one process (`testbed hosts`) has one
loop: its CPU and its quiet wake-ups are counted once, from its <group>.process.json, and its
members' datagrams from their stats as any agent's.

Each figure is kept with the load the check planned for the run (the busiest
moment's rates per switch process and per agent process, capacity.planned_load),
as the cost per packet falls with the rate and a check compares its own planned
load with those. The load the run measured is reported beside it
(`measured_load`): switch packets per second per switch process over the
switches' traffic window, agent datagrams per second per agent process over the
agents' traffic span (first byte to last, any agent). The two differ: the
busiest moment's switch rate is about twice the window's average in a fat-tree
permutation.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from testbed.scenario import capacity

MIN_SAMPLE = 1000  # packets or datagrams below which a per-packet figure says little
MIN_IDLE_WINDOW_S = 0.5  # a quiet spell shorter than this (CPU time ticks are 10 ms) is not measured
IDLE_MARGIN_S = 0.1  # kept clear of the epoch and of the first message at both ends
# Above this share of the switches' CPU, the idle estimate (a rate sampled over a short quiet spell, in
# 10 ms ticks) decides the per-packet figure more than the packets do: the run records no figure.
MAX_IDLE_SHARE = 0.9


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a live process (/proc/PID/stat), None if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class IdlePeriod:
    """The switch processes' CPU rate over the quiet spell [epoch, epoch + first start]: sampled by a
    thread of its own at both ends (kept IDLE_MARGIN_S inside), None when the spell is too short."""

    def __init__(self, pids: dict[str, int], epoch: float, first_start_s: float) -> None:
        self.pids, self.epoch, self.first_start_s = pids, epoch, first_start_s
        self.rate_by_process: dict[str, float] | None = None
        self._thread = threading.Thread(target=self._run, name="idle-period", daemon=True)

    def start(self) -> "IdlePeriod":
        if self.first_start_s - 2 * IDLE_MARGIN_S >= MIN_IDLE_WINDOW_S:
            self._thread.start()
        return self

    def _run(self) -> None:
        time.sleep(max(0.0, self.epoch + IDLE_MARGIN_S - time.time()))
        t0, cpu0 = time.monotonic(), {n: process_cpu_s(pid) for n, pid in self.pids.items()}
        time.sleep(max(0.0, self.epoch + self.first_start_s - IDLE_MARGIN_S - time.time()))
        t1, cpu1 = time.monotonic(), {n: process_cpu_s(pid) for n, pid in self.pids.items()}
        if t1 - t0 >= MIN_IDLE_WINDOW_S and all(v is not None for v in (*cpu0.values(), *cpu1.values())):
            self.rate_by_process = {n: max(0.0, (cpu1[n] - cpu0[n]) / (t1 - t0)) for n in self.pids}

    def rates(self, timeout_s: float = 1.0) -> dict[str, float] | None:
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        return self.rate_by_process


def measure_costs(switch_cpu_s: dict[str, float], tm_stats: dict, records: Path, threshold_us: float,
                  source: str, mode: str = "per_switch", packets: int | None = None,
                  idle_rates: dict[str, float] | None = None, window_s: float | None = None,
                  switches: int | None = None, calibrate: bool = True,
                  not_judged: frozenset[str] = frozenset(), planned: capacity.Load | None = None,
                  fabric: str | None = None) -> dict:
    """Switch CPU (since the traffic started, `window_s` seconds) less the idle rate the quiet spell
    measured over that window, over the packets the traffic managers took (or `packets`: bmv2 has
    no such count, its program's tx counters give it); agent CPU over the datagrams they sent and
    received, less their quiet wake-ups over their loops; saved as calibration, with the idle rate per
    switch, if real time was kept and `calibrate` (a run over several servers is not: its costs are
    other machines' too, and its switches also feed tunnels). Real time is judged as the fidelity
    verdict judges it: the hosts in `not_judged` (an agent_stall fault stopped them) are left out
    of it, their CPU and datagrams not. The calibration keeps the run's `planned` load (what the
    check planned for this scenario at its rates, capacity.planned_load), so that a check compares
    a planned load with planned loads (without one the entry keeps no load and ranks as an old
    entry); the measured load (`measured_load`) is only reported beside it.
    It also keeps the run's `fabric` (capacity.fabric_signature): a check takes a fabric's own runs
    first."""
    if packets is None:
        packets = sum(stats["tm"]["totals"].get("enqueued", 0) for stats in tm_stats.values() if "tm" in stats)
    total_cpu = busy_cpu = sum(switch_cpu_s.values())
    idle_per_switch = None
    unmeasured = None
    if idle_rates and window_s:
        idle_cpu = sum(idle_rates.values()) * window_s
        busy_cpu -= idle_cpu
        idle_per_switch = sum(idle_rates.values()) / (switches or len(idle_rates))
        if busy_cpu < (1 - MAX_IDLE_SHARE) * total_cpu:
            unmeasured = (f"the idle rate over the traffic window ({idle_cpu:.2f} CPU-s) leaves less than "
                          f"{1 - MAX_IDLE_SHARE:.0%} of the switches' {total_cpu:.2f} CPU-s to their packets")
    if packets <= MIN_SAMPLE:
        unmeasured = unmeasured or f"{packets} switch packets are too few to measure a cost per packet"
    if not switch_cpu_s:
        unmeasured = "no switch process's CPU time could be read"
    elif total_cpu <= 0:
        unmeasured = "the switch processes show no CPU time over the traffic (not the processes that forwarded)"
    switch_us = None if unmeasured else busy_cpu * 1e6 / packets
    lags = [(s.get("tm", {}).get("fidelity", {}).get("dequeue", {}).get("p99_lag_us") or 0)
            for s in tm_stats.values()]
    agent_cpu = agent_total = datagrams = 0.0
    agent_processes = 0
    spans = []
    for path in records.glob("*.stats.json"):
        try:
            stats = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        datagrams += (stats.get("tx_datagrams") or 0) + (stats.get("rx_datagrams") or 0)
        spans.append(traffic_span(stats.get("series") or {}))
        if stats.get("host", path.name.split(".")[0]) not in not_judged:
            lags.append((stats.get("pacer_lateness") or {}).get("p99_us") or 0)
        if stats.get("agent_process") is not None:
            continue  # a group's member: its CPU is its process's, counted once below
        agent_processes += 1
        # an agent's quiet wake-ups over its loop (the capacity check adds them as idle demand)
        times = (stats.get("series") or {}).get("t_s") or [0.0]
        quiet = capacity.DEFAULT_IDLE_CPU_PER_AGENT * (times[-1] - times[0])
        agent_total += stats.get("cpu_s") or 0.0
        agent_cpu += max(0.0, (stats.get("cpu_s") or 0.0) - quiet)
    for path in records.glob("*.process.json"):
        # a group of agents in one process (`testbed hosts`): its CPU once, and one process's quiet
        # wake-ups over its loop's span, not one per member
        try:
            process = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        span = process.get("t_s") or [0.0, 0.0]
        quiet = capacity.DEFAULT_IDLE_CPU_PER_AGENT * (span[-1] - span[0])
        agent_processes += 1
        agent_total += process.get("cpu_s") or 0.0
        agent_cpu += max(0.0, (process.get("cpu_s") or 0.0) - quiet)
    agent_unmeasured = None
    if datagrams <= MIN_SAMPLE:
        agent_unmeasured = f"{int(datagrams)} agent datagrams are too few to measure a cost per datagram"
    elif agent_cpu < (1 - MAX_IDLE_SHARE) * agent_total:
        # a loop stretched long (--fit) with few datagrams: its quiet wake-ups are most of its CPU
        agent_unmeasured = (f"the agents' quiet wake-ups leave less than {1 - MAX_IDLE_SHARE:.0%} of their "
                            f"{agent_total:.2f} CPU-s to their datagrams")
    agent_us = None if agent_unmeasured else agent_cpu * 1e6 / datagrams
    kept_time = max(lags, default=0) <= threshold_us
    load = measured_load(packets, window_s, len(switch_cpu_s), datagrams, spans, agent_processes)
    if (switch_us or agent_us) and kept_time and calibrate:
        capacity.save_costs(switch_us, agent_us, f"{source}, {time.strftime('%Y-%m-%d %H:%M')}", mode,
                            idle_per_switch, switch_packets=packets, agent_datagrams=int(datagrams),
                            load=planned, fabric=fabric)
    return {"switch_us_per_packet": switch_us and round(switch_us, 1), "switch_cost_unmeasured": unmeasured,
            "agent_us_per_datagram": agent_us and round(agent_us, 1), "agent_cost_unmeasured": agent_unmeasured,
            "switch_packets": packets, "agent_datagrams": int(datagrams), "calibrates": kept_time and calibrate,
            "switch_mode": mode,
            "switch_idle_cpu_per_switch": idle_per_switch if idle_per_switch is None else round(idle_per_switch, 5),
            "switch_window_s": window_s if window_s is None else round(window_s, 3),
            "switch_packets_per_s_per_process": load.switch_packets_per_s_per_process and round(
                load.switch_packets_per_s_per_process, 1),
            "agent_datagrams_per_s_per_process": load.agent_datagrams_per_s_per_process and round(
                load.agent_datagrams_per_s_per_process, 1),
            "planned_switch_packets_per_s_per_process": planned and planned.switch_packets_per_s_per_process
            and round(planned.switch_packets_per_s_per_process, 1),
            "planned_agent_datagrams_per_s_per_process": planned and planned.agent_datagrams_per_s_per_process
            and round(planned.agent_datagrams_per_s_per_process, 1)}


def traffic_span(series: dict) -> tuple[float, float] | None:
    """(start, end) in seconds since the run's epoch of an agent's traffic: from the last sample
    before its NIC's first byte either way to the first sample at its final count; None without
    traffic in its series."""
    times = series.get("t_s") or []
    moved = [(tx or 0) + (rx or 0) for tx, rx in zip(series.get("tx_bytes") or [], series.get("rx_bytes") or [])]
    if not moved or moved[-1] <= 0 or len(moved) != len(times):
        return None
    first = next(i for i, n in enumerate(moved) if n > 0)
    last = next(i for i, n in enumerate(moved) if n == moved[-1])
    return times[max(0, first - 1)], times[last]


def measured_load(packets: int, window_s: float | None, switch_processes: int, datagrams: float,
                  spans: list, agent_processes: int) -> capacity.Load:
    """The run's load as the calibration keeps it (capacity.Load): switch packets per second per
    switch process over the switches' traffic window; agent datagrams per second per agent process
    over the agents' traffic span (the first agent's start to the last one's end). A rate that
    cannot be computed (no window, no span, no process) is None."""
    switch = packets / window_s / switch_processes if window_s and switch_processes and packets else None
    known = [s for s in spans if s is not None]
    span = max(e for _, e in known) - min(b for b, _ in known) if known else 0.0
    agent = datagrams / span / agent_processes if span > 0 and agent_processes and datagrams else None
    return capacity.Load(switch, agent)
