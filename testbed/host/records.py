"""Per-message records as JSON lines, and their summary per collective.

Every numeric field names its unit (`_us`, `_bytes`, `_cells`, `_bps`).
Senders write `message_sent` (queued, first DATA cell sent, acknowledged,
retransmissions): `fct_us` counts from the moment the message was queued,
so it includes the wait behind earlier messages of the same flow
(`queueing_us`); `completion_us` counts from its first transmission.
receivers write `message_delivered` (delivery time, reorder figures, whether
the bytes matched). `summarize` joins them; it is pure so telemetry and
tests use the same arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.errors import TestbedError


class RecordsError(TestbedError):
    """A records file that cannot be read."""


def sent_record(src: str, dst: str, spec, msg, acked_s: float) -> dict:
    first_tx = msg.start_s if msg.first_tx_s is None else msg.first_tx_s
    return {
        "kind": "message_sent", "src": src, "dst": dst, "msg_id": spec.msg_id,
        "bytes": msg.payload_bytes, "cells": msg.ncells, "start_us": msg.start_s * 1e6,
        "acked_us": acked_s * 1e6, "fct_us": (acked_s - msg.start_s) * 1e6,
        "first_tx_us": first_tx * 1e6, "queueing_us": (first_tx - msg.start_s) * 1e6,
        "completion_us": (acked_s - first_tx) * 1e6,
        "retransmissions": msg.retransmissions, "collective": spec.collective,
        **({"channel": spec.channel} if spec.op else {}),  # the channel that carried it
    }


def delivered_record(dst: str, src: str, d, verified: bool) -> dict:
    r = d.reorder
    return {
        "kind": "message_delivered", "src": src, "dst": dst, "msg_id": d.msg_id,
        "flow_id": d.flow_id, "bytes": len(d.payload), "cells": d.cells,
        "first_cell_us": r.first_cell_s * 1e6, "delivered_us": d.delivered_s * 1e6,
        "cells_out_of_order": r.cells_out_of_order,
        "max_ooo_distance_cells": r.max_ooo_distance_cells,
        "peak_reorder_buffer_cells": r.peak_buffer_cells,
        "window_overflows": r.window_overflows, "duplicate_cells": r.duplicates,
        "ce_cells": r.ce_cells, "verified": verified,
    }


def collective_record(rank_host: str, spec, verified: bool, checked_bytes: int, done_s: float) -> dict:
    """A rank applied every message of a data-carrying collective addressed to it (at done_us)."""
    return {
        "kind": "collective_done", "host": rank_host, "collective": spec.collective, "done_us": done_s * 1e6,
        "op": spec.collective_kind, "algorithm": spec.algorithm, "rank": spec.dst_rank,
        "ranks": spec.ranks, "size_bytes": spec.collective_bytes, "checked_bytes": checked_bytes,
        "verified": verified,
    }


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, sort_keys=True) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise RecordsError(f"{path}:{lineno}: not a JSON record ({e.msg})") from None
    return out


def summarize(specs, records: list[dict]) -> dict:
    """Per collective: completion time (first start to last delivery) and bus bandwidth."""
    sent = {(r["src"], r["dst"], r["msg_id"]): r for r in records if r["kind"] == "message_sent"}
    got = {(r["src"], r["dst"], r["msg_id"]): r for r in records if r["kind"] == "message_delivered"}
    groups: dict[str, list] = {}
    for s in specs:
        if s.collective:
            groups.setdefault(s.collective, []).append(s)
    out = {}
    for name, members in groups.items():
        keys = [(m.src, m.dst, m.msg_id) for m in members]
        done = [k for k in keys if k in got and got[k]["verified"]]
        entry = {"messages": len(keys), "delivered": len(done),
                 "kind": members[0].collective_kind,
                 "retransmissions": sum(sent[k]["retransmissions"] for k in keys if k in sent)}
        starts = [sent[k]["start_us"] for k in keys if k in sent]
        if len(done) == len(keys) and starts:
            t_us = max(got[k]["delivered_us"] for k in keys) - min(starts)
            entry["completion_us"] = t_us
            entry["bytes"] = sum(m.size_bytes for m in members)
            m0 = members[0]
            if m0.collective_bytes and m0.ranks and t_us > 0:
                algbw = m0.collective_bytes * 8 / (t_us / 1e6)
                n = m0.ranks
                factor = {"allreduce": 2 * (n - 1) / n, "alltoall": (n - 1) / n, "all_reduce": 2 * (n - 1) / n,
                          "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
                          "all_to_all": (n - 1) / n}.get(m0.collective_kind, 1.0)
                entry["algbw_bps"] = algbw
                entry["busbw_bps"] = algbw * factor
        out[name] = entry
    return out
