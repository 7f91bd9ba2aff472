"""A training job's iterations against its healthy twin's: which stalled, by how much, and why.

Model: run and twin (core.py's: the scenario without its faults) run the same job, the same
messages and compute times (drawn from the scenario's seed), so a healthy job's iteration takes on
the run what it takes on the twin. Both are read as the report reads a job
(`telemetry.training.all_timelines`), the twin from its agents' records.

* **Iteration time** T(k): when the job's last rank finished iteration k minus when it finished
  k - 1 (the job's start for k = 0). **Stalled**: T_run(k) > (1 + STALL_SHARE) T_twin(k), or the
  run never finished k (every rank) while the twin did: then from its start to the run's end.
* **Compute as it ran**: a message that waited for compute says how long that compute ran
  (`compute_ran_us` in `message_sent`, host/app.py: times a slow GPU's factor). A rank's compute
  in iteration k: per set of collectives it waits for (`compute_after`; a data-parallel job's
  buckets share one, an MoE job's steps have one each) the longest compute after it, summed.
* **Cause**: a stalled iteration in which a rank computed longer than its twin by more than
  COMPUTE_SHARE is a straggler GPU (compute, which no fabric counter sees; the largest excess is
  named). Otherwise the network: the first fabric culprit (core.py's, in rank) whose window meets
  the iteration's, or none.
* **A slow path** (`queue_culprit`): over the network stalls' bins, the switch egress whose queue
  stood above the twin's by the most, summed, is `link CABLE slow` when that sum reaches
  QUEUE_EXCESS x MIN_BINS cells, from its first bin JOB_QUEUE_CELLS above; first as `leads` says.
  One slow cable slows a job all over about as much as its iterations: no series lags by
  LAG_SHARE, the stall says when.
* **The ring's slow sender** (`sender_lag`): among the fabric's first culprits (beginning within
  TOGETHER_S of the first) the host whose own messages in the stalled iterations took longest
  beyond the twin's (queued to acknowledged, summed) ranks first: a ring's ranks send on what
  their neighbour sent, so a slow host's neighbours fall as quiet as it does, but only its
  messages take long.
* **Culprit**: a rank that computed longer than its twin by more than COMPUTE_SHARE in any
  iteration, stalled or not (a job bound by its network may hide it), is `gpu HOST slow`, from
  its first such compute's start (`slowed_from`) to the end of its last such iteration, score its largest excess share (capped at 1). It ranks before
  the fabric's culprits unless one began more than TOGETHER_S before it: the NICs and cables of
  the ranks that wait for a late GPU fall quiet after it, never before.
"""

from __future__ import annotations

import math

from testbed.diagnose.culprit import BIN_S, MIN_BINS, QUEUE_EXCESS, TOGETHER_S, Culprit
from testbed.host import pipeline, training
from testbed.telemetry.training import all_timelines

JOB_QUEUE_CELLS = 4.0  # a bin's queue this far above the twin's starts a slow path's window (QUEUE_EXCESS / 2)
STALL_SHARE = 0.10  # an iteration this much longer than its twin's stalled (the healthy job's match exactly)
COMPUTE_SHARE = 0.25  # a rank's compute this much longer than its twin's is a straggler GPU


def iteration_of(collective: str) -> tuple[str, int] | None:
    """(job, iteration) of a training job's collective name (bucket, all-to-all step or pipeline
    transfer); None for any other."""
    for parse in (training.parse_name, training.parse_step, pipeline.parse_name):
        parsed = parse(collective or "")
        if parsed is not None:
            return parsed[0], parsed[1]
    return None


def compute_ran(planned: list[dict], records: list[dict]) -> dict[tuple[str, str, int], tuple[float, float]]:
    """(job, rank, iteration) -> (compute as planned, compute as it ran), microseconds (module
    docstring): per gate (`compute_after`), the longest compute after it, summed over the gates."""
    plan = {(m["src"], m["dst"], m["msg_id"]): m for m in planned if "compute_us" in m}
    per_gate: dict[tuple, list[float]] = {}
    for r in records:
        if r.get("kind") != "message_sent":
            continue
        m = plan.get((r["src"], r["dst"], r["msg_id"]))
        where = iteration_of(m.get("collective") or "") if m is not None else None
        if where is None:
            continue
        chain = sum(us for _names, us in m.get("compute_chain") or ())
        key = (where[0], r["src"], where[1], tuple(m.get("compute_after") or ()))
        ran = float(r.get("compute_ran_us", m["compute_us"] + chain))
        best = per_gate.setdefault(key, [0.0, 0.0])
        best[0], best[1] = max(best[0], m["compute_us"] + chain), max(best[1], ran)
    out: dict[tuple[str, str, int], tuple[float, float]] = {}
    for (job, rank, k, _gate), (want, ran) in per_gate.items():
        was = out.get((job, rank, k), (0.0, 0.0))
        out[(job, rank, k)] = (was[0] + want, was[1] + ran)
    return out


