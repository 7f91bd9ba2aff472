"""Every figure of the claims report, from an experiment's directory alone.

A simulator experiment's directory holds records.jsonl and counters.json
(experiments.py); an emulated one is a `testbed run` variant directory, read
with simexp.from_run. The definitions are simexp's, so the simulator, the
emulation and the integration tests measure the same thing (DEFINITIONS, which
the report prints).
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.claims.experiments import transport_label
from testbed.host import records as host_records
from testbed.cells import segment
from testbed.simulation import simexp
from testbed.telemetry.rundir import RunDirError, load_json, load_yaml


def load(directory: Path) -> tuple[dict, list[dict]]:
    """An experiment's counters and records; a missing or damaged file is one line (telemetry.rundir)."""
    counters = load_json(directory / "counters.json")
    records = directory / "records.jsonl"
    if not records.is_file():
        raise RunDirError(f"{records}: missing")
    return counters, host_records.read_jsonl(records)


DEFINITIONS = (
    "goodput over payload rate (incast): verified payload delivered to the receiver, first DATA cell received "
    "to last delivery, over the receiver link's payload rate (link rate x cell payload / DATA frame bytes)",
    "efficiency (permutation, all-to-all): verified payload of all messages over the time from the first start "
    "to the last delivery, over every host's link payload rate together (the bound of a non-blocking fabric); "
    "its bound is the same ratio with every host sending its own cells back to back at its link rate and the "
    "last cell one base RTT later (the fluid ideal)",
    "FCT: a message posted to its last ACK, ms, nearest rank: what the application waits, a credit "
    "transport's wait for its first credit and a rate pacer's backlog included; the latency claims compare it",
    "completion: a message's first DATA cell sent to its last ACK, ms, nearest rank (the network's share of "
    "the FCT)",
    "DATA loss fraction (load sweep): DATA cells dropped at switch queues over DATA cells the hosts sent "
    "(retransmissions included)",
)

SPREAD_KEYS = ("goodput_over_payload_rate", "jain", "last_over_ideal", "fct_p50_ms", "fct_p99_ms")


def of_experiment(directory: Path) -> dict:
    """The figures of one simulator experiment (see the module docstring); an experiment run with
    more seeds (seeds/seedS/) adds seed_spread: each SPREAD_KEYS figure's [lowest, highest] over
    every seed, the first included."""
    out = _of_one(directory)
    again = sorted((directory / "seeds").glob("seed*/counters.json"))
    if again:
        rows = [out] + [_of_one(p.parent) for p in again]
        out["seeds"] = [r["seed"] for r in rows]
        out["seed_spread"] = {k: [min(r[k] for r in rows), max(r[k] for r in rows)] for k in SPREAD_KEYS}
    return out


def _of_one(directory: Path) -> dict:
    c, recs = load(directory)
    sent = [r for r in recs if r["kind"] == "message_sent"]
    got = [r for r in recs if r["kind"] == "message_delivered"]
    out = {key: c[key] for key in ("name", "kind", "cc", "label", "pfc", "params", "hosts", "messages",
                                   "finished", "data_drops", "credit_drops", "pause_frames",
                                   "peak_queue_cells", "bdp_cells", "retransmissions", "data_cells_sent")}
    out["timeouts"], out["nacks_received"] = c.get("timeouts"), c.get("nacks_received")
    out["overcommit"] = c.get("overcommit", 1)  # srpt's degree (experiments.OVERCOMMIT_SENDERS' sweep)
    out["seed"] = c.get("seed")  # a scenario-built incast's; None where the experiment has no seed axis
    out["delivered_verified"] = sum(1 for r in got if r["verified"])
    out["base_rtt_ms"] = round(c["base_rtt_s"] * 1e3, 3)
    kind = c["kind"]
    if kind == "incast":
        mine = [r for r in got if r["dst"] == c["receiver"]]
        out.update(simexp.goodput_figures(c["message_bytes"], mine, [s / 1e6 for s in c["starts_us"]],
                                          c["link_rate_bps"], c["base_rtt_s"], c["cell_size"], c["data_wire_bytes"]))
        out.update(simexp.completion_figures(sent, c["base_rtt_s"]))
    elif kind == "mixed":
        short = [r for r in sent if r["src"] in c["short_senders"]]
        long_ = [r for r in sent if r["src"] in c["long_senders"]]
        out.update({f"short_{k}": v for k, v in simexp.completion_figures(short, c["base_rtt_s"]).items()})
        out.update({f"long_{k}": v for k, v in simexp.completion_figures(long_, c["base_rtt_s"]).items()
                    if k != "base_rtt_ms"})
    elif kind == "load":
        out["offered_load"] = c["offered_load"]
        out["loss_fraction"] = round(c["data_drops"] / c["data_cells_sent"], 5) if c["data_cells_sent"] else None
        if sent:
            out.update(simexp.completion_figures(sent, c["base_rtt_s"]))
    else:  # permutation, alltoall
        out["tiers"] = c["params"]["tiers"]
        out.update(_efficiency(c, got))
        if sent:
            out.update(simexp.completion_figures(sent, c["base_rtt_s"]))
    return out


