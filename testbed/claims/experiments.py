"""The simulator experiments behind the claims table, each saved as records + counters.

An experiment is one network and one workload on the virtual-time simulator
(the agents' own sans-IO transport, exact wake-ups) on the program network
(simulation/program_net.py, the scenario's P4 program in every switch). Its
directory keeps `records.jsonl` (every message sent and delivered, as the
agents write them) and `counters.json` (what the switches counted: DATA drops,
credit drops, the deepest queue, pause frames; and the link rate, base RTT and
cell format the figures need), so figures.py computes every number of the
report from the directory alone.

Incasts, permutations and all-to-all are scenarios (5 Mbit/s links, BDP 16
cells, 2-BDP buffers, spraying, the scenario's RED ECN for dcqcn) run as
`testbed sim` runs them: the very texts emulated.py runs on the emulated fabric,
so the two platforms are compared on one configuration. The mixed workload and
the load sweep run on simexp's leaf-spine written as a scenario (the same
links, two hosts per leaf, two spines), their messages given whole; their
emulated counterparts are scaled-down scenarios, not compared row by row.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.host import records as host_records
from testbed.cells import segment
from testbed.simulation import simexp
from testbed.host import workloads

INCAST_SENDERS = (4, 7, 15, 32, 64)
# srpt's degree of overcommitment swept from 2 to N-1 in these incasts (1 is tita+srpt; N shares like
# fair order): the frontier between the median FCT and equal shares (report: _frontier_table)
OVERCOMMIT_SENDERS = (7, 15)
INCAST_BYTES = 128 * 1024
LOADS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
LOAD_HOSTS = 8
LOAD_MESSAGE_BYTES = 64 * 1024
LOAD_SECONDS = 3.0  # of arrivals; the run goes on until every message is done
PFC_THRESHOLDS = (8, 4)  # XOFF / XON, DATA cells one ingress link has queued at a switch
# The emulated incasts' simulated twins run again with these scenario seeds (RED's marks, the
# entropy's start): how far the simulator's own outcome moves without any real-time noise, the
# spread an emulated run (one sample of that noise) is compared with.
SPREAD_SEEDS = (2, 3, 4, 5)
# `none` at 64:1 drops nearly every cell it sends and takes minutes of wall time to finish
NONE_MAX_SENDERS = 15


def transport_label(cc: str, pfc: bool = False, credit_order: str = "fair", overcommit: int = 1) -> str:
    """How the report names a transport: tita, tita+srpt, tita+srpt-k6 (srpt sharing the credits
    among its 6 least-remaining flows), dcqcn+pfc, ..."""
    srpt = "+srpt" + (f"-k{overcommit}" if overcommit > 1 else "") if credit_order == "srpt" else ""
    return cc + ("+pfc" if pfc else "") + srpt


@dataclass(frozen=True)
class Transport:
    """A congestion control as compared: its cc name, PFC on the links into switches or not, and
    (tita) its credit order and, with srpt, its degree of overcommitment."""

    cc: str
    pfc: bool = False
    credit_order: str = "fair"
    overcommit: int = 1

    @property
    def label(self) -> str:
        return transport_label(self.cc, self.pfc, self.credit_order, self.overcommit)


def transports(ccs: list[str]) -> list[Transport]:
    """Every cc without PFC, dcqcn with PFC as it is deployed (lossless RoCE), and tita with
    Homa's credit order."""
    out = [Transport(cc) for cc in ccs]
    if "dcqcn" in ccs:
        out.append(Transport("dcqcn", pfc=True))
    if "tita" in ccs:
        out.append(Transport("tita", credit_order="srpt"))
    return out


@dataclass(frozen=True)
class Experiment:
    name: str  # its directory under sim/
    kind: str  # incast | mixed | load | permutation | alltoall
    transport: Transport
    params: dict = field(default_factory=dict)


