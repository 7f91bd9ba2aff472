"""Tables for analysis outside the tool: results.csv and messages.csv beside a run's summary.json.

* results.csv: one row per variant; its columns are every figure of summary.json that is a number, a
  string, a boolean or empty, named by its path with "/" between keys (drops/by_type/DATA/sent), as
  tests/recompute_report.py names them; lists (the missing messages, series) are left to the JSON.
  A figure a variant does not have is an empty cell. The first columns are the verdict table's
  (telemetry.verdict_table), prefixed "verdict/". Like summary.json, every time and rate is on the
  scenario's clock (telemetry.clock); clock/run_time_stretch gives the run's.
* messages.csv: one row per planned message of each variant (agents/workload.json), with its sender's
  record (message_sent: times in us since the run's start, on the scenario's clock: the records'
  over the run's time stretch, telemetry.clock; retransmissions) and its receiver's
  (message_delivered: delivery time, reorder figures, verified) joined on (src, dst, msg_id); a message
  never acknowledged or never delivered has those cells empty. Messages delivered without being
  planned (none in a healthy run) are rows too, with planned = False. run_time_stretch is the run's
  slow-down (1: the run kept the file's clock).

Both load with one call: `pandas.read_csv(path)`.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from testbed.host.records import read_jsonl
from testbed.telemetry.clock import stretch_of
from testbed.telemetry.messages import planned_messages
from testbed.telemetry.verdict_table import verdict

SENT_FIELDS = ("start_us", "first_tx_us", "acked_us", "queueing_us", "completion_us", "fct_us", "retransmissions")
TIME_FIELDS = ("start_us", "first_tx_us", "acked_us", "queueing_us", "completion_us", "fct_us", "first_cell_us",
               "delivered_us")
DELIVERED_FIELDS = ("first_cell_us", "delivered_us", "cells", "cells_out_of_order", "max_ooo_distance_cells",
                    "peak_reorder_buffer_cells", "window_overflows", "duplicate_cells", "ce_cells", "verified")


def flatten(value, prefix: str = "") -> dict:
    """Leaves of nested dicts as {"a/b/c": leaf}, scalars only (lists dropped)."""
    out = {}
    if isinstance(value, dict):
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}/{key}" if prefix else str(key)))
    elif value is None or isinstance(value, (bool, int, float, str)):
        out[prefix] = value
    return out


def result_rows(summaries: dict[str, dict], planned_faults: int | None = None) -> list[dict]:
    rows = []
    for name, summary in summaries.items():
        v = verdict({**summary, "variant": name}, planned_faults)
        v["faults_not_carried_out"] = "; ".join(v["faults_not_carried_out"])
        for place, n in v.pop("data_drops_parts").items():  # a column per place the DATA cells were lost
            v[f"data_drops_{place}"] = n
        row = {"variant": name, **{f"verdict/{k}": x for k, x in v.items() if k != "variant"}}
        row.update({k: x for k, x in flatten(summary).items() if k != "variant"})
        rows.append(row)
    return rows


def message_rows(name: str, run_dir: Path) -> list[dict]:
    records = [r for p in sorted((Path(run_dir) / "records").glob("*.jsonl")) for r in read_jsonl(p)]
    sent = {(r["src"], r["dst"], r["msg_id"]): r for r in records if r["kind"] == "message_sent"}
    delivered = {(r["src"], r["dst"], r["msg_id"]): r for r in records if r["kind"] == "message_delivered"}
    planned = planned_messages(Path(run_dir))
    keys = [(m["src"], m["dst"], m["msg_id"]) for m in planned]
    plan = {(m["src"], m["dst"], m["msg_id"]): m for m in planned}
    keys += sorted(set(delivered) - set(plan))
    stretch = stretch_of(Path(run_dir))
    rows = []
    for key in keys:
        m, s, d = plan.get(key, {}), sent.get(key, {}), delivered.get(key, {})
        row = {"variant": name, "src": key[0], "dst": key[1], "msg_id": key[2], "planned": key in plan,
               "bytes": m.get("size_bytes", d.get("bytes")), "collective": m.get("collective") or s.get("collective"),
               "acknowledged": key in sent, "delivered": key in delivered}
        row.update({f: s.get(f) for f in SENT_FIELDS})
        row.update({f: d.get(f) for f in DELIVERED_FIELDS})
        row.update({f: row[f] / stretch for f in TIME_FIELDS if row.get(f) is not None})
        row["run_time_stretch"] = stretch
        rows.append(row)
    return rows


MESSAGE_COLUMNS = ("variant", "src", "dst", "msg_id", "planned", "bytes", "collective", "acknowledged",
                   "delivered") + SENT_FIELDS + DELIVERED_FIELDS + ("run_time_stretch",)


def _write(path: Path, rows: list[dict], columns: tuple[str, ...] = ("variant",)) -> None:
    columns = list(dict.fromkeys([*columns, *(k for row in rows for k in row)]))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="raise")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in columns})


def write_tables(run_dirs: dict[str, Path], summaries: dict[str, dict], out_dir: Path,
                 planned_faults: int | None = None) -> list[Path]:
    """results.csv and messages.csv in out_dir; returns their paths."""
    results, messages = Path(out_dir) / "results.csv", Path(out_dir) / "messages.csv"
    _write(results, result_rows(summaries, planned_faults))
    _write(messages, [row for name, d in run_dirs.items() for row in message_rows(name, d)], MESSAGE_COLUMNS)
    return [results, messages]
