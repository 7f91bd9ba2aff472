"""The scoring corpus of `testbed diagnose`: the scenario schema's own faults, every kind, on
simulated leaf-spines and k=4 fat-trees under permutations, incasts and all-reduce, kinds cycled and
targets and times drawn with a fixed seed, beside a healthy run of each scenario.

Each run is what `testbed sim` writes (the scenario file kept beside the variant, which carries
its `faults` section, and `testbed.simulation.run.run_variant`'s variant directory with its
telemetry.jsonl and faults.jsonl); diagnose must read neither the faults section nor faults.jsonl.

A target is drawn among what the healthy run kept busy during the fault's window: a cable that
carried bytes both ways, a host that sent or received, a switch that forwarded (a fault on something
the job does not use changes nothing and no diagnosis can see it). A `link_degrade` acts on the
switch-side egress of its cable (both directions of a fabric cable, only the ToR's toward the host
of a host cable), so its cable is drawn among those where such a direction carried data in the
window (BUSY_BYTES or more, not acks and credits only): the host cable of an incast sender carries
only acks toward the host, and slowing, delaying or thinning those, far below the cable's rate,
changes nothing the run records.

Injected (kind, symptom), the answer diagnose must give:

| fault | parameters | culprit |
|---|---|---|
| link_down + link_up | down for 1.5 to 3 s | link down |
| link_flap | period 0.5 s, 4 periods | link flapping |
| link_degrade | rate_mbps 0.5 (10%) | link slow |
| link_degrade | loss 0.2 | link lossy |
| link_degrade | extra_delay_us 20000 (20 RTTs of the 1 ms cable) | link delayed |
| agent_stall | 1.5 to 3 s | host stalled |
| host_slow | rate_mbps 0.5, delay_ms 100 | host slow |
| host_down | to the end | host down |
| switch_restart | 1.5 to 3 s | switch restarted |
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

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
# (fault kind, symptom): the culprit kind follows from the target
INJECTED = [("link_down", "down"), ("link_flap", "flapping"), ("link_degrade", "slow"),
            ("link_degrade", "lossy"), ("link_degrade", "delayed"), ("agent_stall", "stalled"),
            ("host_slow", "slow"), ("host_down", "down"), ("switch_restart", "restarted")]
CULPRIT_KIND = {"link_down": "link", "link_flap": "link", "link_degrade": "link", "agent_stall": "host",
                "host_slow": "host", "host_down": "host", "switch_restart": "switch"}
DURATION_S = 8


def scenario_data(name: str, topology: str, workload: str) -> dict:
    return {"name": name, "duration_s": DURATION_S, "seed": 1, "topology": TOPOLOGIES[topology],
            "links": {"rate_mbps": 5, "delay_us": 1000},
            "fabric": {"load_balancing": "spray", "cell_size": 1024, "entropy_values": 32},
            "transport": {"cc": "none"}, "workload": WORKLOADS[workload]}


def scenario_text(name: str, topology: str, workload: str) -> str:
    return yaml.safe_dump(scenario_data(name, topology, workload), sort_keys=False)


def corpus_seeds(text: str | None) -> list[int]:
    """The seeds of the target and time draws TESTBED_DIAGNOSE_SEEDS names (`7,11,43`); [43] when it
    is unset or empty."""
    if not (text or "").strip():
        return [43]
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"TESTBED_DIAGNOSE_SEEDS={text!r}: not comma-separated integers") from None


def write_run(data: dict, out: Path, switches: str = "model") -> Path:
    """`testbed sim`'s run directory for the scenario `data` (its one variant) under `out`, its
    switches the hand-written model or the scenario's program (run_variant's `switches`)."""
    from testbed.scenario import expand_variants, load_scenario
    from testbed.simulation.run import run_variant
    from testbed.telemetry.rundir import keep_scenario_copy

    out.mkdir(parents=True, exist_ok=True)
    source = out / "source.yaml"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    scenario = load_scenario(str(source))
    keep_scenario_copy(scenario, out)
    variant = expand_variants(scenario)[0]
    run_dir = out / (variant.name.replace("=", "-").replace(",", "_") or "base")
    run_variant(variant, run_dir, switches)
    source.unlink()
    return run_dir


def busy(run_dir: Path, topo) -> tuple[dict[str, list[float]], float]:
    """(per cable, host and switch: bytes per 100 ms bin of the healthy run (a cable: the smaller of its
    two directions; a host: its cables'; a switch: its ports' tx; and per direction `cable:a>b`), the
    time the last cable went idle)."""
    from testbed.diagnose.core import BIN_S, _bins, run_link_series

    series = run_link_series(run_dir, topo, _bins(DURATION_S))
    active: dict[str, list[float]] = {k: v for k, v in series.items() if not k.endswith(":queue")}
    for link in topo.links:
        a, b = series.get(f"{link.name}:{link.a}>{link.b}"), series.get(f"{link.name}:{link.b}>{link.a}")
        if not (a and b):
            continue
        both = [min(x, y) for x, y in zip(a, b)]
        active[link.name] = both
        for end, other in ((link.a, a), (link.b, b)):
            node = active.setdefault(end, [0.0] * len(both))
            for i, v in enumerate(other):
                node[i] += v
    until = max(i for name, bins in active.items() if name in {l.name for l in topo.links}
                for i, v in enumerate(bins) if v > 0) * BIN_S
    return active, until


def draw_fault(rng: random.Random, active: dict[str, list[float]], topo, kind: str, symptom: str,
               busy_until_s: float) -> list[dict]:
    """The scenario `faults` entries of one fault of `kind`, on a target busy in its window, starting in
    the first 60% of the busy time."""
    at_s = round(rng.uniform(0.8, max(1.0, 0.6 * busy_until_s)), 1)
    duration_s = round(rng.uniform(1.5, 3.0), 1)
    lo, hi = int(at_s / 0.1), int((at_s + duration_s) / 0.1)
    from testbed.diagnose.core import BUSY_BYTES

    pool = ({l.name for l in topo.links} if CULPRIT_KIND[kind] == "link"
            else set(topo.hosts) if CULPRIT_KIND[kind] == "host" else set(topo.switches))
    if kind == "link_degrade":  # it acts on the switch-side egress: a direction carrying data there
        pool = {l.name for l in topo.links if any(
            sum(active.get(f"{l.name}:{x}>{y}", ())[lo:hi]) >= BUSY_BYTES
            for x, y in ((l.a, l.b), (l.b, l.a)) if x in topo.switches)}
    target = rng.choice(sorted(n for n in pool if n in active and sum(active[n][lo:hi]) > 0))
    base = {"at_s": at_s, "kind": kind, "target": target}
    if kind == "link_down":
        return [base, {"at_s": round(at_s + duration_s, 1), "kind": "link_up", "target": target}]
    if kind == "link_flap":
        return [{**base, "period_s": 0.5, "count": 4}]
    if kind == "link_degrade":
        change = {"slow": {"rate_mbps": 0.5}, "lossy": {"loss": 0.2}, "delayed": {"extra_delay_us": 20000}}[symptom]
        return [{**base, "duration_s": duration_s, **change}]
    if kind == "host_slow":
        return [{**base, "duration_s": duration_s, "rate_mbps": 0.5, "delay_ms": 100}]
    if kind == "host_down":
        return [base]
    return [{**base, "duration_s": duration_s}]  # agent_stall, switch_restart


def runs(root: Path, faults_per_scenario: int = 5, seed: int = 43, switches: str = "model",
         emulated: bool = False) -> list[dict]:
    """Every corpus scenario run healthy and with `faults_per_scenario` faults (the kinds of INJECTED
    in turn across the corpus), its switches `switches` (write_run), or `emulated` (emulate; the
    targets then drawn from a simulated healthy run on the program network): a row per run with its
    directory and the injected fault (None: healthy)."""
    from testbed.scenario import load_scenario

    rng = random.Random(seed)
    out, turn = [], 0
    for topology in TOPOLOGIES:
        for workload in WORKLOADS:
            name = f"{topology}-{workload}"
            data = scenario_data(name, topology, workload)
            drawn = write_run(data, root / name / ("simulated" if emulated else "healthy"),
                              "program" if emulated else switches)
            topo = load_scenario(str(drawn.parent / "scenario.yaml")).topo
            active, until = busy(drawn, topo)
            healthy = emulate(data, root / name / "healthy") if emulated else drawn
            out.append({"scenario": name, "dir": healthy, "fault": None})
            for i in range(faults_per_scenario):
                kind, symptom = INJECTED[turn % len(INJECTED)]
                turn += 1
                faults = draw_fault(rng, active, topo, kind, symptom, until)
                faulty = {**data, "faults": faults}
                run_dir = (emulate(faulty, root / name / f"fault{i}") if emulated
                           else write_run(faulty, root / name / f"fault{i}", switches))
                out.append({"scenario": name, "dir": run_dir,
                            "fault": {"kind": CULPRIT_KIND[kind], "target": faults[0]["target"],
                                      "symptom": symptom, "at_s": faults[0]["at_s"],
                                      "injected": kind}})
    return out


def emulate(data: dict, out: Path) -> Path:
    """The scenario `data` emulated as a user runs it (`testbed run --fit`: root, Mininet, the
    machine's own calibration), its run under `out`; its variant directory. A run whose messages
    did not all arrive (a host that went down) still has one; a run that wrote none fails."""
    import subprocess
    import sys

    from testbed.diagnose.core import variant_dirs

    out.mkdir(parents=True, exist_ok=True)
    source = out / f"{data['name']}.yaml"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "testbed.cli", "run", "--fit", str(source), "--runs-dir", str(out)],
                          capture_output=True, text=True)
    (out / "run.log").write_text(done.stdout + done.stderr)
    made = sorted((out / data["name"]).glob("*/"))
    if not made:
        raise RuntimeError(f"{source}: testbed run wrote no run (exit {done.returncode}): "
                           + (done.stderr.strip().splitlines() or ["no message"])[-1])
    return variant_dirs(made[-1])[0]


def score(root: Path, faults_per_scenario: int = 5, seed: int = 43, switches: str = "model",
          emulated: bool = False) -> list[dict]:
    """Each corpus run (`runs`) diagnosed: see `score_runs`."""
    return score_runs(runs(root, faults_per_scenario, seed, switches, emulated))


def score_runs(corpus: list[dict]) -> list[dict]:
    """Each run of `corpus` (rows of `runs`) diagnosed: a row with the injected fault, the first
    culprit, whether it is right (kind and target, start within 1 s; a healthy run: no culprit),
    whether its kind and target are (whatever its start), whether the symptom is, and the
    diagnosis's wall and CPU time (the twin's simulation runs in this process)."""
    import time

    from testbed.diagnose.core import diagnose_variant

    rows = []
    for run in corpus:
        started, cpu = time.monotonic(), time.process_time()
        diagnosis = diagnose_variant(run["dir"])
        wall, cpu = time.monotonic() - started, time.process_time() - cpu
        first = diagnosis["culprits"][0] if diagnosis["culprits"] else None
        fault = run["fault"]
        if fault is None:
            right = target_right = symptom_right = diagnosis["healthy"]
        else:
            target_right = first is not None and (first["kind"], first["target"]) == (fault["kind"], fault["target"])
            right = target_right and abs(first["start_s"] - fault["at_s"]) <= 1.0
            symptom_right = right and first["symptom"] == fault["symptom"]
        rows.append({"scenario": run["scenario"],
                     "injected": fault and f"{fault['kind']} {fault['target']} {fault['symptom']} at {fault['at_s']} s",
                     "injected_class": fault and f"{fault['kind']} {fault['symptom']}",
                     "first": first and f"{first['kind']} {first['target']} {first['symptom']} from {first['start_s']} s",
                     "first_class": first and f"{first['kind']} {first['symptom']}",
                     "right": right, "target_right": target_right, "symptom_right": symptom_right,
                     "culprits": [f"{c['kind']} {c['target']} {c['symptom']} from {c['start_s']} s ({c['score']})"
                                  for c in diagnosis["culprits"][:4]],
                     "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)})
    return rows


def confusion(rows: list[dict]) -> str:
    """The confusion table: injected kind/symptom (rows) x first culprit's kind/symptom (columns,
    `wrong target` when the kind and target are not the injected ones, `wrong start` when they are
    but the start is more than 1 s off)."""
    def col(r):
        if r["first_class"] is None:
            return "none"
        if r["injected"] is not None and not r["right"]:
            return "wrong start" if r["target_right"] else "wrong target"
        return r["first_class"]

    rows_ = sorted({r["injected_class"] or "healthy" for r in rows})
    cols = sorted({col(r) for r in rows})
    lines = ["| injected \\ first culprit | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name in rows_:
        mine = [r for r in rows if (r["injected_class"] or "healthy") == name]
        lines.append(f"| {name} | " + " | ".join(str(sum(1 for r in mine if col(r) == c) or "") for c in cols) + " |")
    return "\n".join(lines)


def print_scores(rows: list[dict], label: str, cause: str = "first culprit", healthy_name: str = "healthy",
                 unit: str = "variant") -> None:
    """Every row, the confusion table and the scores' line of one scored corpus (score_runs' rows):
    first `cause` right (kind, target, start within 1 s), the symptom too, `healthy_name` runs with
    no culprit, the largest wall and CPU time of a diagnosis per `unit`."""
    for row in rows:
        print(row)
    faulty = [r for r in rows if r["injected"]]
    healthy = [r for r in rows if not r["injected"]]
    print(f"\n{label}:")
    print(confusion(rows))
    print(f"{label}: {cause} right (kind, target, start within 1 s): {sum(r['right'] for r in faulty)}/"
          f"{len(faulty)}; symptom too: {sum(r['symptom_right'] for r in faulty)}/{len(faulty)}; {healthy_name} "
          f"with no culprit: {sum(r['right'] for r in healthy)}/{len(healthy)}; wall time per {unit} at most "
          f"{max(r['wall_s'] for r in rows):.1f} s (CPU {max(r['cpu_s'] for r in rows):.1f} s)")