def plan(ccs: list[str], quick: bool = False) -> list[Experiment]:
    """Every experiment for these ccs; `quick` keeps the small ones (for tests and a first look)."""
    senders = (4, 7) if quick else INCAST_SENDERS
    loads = (0.1, 0.5, 1.0) if quick else LOADS
    out = []
    for t in transports(ccs):
        for n in senders:
            if t.cc == "none" and n > NONE_MAX_SENDERS:
                continue
            out.append(Experiment(f"incast{n}-{t.label}", "incast", t, {"senders": n}))
        out.append(Experiment(f"mixed-{t.label}", "mixed", t, {}))
        # srpt trades equal shares for the median FCT, which the experiments above show; the
        # load sweep and the permutations measure load and efficiency, fair tita's claims
        if t.credit_order != "fair":
            continue
        for load in loads:
            out.append(Experiment(f"load{load:g}-{t.label}", "load", t, {"load": load}))
        for tiers in ((2,) if quick else (2, 3)):
            out.append(Experiment(f"permutation-{tiers}tier-{t.label}", "permutation", t, {"tiers": tiers}))
            out.append(Experiment(f"alltoall-{tiers}tier-{t.label}", "alltoall", t, {"tiers": tiers}))
    if "tita" in ccs:
        for n in (OVERCOMMIT_SENDERS[:1] if quick else OVERCOMMIT_SENDERS):
            for k in range(2, n):
                t = Transport("tita", credit_order="srpt", overcommit=k)
                out.append(Experiment(f"incast{n}-{t.label}", "incast", t, {"senders": n}))
    return out


def run(experiment: Experiment, directory: Path) -> Path:
    """Run one experiment and keep its records and counters in directory/sim/NAME/ (and, for an
    incast the emulated fabric runs too, the same with each of SPREAD_SEEDS in seeds/seedS/)."""
    out = directory / "sim" / experiment.name
    _save(out, experiment, *_RUNNERS[experiment.kind](experiment))
    n = experiment.params.get("senders")
    # of the frontier's points, only the one the emulated fabric runs too (emulated.run_incast)
    if experiment.kind == "incast" and n in INCAST_FABRICS and experiment.transport.overcommit in (1, n - 1):
        for seed in SPREAD_SEEDS:
            _save(out / "seeds" / f"seed{seed}", experiment, *_run_incast(experiment, seed))
    return out


def run_unit(root: Path, experiment: Experiment) -> dict:
    """One unit of `testbed reproduce`'s sweep (simulation/sweep.py): `run` under `root`; its
    directory relative to root and the machine's wall time it took."""
    started = time.monotonic()
    out = run(experiment, root)
    return {"directory": out.relative_to(root).as_posix(), "wall_s": round(time.monotonic() - started, 3)}


def program_counters(net, info: dict) -> dict:
    """What the program's switches counted on the program network (simulate_program's info): DATA
    cells and all frames their queues turned away, credits dropped (over their port's rate by the
    program's credit meter, or at a full queue), PFC frames sent, the deepest queue."""
    from testbed.cells import wire

    engine, credit_queue_drops = net.engine, 0
    for name, index in net.fabric.index.items():
        for port in net.topo.ports(name):
            for prio in range(net.scenario.switch.priority_queues):
                q = engine.queue_stats(index, port.number, prio)
                credit_queue_drops += q["class_drops"][wire.CREDIT] if q is not None else 0
    return {"virtual_end_s": net.now_s, "data_drops": info["switch_data_drops"],
            "queue_drops_all_kinds": info["switch_queue_drops"],
            "credit_drops": info["program_drops"].get("credit_over_rate", 0) + credit_queue_drops,
            "pause_frames": info["pause_frames"] or 0, "peak_queue_cells": info["max_queue_cells"]}


