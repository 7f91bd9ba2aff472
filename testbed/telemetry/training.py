"""A training job's figures from a variant directory: iteration times, GPU utilisation, exposed
communication, and the timeline of its first iterations.

The job's messages are the planned ones (agents/workload.json) whose collective is a gradient
bucket's all-reduce, named `<job>#<iteration>.b<bucket>` (host/training.py). For GPU (rank) r and
iteration k, all in microseconds on the run's clock:

* C(r, k), its compute (forward + backward): the largest `compute_us` of r's messages of the
  iteration (the last bucket is ready when backward ends), or of their `compute_ran_us` (how long
  it ran, host/app.py) when the records have it and it is longer (a slow GPU, gpu_slow);
* A(r, k), the iteration's end at r: the last `collective_done` of the iteration's buckets at r;
* s(r, k) = max(job start, A(r, k-1)), its compute's start (the job start for k = 0: the earliest
  planned start of its messages), and e(r, k) = s + C, its compute's end;
* M(k) = max over r of e(r, k): the moment the slowest GPU's backward ended;
* wait W(r, k) = max(0, min(A, M) - e): idle after its own backward, for a slower GPU's gradients;
* exposed communication X(r, k) = max(0, A - max(e, M)): idle after every GPU's backward ended,
  while the last all-reduces finish. C + W + X = A - s, the iteration at r.

Per job: the iteration time T(k) = max_r A(r, k) - max_r A(r, k-1) (the job start for k = 0), its
p50 and p99 over the iterations every rank finished (nearest rank); GPU utilisation of r = the sum of
its C over the sum of its A - s (compute time over iteration time), the job's the mean over GPUs,
with the lowest GPU's; compute, wait and exposed communication per iteration, means over GPUs and
iterations. Iterations some rank did not finish are left out and counted.

An MoE job (host/moe.py) is a chain of all-to-alls, named `<job>#<iteration>.a<step>[.g<group>]`,
each behind the compute before it. For rank r, iteration k and step j: A, when the step finished
at r (the later of its `collective_done` at r and the start of r's last message of it, as the
runner gates the next compute: host/app.py); g, the previous step's A (the job start before the
first); e = g + its `compute_us`, when r's compute ended and its sends began; M, the largest e over the ranks of its
expert-parallel group. Wait W = max(0, min(A, M) - e) (idle until the group's last rank started: a
slower GPU, or a rank whose previous all-to-all finished later), exposed
X = max(0, A - max(e, M)) (idle while the all-to-all finished after every rank had started it). An
iteration at r runs from its first step's g to its last step's A; its compute, wait and exposed
communication are the sums over its steps, so again C + W + X = A - s, and the job's figures are
the same as above.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from testbed.host.training import parse_name, parse_step
from testbed.telemetry.cells import fixed
from testbed.telemetry.pipeline_job import pipeline_timelines


def _nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def job_timelines(planned: list[dict], records: list[dict]) -> dict[str, dict]:
    """Per job: its ranks, iterations planned, and per rank and finished iteration the intervals
    (us) of compute (s, e), wait and exposed communication, and its buckets' communication."""
    jobs: dict[str, dict] = {}
    for m in planned:
        parsed = parse_name(m.get("collective") or "")
        if parsed is None or "compute_us" not in m:
            continue
        name, k, _b = parsed
        job = jobs.setdefault(name, {"ranks": [], "iterations": 0, "start_us": math.inf, "compute": {}})
        if m["src"] not in job["ranks"]:
            job["ranks"].append(m["src"])
        job["iterations"] = max(job["iterations"], k + 1)
        job["start_us"] = min(job["start_us"], m["start_us"])
        key = (m["src"], k)
        job["compute"][key] = max(job["compute"].get(key, 0.0), m["compute_us"])
    done: dict[tuple[str, str, int], list[float]] = {}  # (job, host, iteration) -> bucket ends
    comm: dict[tuple[str, str, int, int], list[float]] = {}  # (job, host, iteration, bucket) -> [first send, done]
    for r in records:
        parsed = parse_name(r.get("collective") or "")
        if parsed is None or parsed[0] not in jobs:
            continue
        name, k, b = parsed
        if r["kind"] == "collective_done":
            done.setdefault((name, r["host"], k), []).append(r["done_us"])
            comm.setdefault((name, r["host"], k, b), [math.inf, math.inf])[1] = r["done_us"]
        elif r["kind"] == "message_sent":
            span = comm.setdefault((name, r["src"], k, b), [math.inf, math.inf])
            span[0] = min(span[0], r["start_us"])
            if "compute_ran_us" in r:  # as it ran: a slow GPU's (gpu_slow) is longer than planned
                key = (r["src"], k)
                jobs[name]["compute"][key] = max(jobs[name]["compute"].get(key, 0.0), r["compute_ran_us"])
    buckets_of: dict[str, int] = {}
    for m in planned:
        parsed = parse_name(m.get("collective") or "")
        if parsed is not None and parsed[0] in jobs:
            buckets_of[parsed[0]] = max(buckets_of.get(parsed[0], 0), parsed[2] + 1)
    for name, job in jobs.items():
        ranks, nb = job["ranks"], buckets_of[name]
        end: dict[tuple[str, int], float] = {}
        for h in ranks:
            for k in range(job["iterations"]):
                ends = done.get((name, h, k), [])
                if len(ends) < nb:
                    break
                end[(h, k)] = max(ends)
        finished = 0
        while all((h, finished) in end for h in ranks) and finished < job["iterations"]:
            finished += 1
        job["finished"] = finished
        job["end"] = end
        rows: dict[str, list[dict]] = {h: [] for h in ranks}
        for k in range(finished):
            starts = {h: job["start_us"] if k == 0 else end[(h, k - 1)] for h in ranks}
            ends_compute = {h: starts[h] + job["compute"][(h, k)] for h in ranks}
            slowest = max(ends_compute.values())
            for h in ranks:
                s, e, a = starts[h], ends_compute[h], end[(h, k)]
                rows[h].append({"iteration": k, "start_us": s, "compute_end_us": e, "end_us": a,
                                "compute_us": e - s, "wait_us": max(0.0, min(a, slowest) - e),
                                "exposed_us": max(0.0, a - max(e, slowest)),
                                "comm": [tuple(comm[(name, h, k, b)]) for b in range(nb)
                                         if (name, h, k, b) in comm]})
        job["timeline"] = rows
    return jobs


