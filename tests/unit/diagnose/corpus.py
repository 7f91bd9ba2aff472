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