def slowed_from(planned: list[dict], records: list[dict]) -> dict[tuple[str, str, int], float]:
    """(job, rank, iteration) -> when the first of its computes that ran longer than planned (by more
    than COMPUTE_SHARE) began (us): when the collectives it waited for had finished at the rank (their
    `collective_done` there), its message's planned start without any."""
    plan = {(m["src"], m["dst"], m["msg_id"]): m for m in planned if "compute_us" in m}
    done: dict[tuple[str, str], float] = {}
    for r in records:
        if r.get("kind") == "collective_done":
            done[(r["host"], r["collective"])] = max(done.get((r["host"], r["collective"]), 0.0), r["done_us"])
    out: dict[tuple[str, str, int], float] = {}
    for r in records:
        m = plan.get((r.get("src"), r.get("dst"), r.get("msg_id"))) if r.get("kind") == "message_sent" else None
        where = iteration_of(m.get("collective") or "") if m is not None else None
        if where is None or "compute_ran_us" not in r:
            continue
        want = m["compute_us"] + sum(us for _names, us in m.get("compute_chain") or ())
        if r["compute_ran_us"] - want <= COMPUTE_SHARE * want:
            continue
        gates = list(m.get("compute_after") or ()) + [n for names, _us in m.get("compute_chain") or () for n in names]
        began = max([m["start_us"]] + [done.get((r["src"], n), m["start_us"]) for n in gates])
        key = (where[0], r["src"], where[1])
        out[key] = min(out.get(key, math.inf), began)
    return out


def iteration_ends(job: dict) -> list[float]:
    """The moment the job's last rank finished each iteration every rank finished (us)."""
    return [max(job["end"][(h, k)] for h in job["ranks"]) for k in range(job["finished"])]


def queue_culprit(run_series: dict, twin_series: dict, spans: list[tuple[float, float]]):
    """The slow path of the network stalls (module docstring): (a Culprit, the largest excess in one
    bin, cells) or None; `spans`: the stalled iterations' (from, to) in seconds on the run's clock."""
    bins = sorted({b for lo, hi in spans for b in range(int(lo / BIN_S), int(math.ceil(hi / BIN_S)))})
    best = None
    for key, tq in twin_series.items():
        q = run_series.get(key)
        if not key.endswith(":queue") or q is None:
            continue
        over = [(b, q[b] - tq[b]) for b in bins if b < len(q) and b < len(tq)]
        total = sum(max(0.0, x) for _b, x in over)
        high = [b for b, x in over if x >= JOB_QUEUE_CELLS]
        if total >= QUEUE_EXCESS * MIN_BINS and high and (best is None or total > best[0]):
            best = (total, key, high, max(x for _b, x in over))
    if best is None:
        return None
    total, key, high, peak = best
    cable, direction = key.split(":")[0], key.split(":")[1]
    return Culprit("link", cable, "slow", high[0] * BIN_S, (high[-1] + 1) * BIN_S, 0.5,
                   evidence=f"the job stalled on the network and {direction}'s switch egress queue peaked above "
                            f"the twin's by {total:.0f} cells over the stalled iterations' bins (the most of any "
                            f"port; {peak:.0f} in one bin), from {high[0] * BIN_S:.1f} s"), peak


def leads(path, peak: float, fabric: list) -> bool:
    """Whether the slow path ranks first (module docstring): no fabric culprit; or it began more
    than TOGETHER_S before all of them; or, as core.py's rule 10 has it for a cable holding a
    queue, its queue stood QUEUE_EXCESS cells above the twin's in a bin, it began no later than
    TOGETHER_S after the first fabric culprit, and that one is a slow link or host that is not a
    NIC pinned at a cut rate (a cut NIC, a silent host or switch and a lost or cut cable are causes,
    their counters exact)."""
    if not fabric or path.start_s < min(c.start_s for c in fabric) - TOGETHER_S:
        return True
    first = fabric[0]
    return (peak >= QUEUE_EXCESS and path.start_s <= first.start_s + TOGETHER_S and first.symptom == "slow"
            and first.kind in ("link", "host") and not first.pinned)