def _efficiency(c: dict, got: list[dict]) -> dict:
    """Efficiency, and its bound: the same ratio if every host sent its own cells back to back at
    its link rate from the first start and the last cell took one base RTT more."""
    ok = [r for r in got if r["verified"]]
    if not ok:
        return {"efficiency": None, "efficiency_bound": None}
    start = min(c["starts_us"]) / 1e6
    span = max(r["delivered_us"] for r in ok) / 1e6 - start
    payload_rate = c["link_rate_bps"] * c["cell_size"] / c["data_wire_bytes"]
    payload = sum(r["bytes"] for r in ok)
    frames: dict[str, int] = {}
    for size, src in zip(c["message_bytes"], c["sources"]):
        frames[src] = frames.get(src, 0) + segment.cell_count(size + segment.TRAILER_LEN, c["cell_size"])
    ideal_span = max(frames.values()) * c["data_wire_bytes"] * 8 / c["link_rate_bps"] + c["base_rtt_s"]
    scale = 8 / (c["hosts"] * payload_rate)
    return {"payload_bytes": payload, "span_s": round(span, 4),
            "efficiency": round(payload * scale / span, 4),
            "efficiency_bound": round(sum(c["message_bytes"]) * scale / ideal_span, 4)}


def highest_zero_loss_load(rows: list[dict]) -> float | None:
    """The highest offered load up to which every load of the sweep finished and lost no DATA
    cell; None when even the sweep's lowest load lost."""
    best = None
    for row in sorted(rows, key=lambda r: r["offered_load"]):
        if row["data_drops"] or not row["finished"]:
            break
        best = row["offered_load"]
    return best


SPREAD_KINDS = {"permutation": "permutation", "all_to_all": "alltoall"}  # scenario phase -> experiment kind


def of_emulated(variant_dir: Path) -> dict:
    """The figures of an emulated variant (_of_emulated_run: the run's clock) on the scenario's clock
    (telemetry.clock): a run slowed by --fit has its times (keys ending _ms, _s) over its
    time_stretch and its rates (_mbps) times it, rounded as the simulator's rows are; ratios
    (over ideal, over payload rate, in base RTTs, Jain, efficiency) stay. `time_stretch` and
    `run_link_rate_mbps` (the host link rate it ran at) say the run's clock (emulated_at)."""
    row = _of_emulated_run(variant_dir)
    k = float(load_yaml(variant_dir / "scenario.resolved.yaml").get("time_stretch") or 1.0)
    out = dict(row)
    for key, value in row.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if key.endswith("_ms"):
            out[key] = round(value / k, 3 if key.endswith("base_rtt_ms") else 1)
        elif key.endswith("_s") and key != "wall_s":
            out[key] = round(value / k, 4)
        elif key.endswith("_mbps"):
            out[key] = round(value * k, 4)
    out["time_stretch"] = k
    out["run_link_rate_mbps"] = row.get("link_rate_mbps")
    return out


