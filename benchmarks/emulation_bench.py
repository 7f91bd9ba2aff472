"""The emulation as it runs: fabric processes beside one process per switch, in one run.

Figures, for one process per switch and for fabric processes (1 and 2), same machine, same run:
  * start-up time of a k=4 and a k=8 fat-tree: from nothing to every switch configured
    (network built, switches started and ready, pipelines and plans pushed, real-time set);
  * CPU per cell-hop inside a k=4 fat-tree permutation (spray_rr_entropy, no congestion
    control) at one rate that one-process-per-switch holds: the switch processes' CPU from
    the agents' start to teardown over the packets their traffic managers took (the unit of
    `result.json` costs), with each variant's fidelity verdict and goodput over its ideal;
  * the fastest host link rate the pre-flight check then plans for a k=4 and a k=8 fat-tree
    with those measured costs, and a fabric-process run of the k=4 permutation at that rate,
    with its fidelity verdict.
Needs root and the Mininet Debian ships; takes the machine's run lock like `testbed run`.
Takes about 12 minutes on 2 cores.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIT_SHARE = 0.8  # of the planned rate, as the integration tests

SCENARIO = """
name: {name}
duration_s: 30
seed: 1
topology: {{kind: fat_tree, k: {k}}}
links: {{rate_mbps: 5, delay_us: 1000}}
switch: {{target: builtin, processes: {processes}}}
fabric: {{load_balancing: spray_rr_entropy}}
transport: {{cc: none}}
workload:
  - {{kind: permutation, start_s: 0.5, message_bytes: {size}, count: 1, cross_tor: true}}
"""
MODES = (("per_switch", "one process per switch"), (1, "1 fabric process"), (2, "2 fabric processes"))


def _variant(k: int, processes, size: int, rate_scale: float | None = None):
    from testbed.scenario import expand_variants, parse_scenario
    from testbed.scenario.timescale import slowed

    scenario = parse_scenario(SCENARIO.format(name=f"bench-k{k}", k=k, processes=processes, size=size),
                              f"bench-k{k}.yaml")
    (variant,) = expand_variants(scenario)
    if rate_scale is not None and rate_scale < 1:
        variant = dataclasses.replace(variant, scenario=slowed(variant.scenario, rate_scale))
    return variant


def _run(variant, directory: Path):
    """(result, summary, seconds from start to every switch configured)."""
    from testbed.emulation.run import VariantRun
    from testbed.telemetry.summary import summarize_variant

    marks = {}
    started = time.monotonic()

    def progress(message: str) -> None:
        if message.startswith("traffic:") or message.startswith("ping-all"):
            marks.setdefault("configured", time.monotonic() - started)

    run_dir = directory / f"{variant.scenario.name}-{variant.scenario.switch.processes}"
    result = VariantRun(variant, run_dir, REPO, progress=progress).run()
    summary = summarize_variant(run_dir, variant.scenario.topo, variant.scenario)
    return result, summary, marks.get("configured")


def _per_packet(costs: dict) -> str:
    if costs["switch_us_per_packet"] is None:
        return f"unmeasured ({costs.get('switch_cost_unmeasured')})"
    return f"{costs['switch_us_per_packet']} us"


def _verdict(summary) -> str:
    f = summary["fidelity"]
    return (f"fidelity {'lost' if f['behind_real_time'] else 'kept'} (p99 switch lag "
            f"{f['worst_p99_dequeue_lag_us']} us, host lateness {f['worst_p99_pacer_lateness_us']} us)")


def _goodput(summary) -> str:
    ratio = (summary.get("measured_over_ideal") or {}).get("goodput")
    done = f"{summary['messages_completed']}/{summary['messages_planned']} messages"
    return f"{done}, goodput {ratio:.2f} of ideal" if ratio is not None else f"{done}, goodput n/a"


def run() -> list[str]:
    if os.geteuid() != 0:
        return ["emulation_bench: skipped: needs root (namespaces, veth pairs, real-time scheduling)"]
    from testbed.scenario import capacity

    lines = []
    with tempfile.TemporaryDirectory(prefix="emulation-bench-") as tmp:
        directory = Path(tmp)
        for k in (4, 8):
            for processes, label in (MODES[0], MODES[2]):
                _, _, startup = _run(_variant(k, processes, 1024), directory)
                lines.append(f"k={k} fat-tree ({5 * k * k // 4} switches, {k ** 3 // 4} hosts), {label}: "
                             f"start-up {startup:.1f} s")
        reference = _variant(4, "per_switch", 262144).scenario
        per_switch_costs = capacity.Costs(capacity.DEFAULT_SWITCH_US_PER_PACKET["per_switch"])
        scale = capacity.fitting_rate(reference, per_switch_costs) * FIT_SHARE / reference.links.host.rate_mbps
        measured = {}
        for processes, label in MODES:
            variant = _variant(4, processes, 262144, scale)
            result, summary, _ = _run(variant, directory)
            measured[processes] = result.costs["switch_us_per_packet"]
            lines.append(
                f"k=4 permutation at {variant.scenario.links.host.rate_mbps:.3g} Mbit/s, {label}: "
                f"{_per_packet(result.costs)} switch CPU per cell-hop over "
                f"{result.costs['switch_packets']:,} cell-hops, {result.costs['agent_us_per_datagram']} us per "
                f"agent datagram; {_verdict(summary)}; {_goodput(summary)}")
        auto = capacity.auto_fabric_processes()
        fabric_costs = capacity.Costs(measured[auto], mode="fabric")
        for k in (4, 8):
            s = _variant(k, auto, 262144).scenario
            lines.append(f"k={k}: the pre-flight check plans {capacity.fitting_rate(s, fabric_costs):.3g} Mbit/s "
                         f"with {auto} fabric process(es) (auto) at the measured {measured[auto]} us per cell-hop "
                         f"(one process per switch at {measured['per_switch']} us: "
                         f"{capacity.fitting_rate(s, capacity.Costs(measured['per_switch'])):.3g} Mbit/s)")
        s = _variant(4, auto, 262144).scenario
        scale = capacity.fitting_rate(s, fabric_costs) * FIT_SHARE / s.links.host.rate_mbps
        variant = _variant(4, auto, 262144, scale)
        result, summary, _ = _run(variant, directory)
        lines.append(f"k=4 permutation at {variant.scenario.links.host.rate_mbps:.3g} Mbit/s in {auto} fabric "
                     f"process(es): "
                     f"{_verdict(summary)}; {_goodput(summary)}; {result.costs['switch_us_per_packet']} us per cell-hop")
    return lines