def sender_lag(run: tuple[list[dict], list[dict]], twin: tuple[list[dict], list[dict]],
               stalled: set[tuple[str, int]]) -> dict[str, float]:
    """Per host, how much longer its messages of the stalled (job, iteration)s took than the
    twin's (first cell queued to acknowledged, microseconds summed)."""
    plan = {(m["src"], m["dst"], m["msg_id"]): m.get("collective") or "" for m in run[0]}
    took = {(r["src"], r["dst"], r["msg_id"]): r["fct_us"] for r in twin[1] if r.get("kind") == "message_sent"}
    lag: dict[str, float] = {}
    for r in run[1]:
        if r.get("kind") != "message_sent":
            continue
        key = (r["src"], r["dst"], r["msg_id"])
        if iteration_of(plan.get(key, "")) in stalled and key in took:
            lag[r["src"]] = lag.get(r["src"], 0.0) + max(0.0, r["fct_us"] - took[key])
    return lag


def pick_sender(culprits: list, lag: dict[str, float]) -> list:
    """The fabric's culprits with the host of the largest `lag` first among the hosts that begin
    within TOGETHER_S of the first culprit, when the first is a host (module docstring)."""
    if not culprits or culprits[0].kind != "host":
        return list(culprits)
    together = [c for c in culprits if c.kind == "host" and c.start_s <= culprits[0].start_s + TOGETHER_S]
    slowest = max(together, key=lambda c: lag.get(c.target, 0.0))
    if lag.get(slowest.target, 0.0) <= lag.get(culprits[0].target, 0.0):
        return list(culprits)
    slowest.evidence += (f"; in the stalled iterations its own messages took {lag[slowest.target] / 1e3:.0f} ms "
                         f"longer than the twin's, the most of the hosts named with it")
    return [slowest] + [c for c in culprits if c is not slowest]


