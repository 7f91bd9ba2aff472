"""A pipeline-parallel job's timeline (host/pipeline.py) from its planned messages and records.

A stage's passes are timed by the messages that carry them: each message's compute
(MessageSpec.compute_chain, then compute_after / compute_us) is a list of parts (collectives, us).
F(h, c), when collective c finished at rank h, is the latest of: its `collective_done` at h, the
delivery at h of any message of it, and the start of any message of it from h (the runner's rule,
host/app.py). R(h, c), when the other ranks were ready, is the latest first send of c by a rank
other than h (none: no one). Walking h's parts in the order they ran (each message's parts end at
the time its fold gives; ties: the embedding all-reduce after the pass before it), with `at` the
end of the part before (the job start at first): the part starts at G = max(at, F of its
collectives); of the idle G - at, wait = max(0, min(G, R) - at) is spent until the sender of its
input (or the other rank of the all-reduce) was ready, a slower stage's compute: the pipeline's
bubble; exposed = max(0, G - max(at, R)) is the transfer. Then it computes for its us. An iteration
at h ends when its last collective finished at h (F), the idle before that split the same way, so
compute + wait + exposed is the iteration's span at h. The structure is telemetry/training.py's
job timelines, so the job's figures are computed as for the other jobs.
"""

from __future__ import annotations

import math

from testbed.host.pipeline import parse_name


def _parts(m: dict) -> list[tuple[tuple[str, ...], float]]:
    chain = [(tuple(names), float(us)) for names, us in m.get("compute_chain", ())]
    return chain + [(tuple(m.get("compute_after", ())), float(m.get("compute_us", 0.0)))]


def pipeline_timelines(planned: list[dict], records: list[dict]) -> dict[str, dict]:
    """Per pipeline job: ranks, iterations, start, finished iterations, ends and per-rank rows."""
    jobs: dict[str, dict] = {}
    collective_of: dict[tuple[str, str, int], str] = {}
    # the transfers first, so each job's ranks are listed replica by replica, stage by stage
    for m in sorted(planned, key=lambda m: ".e." in (m.get("collective") or "")):
        parsed = parse_name(m.get("collective") or "")
        if parsed is None:
            continue
        name, k = parsed
        collective_of[(m["src"], m["dst"], m["msg_id"])] = m["collective"]
        job = jobs.setdefault(name, {"ranks": [], "iterations": 0, "start_us": math.inf, "ops": {}})
        for h in (m["src"], m["dst"]):
            if h not in job["ranks"]:
                job["ranks"].append(h)
        job["iterations"] = max(job["iterations"], k + 1)
        job["start_us"] = min(job["start_us"], m["start_us"])
        job["ops"].setdefault((m["src"], m["collective"]), (k, m["start_us"], _parts(m)))
    finished_at: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], float] = {}
    for r in records:
        if r["kind"] == "collective_done":
            key, t = (r["host"], r.get("collective") or ""), r["done_us"]
        elif r["kind"] == "message_delivered":
            key, t = (r["dst"], collective_of.get((r["src"], r["dst"], r["msg_id"]), "")), r["delivered_us"]
        elif r["kind"] == "message_sent":
            key, t = (r["src"], r.get("collective") or ""), r["start_us"]
            first[key] = min(first.get(key, math.inf), t)
        else:
            continue
        if parse_name(key[1]) is not None:
            finished_at[key] = max(finished_at.get(key, -math.inf), t)
    senders: dict[str, set] = {}
    for h, c in first:
        senders.setdefault(c, set()).add(h)

    def ready(h: str, names: tuple[str, ...]) -> float:
        return max([first[(q, c)] for c in names for q in senders.get(c, ()) if q != h], default=-math.inf)

    for job in jobs.values():
        _walk(job, finished_at, ready)
    return jobs


def _walk(job: dict, finished_at: dict, ready) -> None:
    ranks = job["ranks"]
    mine: dict[str, list] = {h: [] for h in ranks}
    for (h, c), op in job["ops"].items():
        mine[h].append((c, *op))
    rows: dict[str, list[dict]] = {h: [] for h in ranks}
    ends: dict[tuple[str, int], float] = {}
    for h in ranks:
        timed = []
        for c, k, start, parts in mine[h]:
            at = start
            try:
                for names, us in parts:
                    at = max([at] + [finished_at[(h, n)] for n in names]) + us
                finished_at[(h, c)]  # noqa: B018 -- and its own collective finished here
            except KeyError:  # a collective it waits for never finished here: the run stopped first
                continue
            timed.append((at, ".e." in c, k, c, parts))
        timed.sort()
        at = job["start_us"]
        current: dict | None = None
        for i, (_end, _embed, k, c, parts) in enumerate(timed):
            if current is None or current["iteration"] != k:
                current = {"iteration": k, "start_us": at, "compute_us": 0.0, "wait_us": 0.0, "exposed_us": 0.0,
                           "spans": [], "comm": []}
                rows[h].append(current)
            for names, us in parts:
                at = _idle(current, at, max([at] + [finished_at[(h, n)] for n in names]), ready(h, names))
                current["spans"].append(("compute", at, at + us))
                current["compute_us"] += us
                at += us
            current["comm"].append((at, finished_at[(h, c)]))
            last_of_iteration = i + 1 == len(timed) or timed[i + 1][2] != k
            if last_of_iteration:
                at = _idle(current, at, max(at, finished_at[(h, c)]), ready(h, (c,)))
                current["end_us"] = current["compute_end_us"] = at
                ends[(h, k)] = at
    finished = 0
    while finished < job["iterations"] and all(
            (h, finished) in ends and len(rows[h]) > finished and rows[h][finished]["iteration"] == finished
            for h in ranks):
        finished += 1
    job["finished"] = finished
    job["end"] = {key: t for key, t in ends.items() if key[1] < finished}
    job["timeline"] = {h: rows[h][:finished] for h in ranks}
    del job["ops"]


def _idle(row: dict, at: float, until: float, others: float) -> float:
    """Book the idle from `at` to `until` as wait (until `others`, the senders' ready time) and
    exposed (the rest); returns `until`."""
    wait = max(0.0, min(until, others) - at)
    exposed = max(0.0, until - max(at, others))
    row["wait_us"] += wait
    row["exposed_us"] += exposed
    row["spans"] += [("wait", at, at + wait), ("exposed", until - exposed, until)]
    return until