def chain_timelines(planned: list[dict], records: list[dict]) -> dict[str, dict]:
    """Per MoE job, the structure of `job_timelines` (module docstring's chain rule); each finished
    iteration also lists its `spans` (compute, wait, exposed as (kind, from, to)) step by step."""
    jobs: dict[str, dict] = {}
    members: dict[str, set] = {}  # collective -> its ranks
    for m in planned:
        parsed = parse_step(m.get("collective") or "")
        if parsed is None or "compute_us" not in m:
            continue
        name, k, j, _g = parsed
        job = jobs.setdefault(name, {"ranks": [], "iterations": 0, "steps": 0, "start_us": math.inf,
                                     "compute": {}, "collective": {}})
        if m["src"] not in job["ranks"]:
            job["ranks"].append(m["src"])
        job["iterations"] = max(job["iterations"], k + 1)
        job["steps"] = max(job["steps"], j + 1)
        job["start_us"] = min(job["start_us"], m["start_us"])
        job["compute"][(m["src"], k, j)] = m["compute_us"]
        job["collective"][(m["src"], k, j)] = m["collective"]
        members.setdefault(m["collective"], set()).update((m["src"], m["dst"]))
    done: dict[tuple[str, str], float] = {}  # (host, collective) -> done_us
    first: dict[tuple[str, str], float] = {}  # (host, collective) -> its first send
    last: dict[tuple[str, str], float] = {}  # (host, collective) -> its last send
    for r in records:
        if parse_step(r.get("collective") or "") is None:
            continue
        if r["kind"] == "collective_done":
            done[(r["host"], r["collective"])] = r["done_us"]
        elif r["kind"] == "message_sent":
            key = (r["src"], r["collective"])
            first[key] = min(first.get(key, math.inf), r["start_us"])
            last[key] = max(last.get(key, -math.inf), r["start_us"])
    for key in done:
        done[key] = max(done[key], last.get(key, -math.inf))
    for job in jobs.values():
        ranks, steps = job["ranks"], job["steps"]
        finished = 0
        while finished < job["iterations"] and all(
                (h, job["collective"][(h, finished, j)]) in done for h in ranks for j in range(steps)):
            finished += 1
        gate, ready, end = {}, {}, {}
        for h in ranks:
            at = job["start_us"]
            for k in range(finished):
                for j in range(steps):
                    gate[(h, k, j)] = at
                    ready[(h, k, j)] = at + job["compute"][(h, k, j)]
                    at = done[(h, job["collective"][(h, k, j)])]
                    end[(h, k, j)] = at
        latest: dict[str, float] = {}  # collective -> its group's last ready
        for (h, k, j), e in ready.items():
            c = job["collective"][(h, k, j)]
            latest[c] = max(latest.get(c, -math.inf), e)
        rows: dict[str, list[dict]] = {h: [] for h in ranks}
        for h in ranks:
            for k in range(finished):
                spans, comm = [], []
                totals = {"compute": 0.0, "wait": 0.0, "exposed": 0.0}
                for j in range(steps):
                    c = job["collective"][(h, k, j)]
                    g, e, a, top = gate[(h, k, j)], ready[(h, k, j)], end[(h, k, j)], latest[c]
                    wait, exposed = max(0.0, min(a, top) - e), max(0.0, a - max(e, top))
                    totals["compute"] += e - g
                    totals["wait"] += wait
                    totals["exposed"] += exposed
                    spans += [("compute", g, e), ("wait", e, e + wait), ("exposed", a - exposed, a)]
                    comm.append((first.get((h, c), math.inf), a))
                rows[h].append({"iteration": k, "start_us": gate[(h, k, 0)], "end_us": end[(h, k, steps - 1)],
                                "compute_end_us": ready[(h, k, steps - 1)],
                                **{f"{key}_us": v for key, v in totals.items()}, "spans": spans, "comm": comm})
        job["finished"] = finished
        job["end"] = {(h, k): end[(h, k, steps - 1)] for h in ranks for k in range(finished)}
        job["timeline"] = rows
        del job["collective"]
    return jobs