def emulated_at(row: dict) -> str:
    """How an emulated row ran: 'emulated at R Mbit/s', and for a slowed run its slow-down and the
    rate it ran at (its figures are on the scenario's clock: of_emulated)."""
    k = row.get("time_stretch") or 1.0
    if abs(k - 1.0) < 1e-9:
        return f"emulated at {row['link_rate_mbps']:.3g} Mbit/s"
    return (f"emulated x{k:.3g} slower (at {row['run_link_rate_mbps']:.3g} Mbit/s; its figures on the "
            f"scenario's clock, {row['link_rate_mbps']:.3g} Mbit/s)")


def _of_emulated_run(variant_dir: Path) -> dict:
    """The figures of an emulated variant on the run's clock: simexp's incast figures, or a
    permutation's efficiency as the simulator's is defined; with its cc, BDP, retransmissions and fidelity."""
    from testbed.host import records as host_records
    from testbed.cells import wire

    resolved = load_yaml(variant_dir / "scenario.resolved.yaml")
    kinds = {phase["kind"] for phase in resolved["workload"]} - {"pingall"}
    retransmitted = sum(load_json(p).get("retransmissions") or 0
                        for p in (variant_dir / "records").glob("*.stats.json"))
    pfc = bool((resolved["fabric"].get("pfc") or {}).get("enabled"))
    summary = simexp.variant_summary(variant_dir)
    cc, tita = resolved["transport"]["cc"], resolved["transport"].get("tita") or {}
    order, overcommit = (tita.get("credit_order", "fair"), tita.get("overcommit", 1)) if cc == "tita" else ("fair", 1)
    common = {"cc": cc, "pfc": pfc, "overcommit": overcommit,
              "label": transport_label(cc, pfc, order, overcommit),
              "bdp_cells": resolved["derived"]["bdp_cells"], "retransmissions": retransmitted,
              "pause_frames": (summary.get("pfc") or {}).get("switch_xoff_sent", 0)
              + (summary.get("pfc") or {}).get("switch_xon_sent", 0) if pfc else None}
    if kinds == {"incast", "stream"}:
        return {**_emulated_mixed(variant_dir, resolved, summary), **common}
    if kinds == {"poisson"}:
        return {**_emulated_load(variant_dir, resolved, summary), **common}
    spread = SPREAD_KINDS.get(next(iter(kinds))) if len(kinds) == 1 else None
    if spread is None:
        return {"kind": "incast", **simexp.from_run(variant_dir, summary), **common}
    recs = [r for f in sorted((variant_dir / "records").glob("*.jsonl")) for r in host_records.read_jsonl(f)]
    sent = [r for r in recs if r["kind"] == "message_sent"]
    got = [r for r in recs if r["kind"] == "message_delivered"]
    cell = resolved["fabric"]["cell_size"]
    c = {"link_rate_bps": resolved["links"]["host"]["rate_mbps"] * 1e6, "cell_size": cell,
         "data_wire_bytes": wire.wire_bytes(cell, wire.DATA), "base_rtt_s": resolved["derived"]["base_rtt_us"] / 1e6,
         "hosts": len({r["src"] for r in sent}), "message_bytes": [r["bytes"] for r in sent],
         "sources": [r["src"] for r in sent], "starts_us": [r["start_us"] for r in sent]}
    out = {"kind": spread, "variant": variant_dir.name,
           "tiers": 3 if resolved["topology"]["kind"] == "fat_tree" else 2, **common,
           "link_rate_mbps": c["link_rate_bps"] / 1e6, "messages": len(sent),
           "delivered_verified": sum(1 for r in got if r["verified"]),
           "data_drops": summary.get("drops", {}).get("switch_queue_drops_by_type", {}).get("DATA", 0),
           "behind_real_time": summary.get("fidelity", {}).get("behind_real_time")}
    out.update(_efficiency(c, got))
    out.update(simexp.completion_figures(sent, c["base_rtt_s"]))
    return out


