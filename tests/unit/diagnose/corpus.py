"""The scoring corpus of `testbed diagnose`: link faults on simulated leaf-spines and k=4 fat-trees
under permutations, incasts and all-reduce, targets and times drawn with a fixed seed, beside
healthy runs of the same scenarios.

A target is drawn among the cables the healthy run carried bytes on both ways during the fault's
window (a fault on a cable the job does not use does not slow the job and no diagnosis can see it).
Faults: `slow` (10% of the rate left) and `down` (0.1% left) for 1.5 to 3 s.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

from tests.unit.diagnose.simulated_runs import LinkFault

TOPOLOGIES = {
    "leafspine": {"kind": "leaf_spine", "leaves": 4, "spines": 2, "hosts_per_leaf": 2},
    "fattree": {"kind": "fat_tree", "k": 4},
}
WORKLOADS = {
    "permutation": [{"kind": "permutation", "start_s": 0.5, "message_bytes": 1048576, "count": 1}],
    "incast": [{"kind": "incast", "start_s": 0.5, "receiver": "h1", "senders": 4, "message_bytes": 262144,
                "count": 2}],
    "allreduce": [{"kind": "collective", "start_s": 0.5, "op": "all_reduce", "algorithm": "ring",
                   "sizes_bytes": [262144], "count": 2}],
}
FACTORS = {"slow": 0.1, "down": 0.001}


def scenario_text(name: str, topology: str, workload: str) -> str:
    return yaml.safe_dump({
        "name": name, "duration_s": 8, "seed": 1, "topology": TOPOLOGIES[topology],
        "links": {"rate_mbps": 5, "delay_us": 1000},
        "fabric": {"load_balancing": "spray", "cell_size": 1024, "entropy_values": 32},
        "transport": {"cc": "none"}, "workload": WORKLOADS[workload]}, sort_keys=False)


def write_scenarios(where: Path) -> dict[str, Path]:
    where.mkdir(parents=True, exist_ok=True)
    files = {}
    for topology in TOPOLOGIES:
        for workload in WORKLOADS:
            name = f"{topology}-{workload}"
            path = where / f"{name}.yaml"
            path.write_text(scenario_text(name, topology, workload))
            files[name] = path
    return files


def draw_fault(rng: random.Random, active: dict[str, list[float]], symptom: str,
               busy_until_s: float) -> LinkFault:
    """A fault on a cable busy both ways in its window, starting in the first 60% of the busy time."""
    at_s = round(rng.uniform(0.8, max(1.0, 0.6 * busy_until_s)), 1)
    duration_s = round(rng.uniform(1.5, 3.0), 1)
    lo, hi = int(at_s / 0.1), int((at_s + duration_s) / 0.1)
    busy = sorted(name for name, bins in active.items() if sum(bins[lo:hi]) > 0)
    return LinkFault(rng.choice(busy), at_s, duration_s, FACTORS[symptom])


def score(root: Path, faults_per_scenario: int = 4, seed: int = 43) -> list[dict]:
    """Every corpus scenario run healthy and with `faults_per_scenario` drawn faults (alternately slow
    and down), each diagnosed; a row per run with the injected fault, the first culprit and whether
    it is right (kind and target, start within 1 s; a healthy run: no culprit)."""
    import time

    from testbed.diagnose.core import BIN_S, _bins, diagnose_variant, run_link_series
    from testbed.scenario import load_scenario
    from tests.unit.diagnose.simulated_runs import write_run

    rng = random.Random(seed)
    rows = []
    for name, path in write_scenarios(root / "scenarios").items():
        healthy = write_run(path, "base", root / name / "healthy")
        scenario = load_scenario(str(path))
        series = run_link_series(healthy, scenario.topo, _bins(scenario.duration_s))
        active = {}
        for link in scenario.topo.links:
            a, b = series.get(f"{link.name}:{link.a}>{link.b}"), series.get(f"{link.name}:{link.b}>{link.a}")
            if a and b:
                active[link.name] = [min(x, y) for x, y in zip(a, b)]
        busy_until = max(i for bins in active.values() for i, v in enumerate(bins) if v > 0) * BIN_S
        runs = [(None, None, healthy)]
        for i in range(faults_per_scenario):
            symptom = ("slow", "down")[i % 2]
            fault = draw_fault(rng, active, symptom, busy_until)
            runs.append((symptom, fault, write_run(path, "base", root / name / f"fault{i}", fault)))
        for symptom, fault, run_dir in runs:
            started = time.monotonic()
            diagnosis = diagnose_variant(run_dir)
            wall = time.monotonic() - started
            first = diagnosis["culprits"][0] if diagnosis["culprits"] else None
            if fault is None:
                right = diagnosis["healthy"]
            else:
                right = (first is not None and (first["kind"], first["target"]) == ("link", fault.target)
                         and abs(first["start_s"] - fault.at_s) <= 1.0)
            rows.append({"scenario": name, "injected": symptom and f"link {fault.target} {symptom} at {fault.at_s} s",
                         "first": first and f"{first['kind']} {first['target']} from {first['start_s']} s",
                         "right": right, "wall_s": round(wall, 2)})
    return rows