def all_timelines(planned: list[dict], records: list[dict]) -> dict[str, dict]:
    """Every job's timeline: data-parallel (`job_timelines`), MoE (`chain_timelines`) and
    pipeline-parallel (telemetry/pipeline_job.py)."""
    return {**job_timelines(planned, records), **chain_timelines(planned, records),
            **pipeline_timelines(planned, records)}


def job_rows(planned: list[dict], records: list[dict]) -> dict[str, dict]:
    """The report's row per job (module docstring), times in milliseconds."""
    out = {}
    for name, job in all_timelines(planned, records).items():
        ranks, k_done = job["ranks"], job["finished"]
        row: dict = {"gpus": len(ranks), "iterations_planned": job["iterations"], "iterations_finished": k_done}
        if k_done:
            ends = [max(job["end"][(h, k)] for h in ranks) for k in range(k_done)]
            times = [b - a for a, b in zip([job["start_us"]] + ends, ends)]
            row["iteration_ms"] = [t / 1e3 for t in times]
            row["iteration_p50_ms"] = _nearest_rank(times, 0.5) / 1e3
            row["iteration_p99_ms"] = _nearest_rank(times, 0.99) / 1e3
            util = {h: sum(i["compute_us"] for i in job["timeline"][h])
                    / sum(i["end_us"] - i["start_us"] for i in job["timeline"][h]) for h in ranks}
            row["gpu_utilisation"] = sum(util.values()) / len(util)
            low = min(ranks, key=util.__getitem__)
            row["gpu_utilisation_lowest"] = util[low]
            row["gpu_lowest"] = low
            samples = [i for h in ranks for i in job["timeline"][h]]
            for key in ("compute", "wait", "exposed"):
                row[f"{key}_per_iteration_ms"] = sum(i[f"{key}_us"] for i in samples) / len(samples) / 1e3
            row["exposed_share"] = (sum(i["exposed_us"] for i in samples)
                                    / sum(i["end_us"] - i["start_us"] for i in samples))
        out[name] = row
    return out


