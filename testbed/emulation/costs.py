"""What a run cost in CPU: per switch packet and per agent datagram.

The run's `result.json` reports it, and a run that kept real time also feeds
the pre-flight capacity check's calibration (`scenario.capacity`): an
overloaded run spends more per packet and would make the next check refuse
what fits.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from testbed.scenario import capacity

MIN_SAMPLE = 1000  # packets or datagrams below which a per-packet figure says little


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a live process (/proc/PID/stat), None if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def measure_costs(switch_cpu_s: dict[str, float], tm_stats: dict, records: Path, threshold_us: float,
                  source: str, mode: str = "per_switch", packets: int | None = None) -> dict:
    """Switch CPU (since the traffic started) over the packets the traffic managers took (or
    `packets`: bmv2 has no such count, its program's tx counters give it), agent CPU over the
    datagrams they sent and received; saved as calibration if real time was kept."""
    if packets is None:
        packets = sum(stats["tm"]["totals"].get("enqueued", 0) for stats in tm_stats.values() if "tm" in stats)
    switch_us = sum(switch_cpu_s.values()) * 1e6 / packets if packets > MIN_SAMPLE else None
    lags = [(s.get("tm", {}).get("fidelity", {}).get("dequeue", {}).get("p99_lag_us") or 0)
            for s in tm_stats.values()]
    agent_cpu = datagrams = 0.0
    for path in records.glob("*.stats.json"):
        try:
            stats = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        agent_cpu += stats.get("cpu_s") or 0.0
        datagrams += (stats.get("tx_datagrams") or 0) + (stats.get("rx_datagrams") or 0)
        lags.append((stats.get("pacer_lateness") or {}).get("p99_us") or 0)
    agent_us = agent_cpu * 1e6 / datagrams if datagrams > MIN_SAMPLE else None
    kept_time = max(lags, default=0) <= threshold_us
    if (switch_us or agent_us) and kept_time:
        capacity.save_costs(switch_us, agent_us, f"{source}, {time.strftime('%Y-%m-%d %H:%M')}", mode)
    return {"switch_us_per_packet": switch_us and round(switch_us, 1),
            "agent_us_per_datagram": agent_us and round(agent_us, 1),
            "switch_packets": packets, "agent_datagrams": int(datagrams), "calibrates": kept_time,
            "switch_mode": mode}