def _save(out: Path, experiment: Experiment, net, cfg, messages, extra: dict, switch_counters: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    host_records.write_jsonl(out / "records.jsonl", net.records())
    counters = {
        "name": experiment.name, "kind": experiment.kind, "cc": experiment.transport.cc,
        "overcommit": experiment.transport.overcommit,
        "pfc": list(PFC_THRESHOLDS) if experiment.transport.pfc else None, "label": experiment.transport.label,
        "params": experiment.params, "hosts": len(net.hosts), "messages": len(messages),
        "message_bytes": [m.size_bytes for m in messages], "sources": [m.src for m in messages], "starts_us": [m.start_us for m in messages],
        "finished": net.finished(),
        "link_rate_bps": cfg.link_rate_bps, "base_rtt_s": cfg.rtt_s, "bdp_cells": cfg.bdp_cells,
        "cell_size": cfg.cell_size, "data_wire_bytes": cfg.data_wire_bytes, **switch_counters,
        "data_cells_sent": sum(h.ep.stats()["tx_counts"].get("tx_DATA", 0) for h in net.hosts.values()),
        "retransmissions": sum(h.ep.stats()["retransmissions"] for h in net.hosts.values()),
        "timeouts": sum(h.ep.stats()["timeouts"] for h in net.hosts.values()),
        "nacks_received": sum(h.ep.stats()["nacks_received"] for h in net.hosts.values()),
        **extra,
    }
    (out / "counters.json").write_text(json.dumps(counters, indent=1))


def _run_incast(e: Experiment, seed: int = 1):
    """The incast as the emulated fabric runs it (incast_text): the same scenario on the simulator,
    so the claims table's agreement rows compare one configuration on two platforms."""
    n = e.params["senders"]
    text = incast_text(n, e.transport.cc, e.transport.pfc, seed, e.transport.credit_order, e.transport.overcommit)
    net, cfg, messages, counters = _simulate_text(text, f"claims-incast{n}.yaml")
    return net, cfg, messages, {"receiver": "h1", "topology": "leaf_spine", "seed": seed}, counters


def _run_mixed(e: Experiment):
    """simexp.mixed's workload: 4 long 512 KiB flows into h1, 60 short 8 KiB messages among them."""
    names = [f"h{i}" for i in range(2, 9)]
    longs, shorts = names[:4], names[4:]
    messages = workloads.combine(
        workloads.incast(longs, "h1", 512 * 1024),
        [workloads.MessageSpec(shorts[k % 3], "h1", k // 3, 8 * 1024, start_us=(0.1 + k * 0.03) * 1e6)
         for k in range(60)])
    net, cfg, counters = _on_leaf_spine(e, 8, messages)
    return net, cfg, messages, {"receiver": "h1", "short_senders": shorts, "long_senders": longs}, counters


def _run_load(e: Experiment):
    cfg = simexp.config(e.transport.cc)
    hosts = [f"h{i}" for i in range(1, LOAD_HOSTS + 1)]
    wire = segment.cell_count(LOAD_MESSAGE_BYTES + segment.TRAILER_LEN, cfg.cell_size) * cfg.data_wire_bytes
    messages = workloads.poisson(hosts, e.params["load"], cfg.link_rate_bps, LOAD_MESSAGE_BYTES, wire,
                                 LOAD_SECONDS, seed=1)
    net, cfg, counters = _on_leaf_spine(e, LOAD_HOSTS, messages)
    return net, cfg, messages, {"offered_load": e.params["load"], "arrivals_s": LOAD_SECONDS}, counters


# The mixed workload and the load sweep: simexp's leaf-spine (two hosts per leaf, two spines, the
# incasts' links and buffers) as a scenario on the program network, their messages given whole.
LEAF_SPINE_SCENARIO = """
name: claims-{name}
duration_s: 300
seed: 1
topology: {{kind: leaf_spine, leaves: {leaves}, spines: 2, hosts_per_leaf: 2}}
links: {{rate_mbps: 5, delay_us: 2500}}
fabric: {{load_balancing: spray, cell_size: 1024, pfc: {{enabled: {pfc}, xoff_cells: {xoff}, xon_cells: {xon}}}}}
transport: {{cc: {cc}, tita: {{credit_order: {credit_order}, overcommit: {overcommit}}}}}
workload: [{{kind: pingall}}]
"""


def _on_leaf_spine(e: Experiment, hosts: int, messages: list):
    """`messages` on simexp's leaf-spine of `hosts` hosts, on the program network, to the end:
    (the network, its transport config, its switches' counters)."""
    t = e.transport
    text = LEAF_SPINE_SCENARIO.format(name=e.name.replace("+", "-"), leaves=-(-hosts // 2), cc=t.cc, pfc="true" if t.pfc else "false",
                                      xoff=PFC_THRESHOLDS[0], xon=PFC_THRESHOLDS[1], credit_order=t.credit_order,
                                      overcommit=t.overcommit)
    net, cfg, _, counters = _simulate_text(text, f"claims-{e.kind}.yaml", messages)
    return net, cfg, counters


# Permutation and all-to-all: the scenario's own workload, as the emulated runs of the same text
# (emulated.py) have it; `{cc}` and `{workload}` filled in.
SCENARIOS = {
    2: """
name: claims-2tier
duration_s: 300
seed: 1
topology: {{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2}}
links: {{rate_mbps: 5, delay_us: 2500}}
fabric: {{load_balancing: spray, cell_size: 1024, pfc: {{enabled: {pfc}, xoff_cells: {xoff}, xon_cells: {xon}}}}}
transport: {{cc: {cc}}}
workload: [{workload}]
""",
    3: """
name: claims-3tier
duration_s: 300
seed: 1
topology: {{kind: fat_tree, k: 4}}
links: {{rate_mbps: 5, delay_us: 1000}}
fabric: {{load_balancing: spray, cell_size: 1024, pfc: {{enabled: {pfc}, xoff_cells: {xoff}, xon_cells: {xon}}}}}
transport: {{cc: {cc}}}
workload: [{workload}]
""",
}
PERMUTATION_BYTES = 256 * 1024
ALLTOALL_BYTES = 256 * 1024  # per rank, spread over the others
WORKLOADS = {
    "permutation": "{kind: permutation, start_s: 0.5, message_bytes: %d, count: 1}" % PERMUTATION_BYTES,
    "alltoall": "{kind: all_to_all, start_s: 0.5, message_bytes: %d, count: 1}" % ALLTOALL_BYTES,
}


# Incast N:1 into h1 (128 KiB from each sender, remote leaves first), on the simulator and on the
# emulated fabric (emulated.run_incast adds the variants): the leaf-spines of the integration test
# (7:1) and of scenarios/incast15.yaml (15:1), whose ping-all of 16 hosts takes longer, so the
# incast starts later; any other N gets simexp's leaf-spine (2 hosts per leaf, 2 spines).
INCAST_SCENARIO = """
name: claims-incast{senders}
duration_s: {duration_s}
seed: {seed}
topology: {{kind: leaf_spine, leaves: {leaves}, spines: {spines}, hosts_per_leaf: {hosts_per_leaf}}}
links: {{rate_mbps: 5, delay_us: 2500}}
fabric: {{load_balancing: spray, cell_size: 1024, pfc: {{enabled: {pfc}, xoff_cells: {xoff}, xon_cells: {xon}}}}}
transport: {{cc: {cc}, tita: {{credit_order: {credit_order}, overcommit: {overcommit}}}}}
workload:
  - {{kind: pingall}}
  - {{kind: incast, start_s: {start_s}, receiver: h1, senders: {senders}, message_bytes: %d, count: 1}}
""" % INCAST_BYTES
INCAST_FABRICS = {7: {"leaves": 4, "spines": 2, "hosts_per_leaf": 2, "start_s": 3, "duration_s": 15},
                  15: {"leaves": 4, "spines": 4, "hosts_per_leaf": 4, "start_s": 6, "duration_s": 20}}


def incast_text(senders: int, cc: str, pfc: bool = False, seed: int = 1, credit_order: str = "fair",
                overcommit: int = 1) -> str:
    fabric = INCAST_FABRICS.get(senders) or {"leaves": -(-(senders + 1) // 2), "spines": 2, "hosts_per_leaf": 2,
                                             "start_s": 3, "duration_s": 60}
    return INCAST_SCENARIO.format(senders=senders, cc=cc, pfc="true" if pfc else "false", seed=seed,
                                  credit_order=credit_order, overcommit=overcommit,
                                  xoff=PFC_THRESHOLDS[0], xon=PFC_THRESHOLDS[1], **fabric)


def scenario_text(kind: str, tiers: int, cc: str, pfc: bool = False) -> str:
    return SCENARIOS[tiers].format(cc=cc, workload=WORKLOADS[kind], pfc="true" if pfc else "false",
                                   xoff=PFC_THRESHOLDS[0], xon=PFC_THRESHOLDS[1])


def _run_scenario(e: Experiment):
    tiers = e.params["tiers"]
    net, cfg, messages, counters = _simulate_text(scenario_text(e.kind, tiers, e.transport.cc, e.transport.pfc),
                                                  f"claims-{tiers}tier.yaml")
    return net, cfg, messages, {"topology": "fat_tree" if tiers == 3 else "leaf_spine"}, counters


def _simulate_text(text: str, name: str, messages: list | None = None):
    """One scenario text (one variant, no `variants`) on the program network (`testbed sim`'s
    default: the scenario's P4 program in every switch), to the end, with its own workload's
    messages or `messages`; its switches' counters."""
    from testbed.scenario.workload import scenario_messages
    from testbed.scenario import parse_scenario
    from testbed.simulation.run import simulate_program, transport_config

    scenario = parse_scenario(text, name)
    messages = scenario_messages(scenario) if messages is None else messages
    net, info = simulate_program(scenario, messages, until_s=300.0)
    return net, transport_config(scenario), messages, program_counters(net, info)


_RUNNERS = {"incast": _run_incast, "mixed": _run_mixed, "load": _run_load,
            "permutation": _run_scenario, "alltoall": _run_scenario}
