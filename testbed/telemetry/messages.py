"""Message figures: planned against completed, completion and queueing times, percentiles.

Completion time counts from a message's first transmission (the sender's
first DATA cell of it) to its last acknowledgement; the wait before that
first cell (behind earlier messages of the same flow, or for credits) is
`queueing`, its own figure.  Percentiles are nearest-rank (the smallest
sample with at least q% of the samples at or below it) and always travel
with their sample count: with 16 samples, p99 is the maximum.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from testbed.host.records import read_jsonl

PERCENTILE_CONVENTION = "nearest-rank"


def nearest_rank(values: list[float], q: float) -> float | None:
    """The ceil(q/100 * n)-th smallest value (1-based), None without samples."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def planned_messages(run_dir: Path) -> list[dict]:
    """The workload every agent was given (agents/workload.json), [] when absent."""
    path = run_dir / "agents" / "workload.json"
    if not path.exists():
        return []
    return json.loads(path.read_text())["messages"]


def host_records(run_dir: Path) -> list[dict]:
    """Every record the hosts wrote (records/*.jsonl), file by file in name order."""
    out = []
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        out += read_jsonl(path)
    return out


def message_figures(planned: list[dict], sent: list[dict], delivered: list[dict]) -> dict:
    """Counts and timing figures of one variant (every time in ms)."""
    verified = {(r["src"], r["dst"], r["msg_id"]) for r in delivered if r["verified"]}
    acked = {(r["src"], r["dst"], r["msg_id"]) for r in sent}
    plan = {(m["src"], m["dst"], m["msg_id"]) for m in planned}
    completed = plan & verified & acked if plan else verified & acked
    completion = [r["completion_us"] / 1000 for r in sent if "completion_us" in r]
    queueing = [r["queueing_us"] / 1000 for r in sent if "queueing_us" in r]
    return {
        "messages_planned": len(plan),
        "messages_delivered_verified": len(verified),
        "messages_acknowledged": len(acked),
        "messages_completed": len(completed),  # planned, delivered with the right bytes, and acknowledged
        "messages_missing": sorted(f"{s}->{d}#{m}" for s, d, m in plan - completed),
        "completion_samples": len(completion),
        "completion_p50_ms": nearest_rank(completion, 50),
        "completion_p99_ms": nearest_rank(completion, 99),
        "completion_max_ms": max(completion, default=None),
        "queueing_p50_ms": nearest_rank(queueing, 50),
        "queueing_max_ms": max(queueing, default=None),
        "percentile_convention": PERCENTILE_CONVENTION,
    }
