"""The scoring corpus of `testbed diagnose` on training jobs: a data-parallel job (DDP's gradient
buckets all-reduced in a ring, overlapped with backward) on a simulated 4x2 leaf-spine, healthy,
and with one fault of the scenario's own `faults` section at a random iteration and place, the
kinds in turn:

| fault | parameters | first culprit |
|---|---|---|
| gpu_slow | factor 2 to 3, for 1 to 2 iterations' time | gpu HOST slow |
| link_degrade (a degraded cable) | rate_mbps 25% of the cable's, 2 to 4 iterations | link CABLE slow |
| link_degrade (a lossy port) | loss 0.2, 2 to 4 iterations | link CABLE lossy |
| host_slow | rate_mbps 0.5, delay_ms 100, 2 to 4 iterations | host HOST slow |

Each run is what `testbed sim` writes (tests/unit/diagnose/corpus.py's write_run, on the program
network: the twin is the program twin). The fault starts inside a drawn iteration k (1 to 4 of 8)
of the healthy run: at its start plus a drawn share of it. A cable is drawn among those whose
switch-side egress carried data in the fault's window (a degrade acts there), a host or GPU among
the job's ranks. Right: the first culprit's kind and target are the injected ones and its start is
within 1 s of the fault's; a healthy run names no culprit.
"""

from __future__ import annotations

import random
from pathlib import Path

FAULTS = [("gpu_slow", "gpu", "slow"), ("link_degrade", "link", "slow"), ("link_degrade", "link", "lossy"),
          ("host_slow", "host", "slow")]
RATE_MBPS = 5
DURATION_S = 8
ITERATIONS = 8


def job_data(name: str, seed: int = 1) -> dict:
    """The job's scenario: 8 ranks on a 4x2 leaf-spine at 5 Mbit/s, an iteration of about 0.5 s
    (forward 80 ms, backward 240 ms, 5% jitter, 64 KiB of gradients in a 16 KiB and a 48 KiB
    bucket)."""
    return {"name": name, "duration_s": DURATION_S, "seed": seed,
            "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 2, "hosts_per_leaf": 2},
            "links": {"rate_mbps": RATE_MBPS, "delay_us": 1000},
            "fabric": {"load_balancing": "spray", "cell_size": 1024, "entropy_values": 32},
            "transport": {"cc": "none"},
            "workload": [{"kind": "training", "name": "job", "iterations": ITERATIONS,
                          "model": {"parameters": 16384, "layers": 8, "dtype": "fp32"},
                          "parallelism": {"data": 8},
                          "compute": {"forward_ms": 80, "backward_ms": 240, "jitter": 0.05},
                          "first_bucket_bytes": 16384, "bucket_bytes": 49152}]}


def healthy_iterations(run_dir: Path) -> list[float]:
    """The healthy run's iteration ends (s), the job's last rank each."""
    import json

    from testbed.diagnose.job import iteration_ends
    from testbed.telemetry.training import all_timelines

    planned = json.loads((run_dir / "agents" / "workload.json").read_text())["messages"]
    records = []
    for p in sorted((run_dir / "records").glob("*.jsonl")):
        records += [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    job = all_timelines(planned, records)["job"]
    return [job["start_us"] / 1e6] + [t / 1e6 for t in iteration_ends(job)]


def draw_fault(rng: random.Random, bounds: list[float], active: dict, topo, kind: str, symptom: str) -> list[dict]:
    """One fault of `kind` inside a drawn iteration, on a drawn busy target (module docstring)."""
    from testbed.diagnose.core import BUSY_BYTES

    k = rng.randint(1, 4)
    span = bounds[k + 1] - bounds[k]
    at_s = round(bounds[k] + rng.uniform(0.0, 0.5) * span, 2)
    if kind == "gpu_slow":
        duration = round(span * rng.uniform(1.0, 2.0), 2)
    else:
        duration = round(span * rng.uniform(2.0, 4.0), 2)
    lo, hi = int(at_s / 0.1), int((at_s + duration) / 0.1) + 1
    if kind == "link_degrade":
        pool = sorted(l.name for l in topo.links if any(
            sum(active.get(f"{l.name}:{x}>{y}", ())[lo:hi]) >= BUSY_BYTES
            for x, y in ((l.a, l.b), (l.b, l.a)) if x in topo.switches))
    else:
        pool = sorted(topo.hosts)
    target = rng.choice(pool)
    base = {"at_s": at_s, "kind": kind, "target": target, "duration_s": duration}
    if kind == "gpu_slow":
        return [{**base, "factor": round(rng.uniform(2.0, 3.0), 2)}]
    if kind == "host_slow":
        return [{**base, "rate_mbps": 0.5, "delay_ms": 100}]
    change = {"slow": {"rate_mbps": RATE_MBPS * 0.25}, "lossy": {"loss": 0.2}}[symptom]
    return [{**base, **change}]


def runs(root: Path, faulty: int = 12, seed: int = 43, healthy: int = 2) -> list[dict]:
    """`healthy` healthy jobs (scenario seeds 1, 2, ...: other compute jitter) and `faulty` faulty
    runs of the first one's job, the kinds of FAULTS in turn, places and iterations drawn with
    `seed`: a row per run with its directory and the injected fault (None: healthy)."""
    from testbed.scenario import load_scenario
    from tests.unit.diagnose.corpus import write_run

    out = []
    base = None
    for i in range(healthy):
        data = job_data(f"job-healthy{i}", seed=1 + i)
        run_dir = write_run(data, root / f"healthy{i}", "program")
        out.append({"scenario": data["name"], "dir": run_dir, "fault": None})
        if base is None:
            base = (data, run_dir)
    data, healthy_dir = base
    topo = load_scenario(str(healthy_dir.parent / "scenario.yaml")).topo
    active = _active(healthy_dir, topo)
    bounds = healthy_iterations(healthy_dir)
    rng = random.Random(seed)
    for i in range(faulty):
        kind, culprit, symptom = FAULTS[i % len(FAULTS)]
        faults = draw_fault(rng, bounds, active, topo, kind, symptom)
        run_dir = write_run({**data, "name": f"job-fault{i}", "faults": faults}, root / f"fault{i}", "program")
        out.append({"scenario": f"job-fault{i}", "dir": run_dir,
                    "fault": {"kind": culprit, "target": faults[0]["target"], "symptom": symptom,
                              "at_s": faults[0]["at_s"], "injected": kind}})
    return out


def _active(run_dir: Path, topo) -> dict:
    from testbed.diagnose.core import _bins, run_link_series

    return {k: v for k, v in run_link_series(run_dir, topo, _bins(DURATION_S)).items() if not k.endswith(":queue")}