def _read(run_dir: Path) -> tuple[list[dict], list[dict]]:
    planned = json.loads((run_dir / "agents" / "workload.json").read_text())["messages"]
    records = []
    for p in sorted((run_dir / "records").glob("*.jsonl")):
        records += [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    return planned, records


def job_figures(run_dir: Path) -> dict[str, dict]:
    """`job_rows` of a variant directory (records/*.jsonl, agents/workload.json); {} without jobs."""
    if not (run_dir / "agents" / "workload.json").exists():
        return {}
    return job_rows(*_read(run_dir))


def report_lines(summaries: dict[str, dict]) -> list[str]:
    """The training jobs table of a report: one line per variant and job."""
    if not any(s.get("jobs") for s in summaries.values()):
        return []
    lines = ["## Training jobs", "",
             "| variant | job | GPUs | iterations | iteration p50 / p99 (ms) | GPU utilisation, mean (lowest) | "
             "compute / wait / exposed communication per iteration (ms) | exposed share |",
             "|---|---|---|---|---|---|---|---|"]
    for variant, s in summaries.items():
        for name, r in (s.get("jobs") or {}).items():
            low = (f"{r['gpu_utilisation']:.3f} ({r['gpu_lowest']} {r['gpu_utilisation_lowest']:.3f})"
                   if r.get("gpu_utilisation") is not None else "-")
            lines.append(
                f"| {variant} | {name} | {r['gpus']} | {r['iterations_finished']} / {r['iterations_planned']} | "
                f"{fixed(r.get('iteration_p50_ms'), 1)} / {fixed(r.get('iteration_p99_ms'), 1)} | {low} | "
                f"{fixed(r.get('compute_per_iteration_ms'), 1)} / {fixed(r.get('wait_per_iteration_ms'), 1)} / "
                f"{fixed(r.get('exposed_per_iteration_ms'), 1)} | {fixed(r.get('exposed_share'), 3)} |")
    lines += ["", "An iteration ends at a GPU when every gradient bucket of it is all-reduced there; the job's "
              "iteration time runs from the previous iteration's last GPU to its own (p50 / p99 nearest rank). "
              "GPU utilisation: compute time over iteration time. Wait: idle after its own backward until the "
              "slowest GPU's ended; exposed communication: idle after that until its buckets were reduced. "
              "An MoE job's figures are the sums over its all-to-alls: wait, idle until the last GPU of "
              "the group had started one (a slower GPU, or one whose previous all-to-all ended later); exposed, idle after that until it was done at the GPU "
              "(telemetry/training.py).", ""]
    return lines


def plot_timeline(run_dirs: dict[str, Path], path: Path, iterations: int = 3) -> bool:
    """Per variant and job, the first `iterations` iterations per GPU: compute, wait and exposed
    communication as bars, each bucket's all-reduce at that GPU (first send to done) as a line."""
    panels = []
    for variant, run_dir in run_dirs.items():
        if not (run_dir / "agents" / "workload.json").exists():
            continue
        for name, job in all_timelines(*_read(run_dir)).items():
            if job["finished"]:
                panels.append((f"{variant}: {name}" if len(run_dirs) > 1 else name, job))
    if not panels:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 0.32 * sum(len(j["ranks"]) for _, j in panels) + 1.6),
                             squeeze=False)
    colours = {"compute": "tab:blue", "wait": "tab:grey", "exposed": "tab:red"}
    for ax, (title, job) in zip(axes[:, 0], panels):
        for y, h in enumerate(job["ranks"]):
            for it in job["timeline"][h][:iterations]:
                e = it["compute_end_us"]
                spans = it.get("spans") or [("compute", it["start_us"], e), ("wait", e, e + it["wait_us"]),
                                            ("exposed", it["end_us"] - it["exposed_us"], it["end_us"])]
                for key, a, b in spans:
                    if b > a:
                        ax.barh(y, (b - a) / 1e3, left=a / 1e3, height=0.6, color=colours[key])
                for j, (a, b) in enumerate(it["comm"]):  # buckets one above the other, so each shows
                    if math.isfinite(a) and math.isfinite(b):
                        level = y - 0.3 + 0.6 * j / max(1, len(it["comm"]) - 1)
                        ax.plot([a / 1e3, b / 1e3], [level, level], color="tab:orange", linewidth=1.2)
        ax.set_yticks(range(len(job["ranks"])), job["ranks"], fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("time (ms)")
        ax.set_title(f"{title}: first {min(iterations, job['finished'])} iteration(s) per GPU", fontsize=9)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
        handles.append(plt.Line2D([0], [0], color="tab:orange"))
        ax.legend(handles, ["compute", "wait (for a slower GPU)", "exposed communication",
                            "collective at this GPU (first send to done)"],
                  fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14 * 16 / max(16, len(job["ranks"]))),
                  ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