def _sent(variant_dir: Path) -> list[dict]:
    from testbed.host import records as host_records

    return [r for f in sorted((variant_dir / "records").glob("*.jsonl")) for r in host_records.read_jsonl(f)
            if r["kind"] == "message_sent"]


def _run_figures(variant_dir: Path, resolved: dict, summary: dict) -> dict:
    """What every emulated row says about its run: rate, drops, completion, fidelity."""
    data = summary.get("drops", {}).get("by_type", {}).get("DATA", {})
    return {"variant": variant_dir.name, "link_rate_mbps": resolved["links"]["host"]["rate_mbps"],
            "data_drops": summary.get("drops", {}).get("switch_queue_drops_by_type", {}).get("DATA", 0),
            "data_cells_sent": data.get("sent"),
            "finished": summary.get("messages_completed") == summary.get("messages_planned"),
            "behind_real_time": summary.get("fidelity", {}).get("behind_real_time")}


def _emulated_load(variant_dir: Path, resolved: dict, summary: dict) -> dict:
    """An emulated offered-load point: the simulator's load row's figures."""
    (phase,) = [p for p in resolved["workload"] if p["kind"] == "poisson"]
    out = {"kind": "load", "offered_load": phase["load"], **_run_figures(variant_dir, resolved, summary)}
    out["loss_fraction"] = round(out["data_drops"] / out["data_cells_sent"], 5) if out["data_cells_sent"] else None
    sent = _sent(variant_dir)
    if sent:
        out.update(simexp.completion_figures(sent, resolved["derived"]["base_rtt_us"] / 1e6))
    return out


def _emulated_mixed(variant_dir: Path, resolved: dict, summary: dict) -> dict:
    """Short messages among long flows, emulated: the simulator's mixed row's figures."""
    (stream,) = [p for p in resolved["workload"] if p["kind"] == "stream"]
    rtt = resolved["derived"]["base_rtt_us"] / 1e6
    sent = _sent(variant_dir)
    short = [r for r in sent if r["src"] in stream["senders"]]
    long_ = [r for r in sent if r["src"] not in stream["senders"]]
    out = {"kind": "mixed", **_run_figures(variant_dir, resolved, summary)}
    if short and long_:
        out.update({f"short_{k}": v for k, v in simexp.completion_figures(short, rtt).items()})
        out.update({f"long_{k}": v for k, v in simexp.completion_figures(long_, rtt).items() if k != "base_rtt_ms"})
    return out


def emulated_of(directory: Path) -> list[dict]:
    """The figures of every emulated variant under directory/emulated/SCENARIO/, each with the
    scenario's name, which run of it it is and how many runs it had (run K of NAME is in NAME-runK/)."""
    root = directory / "emulated"
    if not root.is_dir():
        return []
    rows = []
    for s in sorted(root.iterdir()):
        if not s.is_dir():
            continue
        scenario, run = scenario_run(s.name)
        rows += [{**of_emulated(v), "scenario": scenario, "run": run} for v in sorted(s.iterdir())
                 if (v / "scenario.resolved.yaml").exists()]
    runs: dict[str, int] = {}
    for r in rows:
        runs[r["scenario"]] = max(runs.get(r["scenario"], 0), r["run"])
    for r in rows:
        r["runs"] = runs[r["scenario"]]
    return rows


def scenario_run(name: str) -> tuple[str, int]:
    """An emulated scenario directory's name -> (the scenario, which run): NAME-runK is run K."""
    base, sep, k = name.rpartition("-run")
    return (base, int(k)) if sep and k.isdigit() and int(k) > 1 else (name, 1)


def all_of(directory: Path) -> list[dict]:
    """The figures of every simulator experiment under directory/sim/, by name; an experiment with one
    of its two files (counters.json, records.jsonl) and not the other is one line (load)."""
    return [of_experiment(d) for d in sorted((directory / "sim").iterdir())
            if (d / "counters.json").exists() or (d / "records.jsonl").exists()]