def job_view(run: tuple[list[dict], list[dict]], twin: tuple[list[dict], list[dict]], culprits: list,
             run_to_us: float, stretch: float = 1.0, series: tuple[dict, dict] | None = None
             ) -> tuple[list[dict], list, list]:
    """(per job: its stalled iterations with their cause; the straggler GPUs as core.Culprits; the
    fabric's culprits as the job's records rank them, with a slow path no rule named added).

    `run`, `twin`: (planned messages, records) of each; `culprits`: the fabric's, ranked, on the
    run's clock; `run_to_us`: the run's end on its clock; `series`: (run, twin) link series with
    their queues, bins on the run's clock. Times out are on the scenario's clock (over `stretch`),
    in seconds and milliseconds."""
    run_jobs, twin_jobs = all_timelines(*run), all_timelines(*twin)
    run_compute, twin_compute = compute_ran(*run), compute_ran(*twin)
    began = slowed_from(*run)
    views, gpus = [], {}
    network: list[tuple[float, float, dict]] = []  # network stalls: (from, to) on the run's clock (s), row
    stalled_at: set[tuple[str, int]] = set()
    for name, tj in twin_jobs.items():
        rj = run_jobs.get(name)
        if rj is None or not tj["finished"]:
            continue
        t_ends, r_ends = iteration_ends(tj), iteration_ends(rj)
        start = rj["start_us"]
        stalled, slow = [], []
        for k in range(tj["finished"]):
            t_from = tj["start_us"] if k == 0 else t_ends[k - 1]
            twin_t = t_ends[k] - t_from
            r_from = start if k == 0 else (r_ends[k - 1] if k - 1 < len(r_ends) else None)
            if r_from is None:
                break  # the run never began it: its first unfinished iteration is the stall
            finished = k < len(r_ends)
            run_t = (r_ends[k] if finished else run_to_us) - r_from
            excess = []
            for h in tj["ranks"]:
                want = twin_compute.get((name, h, k), (0.0, 0.0))[1]
                ran = run_compute.get((name, h, k))
                if ran is not None and want > 0 and ran[1] - want > COMPUTE_SHARE * want:
                    excess.append(((ran[1] - want) / want, h, ran[1], want))
            for share, h, ran, want in excess:  # a slow GPU, whether or not its iteration stalled
                at = began.get((name, h, k), r_from)
                g = gpus.setdefault(h, {"from": at, "to": at, "share": 0.0, "iterations": [], "job": name})
                g["from"] = min(g["from"], at)
                g["to"] = max(g["to"], r_ends[k] if finished else run_to_us)
                g["share"] = max(g["share"], share)
                g["iterations"].append(k)
                slow.append({"iteration": k, "gpu": h, "ran_ms": round(ran / 1e3 / stretch, 1),
                             "twin_ms": round(want / 1e3 / stretch, 1)})
            if finished and run_t <= twin_t * (1 + STALL_SHARE):
                continue
            row = {"iteration": k, "from_s": round(r_from / 1e6 / stretch, 3),
                   "to_s": round((r_ends[k] if finished else run_to_us) / 1e6 / stretch, 3),
                   "run_ms": round(run_t / 1e3 / stretch, 1) if finished else None,
                   "twin_ms": round(twin_t / 1e3 / stretch, 1),
                   "late_ms": round((run_t - twin_t) / 1e3 / stretch, 1), "finished": finished}
            if excess:
                share, h, ran, want = max(excess)
                row["cause"] = "compute"
                row["gpu"] = h
                row["why"] = (f"GPU {h}'s compute took {ran / 1e3 / stretch:.1f} ms where its twin's took "
                              f"{want / 1e3 / stretch:.1f} ms (+{share:.0%})")
            else:
                row["cause"] = "network"
                lo, hi = r_from / 1e6, (r_ends[k] if finished else run_to_us) / 1e6
                seen = next((c for c in culprits if c.start_s < hi and c.end_s > lo), None)
                row["culprit"] = None if seen is None else f"{seen.kind} {seen.target} {seen.symptom}"
                network.append((lo, hi, row))
                row["why"] = ("no rank computed longer than its twin; " +
                              (f"the fabric's culprit then: {row['culprit']}" if seen is not None
                               else "no fabric rule named a culprit then"))
            stalled.append(row)
            stalled_at.add((name, k))
            if not finished:
                break
        views.append({"job": name, "ranks": len(tj["ranks"]), "iterations_twin": tj["finished"],
                      "iterations_run": rj["finished"], "stalled": stalled, "slow_compute": slow})
    out = []
    for h, g in gpus.items():
        its = ", ".join(str(k) for k in sorted(set(g["iterations"])))
        out.append(Culprit("gpu", h, "slow", g["from"] / 1e6, g["to"] / 1e6, round(min(1.0, g["share"]), 2),
                           evidence=f"job {g['job']}: its compute ran longer than its twin's by up to "
                                    f"{g['share']:.0%} in iteration(s) {its} (the fabric cannot see a GPU)"))
    out.sort(key=lambda c: c.start_s)
    fabric = pick_sender(culprits, sender_lag(run, twin, stalled_at))
    path = (queue_culprit(series[0], series[1], [(lo, hi) for lo, hi, _row in network])
            if network and series is not None else None)
    found = path[0] if path is not None and leads(path[0], path[1], fabric) else None
    if found is not None:
        for lo, hi, row in network:
            if found.start_s < hi and found.end_s > lo:
                row["culprit"] = f"{found.kind} {found.target} {found.symptom}"
                row["why"] = f"no rank computed longer than its twin; a slow path: {found.evidence}"
        fabric = [found] + [c for c in fabric if (c.kind, c.target) != (found.kind, found.target)]
    return views, out, fabric


def rank_gpus(gpus: list, culprits: list) -> list:
    """The straggler GPUs placed among the fabric's culprits (module docstring): each before them
    unless one began more than TOGETHER_S before it."""
    if not gpus:
        return list(culprits)
    earliest = min((c.start_s for c in culprits), default=math.inf)
    first = [g for g in gpus if g.start_s <= earliest + TOGETHER_S]
    later = [g for g in gpus if g not in first]
    return first + list(culprits) + later


def job_lines(views: list[dict]) -> list[str]:
    """The job view as the command prints it: per job, each stalled iteration and its cause."""
    lines = []
    for v in views:
        if not v["stalled"]:
            lines.append(f"job {v['job']}: no iteration stalled ({v['iterations_run']} of the twin's "
                         f"{v['iterations_twin']} finished)")
        for s in v["stalled"]:
            took = f"took {s['run_ms']:.1f} ms" if s["finished"] else "never finished"
            lines.append(f"job {v['job']}: iteration {s['iteration']} stalled from {s['from_s']:.1f} s: {took}, "
                         f"the twin's {s['twin_ms']:.1f} ms (+{s['late_ms']:.1f} ms); cause {s['cause']}: {s['why']}")
        stalled = {s["iteration"] for s in v["stalled"]}
        for c in v.get("slow_compute") or ():  # absent from a diagnosis.json written before it existed
            if c["iteration"] not in stalled:
                lines.append(f"job {v['job']}: GPU {c['gpu']} computed {c['ran_ms']:.1f} ms in iteration "
                             f"{c['iteration']} where its twin's took {c['twin_ms']:.1f} ms (the iteration did not stall)")
    return lines
