"""One scenario variant on the simulator, written as a run directory.

The network is `testbed.simulation.sim.from_topology` of the variant's topology:
host and fabric links with the scenario's rates, delays and egress buffers,
ECN marking as the scenario configures it (step: mark above k_cells; red:
Kmin/Kmax/Pmax), credit limiting at switch ports when credits are enabled,
spraying by entropy for every spray mode and a per-switch flow hash for
ECMP, and each server's GPU pairs joined by direct local channels at
`links.local`'s rate and delay (no queue limit: the sender's pacer is the
only queue).  Each host runs the real Endpoint and WorkloadRunner; a GPU's
messages to the GPUs of its own server go through a second endpoint, the
local channel's NIC.

The scenario's faults happen on the virtual clock as the emulation carries
them out (`testbed.simulation.faults` on the model, `program_faults` on the
program network: `faults.jsonl`, `reroute.jsonl`, and `faults_not_executed`
in result.json for those the run ended before), and
the run keeps the emulated run's telemetry every 100 ms of the scenario's
clock (`testbed.simulation.telemetry`: `telemetry.jsonl`, each host's
"series" in its stats file).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import yaml

from testbed import progress
from testbed.scenario.workload import scenario_messages
from testbed.host import records as host_records
from testbed.simulation import sim
from testbed.simulation.faults import SimFaults
from testbed.simulation.telemetry import PERIOD_S, Sampler
from testbed.host.config import TransportConfig
from testbed.topo.entropy import layout_of


def transport_config(scenario, ports: int = 1) -> TransportConfig:
    """The host transport the agents of an emulated run of this scenario get (same fields); a NIC of
    `ports` ports has their rate, BDP and reorder window together, as `testbed host` gives it."""
    d, f, t = scenario.derived, scenario.fabric, scenario.transport
    window = t.reorder_window_cells
    cfg = TransportConfig(
        cc=t.cc, cell_size=f.cell_size, link_rate_bps=ports * scenario.links.host.rate_mbps * 1e6,
        bdp_cells=ports * d.bdp_cells, base_rtt_s=d.base_rtt_us / 1e6,
        reorder_window_cells=None if window is None else ports * window,
        entropy_values=f.entropy_values,
        entropy_choice="random" if f.load_balancing == "spray_random_entropy" else "rr",
        entropy_layout=layout_of(scenario.topo).radices_in_order, seed=scenario.seed,
        credit_meter_share=f.credits.rate_fraction if f.credits.enabled else None)
    return cfg.with_scenario(scenario.to_dict()["transport"])


def _link_spec(params, scenario, switch_ecn: bool = True) -> sim.LinkSpec:
    ecn = scenario.fabric.ecn
    marks = None
    if ecn.mode == "step":
        marks = (ecn.k_cells, ecn.k_cells, 1.0)
    elif ecn.mode == "red":
        marks = (ecn.kmin_cells, ecn.kmax_cells, ecn.pmax)
    pfc, credits = scenario.fabric.pfc, scenario.fabric.credits
    return sim.LinkSpec(params.rate_mbps * 1e6, params.delay_us / 1e6, params.buffer_packets,
                        marks if switch_ecn else None, credits.enabled,
                        (pfc.xoff_cells, pfc.xon_cells) if pfc.enabled else None,
                        (credits.rate_fraction, credits.burst_credits, credits.queue_credits))


def build_network(scenario) -> sim.Network:
    cfg = transport_config(scenario)
    lb = "ecmp" if scenario.fabric.load_balancing == "ecmp" else "spray"
    local = scenario.links.local
    local_spec = local_cfg = None
    if local is not None:
        local_spec = sim.LinkSpec(local.rate_mbps * 1e6, local.delay_us / 1e6, 1 << 30, None, False)
        local_cfg = cfg.for_local_channel(local.rate_mbps * 1e6, local.delay_us / 1e6)
    from testbed.emulation.run import ENTROPY_SCHEMES

    net = sim.from_topology(scenario.topo, cfg, _link_spec(scenario.links.host, scenario),
                            _link_spec(scenario.links.fabric, scenario), local_spec, local_cfg,
                            load_balancing=lb, seed=scenario.seed,
                            nic_cfg=lambda ports: transport_config(scenario, ports),
                            nic_choice="entropy" if scenario.fabric.load_balancing in ENTROPY_SCHEMES else "flow")
    telemetry = scenario.fabric.int_telemetry
    if telemetry.enabled:
        net.int_telemetry = (telemetry.sample, telemetry.max_hops)
    return net


SWITCH_MODELS = ("program", "model")


def build_program_network(scenario, grid_s: float | None = None, switch_seed: int | None = None):
    """The scenario on the program network: its P4 program in every switch, on the native engine;
    the engine stops every `grid_s` (default: the scenario's telemetry period); `switch_seed`:
    ProgramNetwork's."""
    from testbed.emulation.run import ENTROPY_SCHEMES
    from testbed.simulation.program_net import ProgramNetwork

    cfg = transport_config(scenario)
    local, local_cfg = scenario.links.local, None
    if local is not None:
        local_cfg = cfg.for_local_channel(local.rate_mbps * 1e6, local.delay_us / 1e6)
    return ProgramNetwork(scenario, cfg, lambda ports: transport_config(scenario, ports), local_cfg,
                          "entropy" if scenario.fabric.load_balancing in ENTROPY_SCHEMES else "flow",
                          grid_s=PERIOD_S * scenario.time_stretch if grid_s is None else grid_s,
                          switch_seed=switch_seed)


def simulate_program(scenario, messages=None, until_s: float | None = None, label: str | None = None,
                     period_s: float | None = None, run_dir: Path | None = None, faults: bool = True):
    """`simulate` on the program network, its faults carried out by `program_faults` (their records
    in `run_dir` when given; `faults=False` leaves them out); with `period_s`, the telemetry
    sampler beside it (info["sampler"]), the network's grid set to `period_s` (the results of a
    run sampled at the scenario's telemetry period, as run_variant does, are those of a run not
    sampled at all)."""
    from testbed.simulation.program_faults import ProgramFaults
    from testbed.simulation.program_telemetry import ProgramSampler

    messages = scenario_messages(scenario) if messages is None else messages
    started = time.monotonic()
    net = build_program_network(scenario, period_s)
    built = time.monotonic()
    net.load(messages, scenario.seed)
    taken = ProgramSampler(net, period_s).start() if period_s is not None else None
    planned = ProgramFaults(scenario if faults else dataclasses.replace(scenario, faults=()), net, run_dir,
                            agents={m.src for m in messages} | {m.dst for m in messages},
                            on_restart=taken.restarted if taken else None).start()
    with progress.task(label or scenario.name, len(messages),
                       progress.planned_cells(messages, scenario.fabric.cell_size)) as shown:
        net.run(scenario.duration_s if until_s is None else until_s,
                on_progress=shown.update if shown is not None else None)
    if taken is not None:
        taken.finish()
    figures = net.switch_figures()
    info = {"driver": "simulator", "target": "simulator", "switches": "program",
            "program": scenario.switch.program, "native_refused": net.fabric.native_refused,
            "virtual_end_s": net.now_s,
            "wall_s": round(time.monotonic() - started, 3), "build_s": round(built - started, 3),
            "events": net.events, "cell_hops": net.cell_hops(), "finished": net.finished(),
            "switch_queue_drops": figures["switch_queue_drops"], "switch_data_drops": figures["switch_data_drops"],
            "max_queue_cells": figures["max_queue_packets"],
            "pause_frames": figures["pause_frames_sent"] if scenario.fabric.pfc.enabled else None,
            "data_cells": net.data_cells(),
            "lost_on_cut_links": planned.lost_on_cut_links(), "lost_on_lossy_links": figures["lost_on_lossy_links"],
            "dropped_by_stopped_switches": planned.dropped_by_stopped_switches(),
            "program_drops": figures["program_drops"], "faults_carried_out": planned.carried_out(),
            **({"tenant_counters": figures["tenants"]} if figures["tenants"] else {}),
            "faults_not_executed": planned.not_executed(net.now_s), "sampler": taken}
    return net, info


def simulate(scenario, messages=None, until_s: float | None = None, label: str | None = None,
             run_dir: Path | None = None, sampler=None, faults: bool = True) -> tuple[sim.Network, dict]:
    """Run the scenario's workload (or `messages`) to completion or `until_s` of virtual time, with
    its faults (testbed.simulation.faults; their records in `run_dir` when given); the current
    progress display (testbed.progress), if any, gets a task named `label` (default: the scenario's
    name) fed the simulator's delivered messages and cells. `sampler(net)`, if given, makes the
    telemetry sampler that runs beside it (returned in info["sampler"]); `faults=False` leaves the
    scenario's faults out (testbed tune measures the healthy fabric)."""
    messages = scenario_messages(scenario) if messages is None else messages
    net = build_network(scenario)
    net.load(messages, scenario.seed)
    taken = sampler(net).start() if sampler is not None else None
    planned = SimFaults(scenario if faults else dataclasses.replace(scenario, faults=()), net, run_dir,
                        on_restart=taken.restarted if taken else None,
                        agents={m.src for m in messages} | {m.dst for m in messages}).start()
    started = time.monotonic()
    with progress.task(label or scenario.name, len(messages),
                       progress.planned_cells(messages, scenario.fabric.cell_size)) as shown:
        net.run(scenario.duration_s if until_s is None else until_s,
                on_progress=shown.update if shown is not None else None)
    if taken is not None:
        taken.finish()
    info = {"driver": "simulator", "target": "simulator", "virtual_end_s": net.sim.now,
            "wall_s": round(time.monotonic() - started, 3), "events": net.sim.events,
            "finished": net.finished(), "switch_queue_drops": net.drops(), "switch_data_drops": net.data_drops(),
            "max_queue_cells": round(net.max_queue_cells(), 3) if net.switch_ports() else 0,
            "pause_frames": net.pause_frames if scenario.fabric.pfc.enabled else None,
            "lost_on_cut_links": sum(p.stats.down_losses for p in net.ports),
            "data_cells": net.data_cells(),
            "lost_on_lossy_links": sum(p.stats.loss_drops for p in net.ports),
            "dropped_by_stopped_switches": sum(s.down_drops for s in net.switches.values())
            + sum(p.stats.flushed for p in net.ports),
            "faults_carried_out": sum(1 for r in planned.records if "error" not in r), "faults_not_executed": planned.not_executed(net.sim.now),
            "sampler": taken}
    return net, info


def simulate_on(switches: str, scenario, messages=None, until_s: float | None = None, label: str | None = None,
                faults: bool = True):
    """`simulate_program` ("program") or `simulate` ("model"): (network, info) of the scenario's
    workload or `messages` to completion or `until_s`, without telemetry."""
    if switches not in SWITCH_MODELS:
        raise ValueError(f"switches {switches!r}: one of {', '.join(SWITCH_MODELS)}")
    run = simulate_program if switches == "program" else simulate
    return run(scenario, messages, until_s=until_s, label=label, faults=faults)


def tenant_reachability(scenario, run_dir: Path) -> dict:
    """Before the traffic of a scenario with tenants: the N x N matrix through its program and plan
    (simulation/reachability.py, whichever switches then carry the traffic), kept in
    reachability.json; its counts and broken pairs for result.json (the report's first lines)."""
    from testbed.simulation.reachability import measure

    matrix = measure(scenario)
    tors = {h: scenario.topo.tors_of(h)[0] for h in scenario.topo.hosts}
    broken = matrix.check(tors)
    (run_dir / "reachability.json").write_text(json.dumps(
        {"tenant_of": matrix.tenant_of, "pairs": [dataclasses.asdict(p) for p in matrix.pairs]}))
    within = [p for p in matrix.pairs if matrix.expected(p.src, p.dst)]
    across = [p for p in matrix.pairs if not matrix.expected(p.src, p.dst)]
    return {"within": len(within), "within_reached": sum(p.delivered for p in within),
            "across": len(across), "across_reached": sum(p.delivered for p in across), "broken": broken[:20]}


def run_variant(variant, run_dir: Path, switches: str = "model") -> dict:
    """Simulate one variant and write its run directory; returns result.json's content.
    `switches`: "program" runs the scenario's P4 program (program_net.py), "model" sim.py's
    hand-written model of fabric.p4."""
    scenario = variant.scenario
    messages = scenario_messages(scenario)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "scenario.resolved.yaml").write_text(yaml.safe_dump(scenario.to_dict(), sort_keys=False))
    agents = run_dir / "agents"
    agents.mkdir(exist_ok=True)
    (agents / "workload.json").write_text(json.dumps({"seed": scenario.seed,
                                                      "messages": [m.to_json() for m in messages]}))
    reachability = tenant_reachability(scenario, run_dir) if scenario.tenants else None
    period = PERIOD_S * scenario.time_stretch  # 100 ms of the scenario's clock
    if switches == "program":
        net, info = simulate_program(scenario, messages, label=variant.name or scenario.name, period_s=period,
                                     run_dir=run_dir)
    else:
        net, info = simulate(scenario, messages, label=variant.name or scenario.name, run_dir=run_dir,
                             sampler=lambda n: Sampler(n, period))
    sampler = info.pop("sampler")
    sampler.write(run_dir / "telemetry.jsonl")
    recs = run_dir / "records"
    recs.mkdir(exist_ok=True)
    for name, host in net.hosts.items():
        runner = host.runner
        host_records.write_jsonl(recs / f"{name}.jsonl", runner.records)
        if host.ep.int_records:  # fabric.int: the hop records the simulator's switches wrote
            host_records.write_jsonl(recs / "int" / f"{name}.jsonl", host.ep.int_records)
        stats = host.ep.stats()
        stats.update({"host": name, "end_reason": "done" if runner.finished() else "timeout",
                      "verify_failures": runner.verify_failures, "messages_pending": len(runner.pending),
                      "local_channel": host.local.stats() if host.local is not None else None,
                      "series": sampler.host_series(name, scenario.fabric.cell_size)})
        (recs / f"{name}.stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True, default=str))
    result = {"variant": variant.name, **info}
    if reachability is not None:
        result["reachability"] = reachability
    (run_dir / "result.json").write_text(json.dumps(result, indent=1))
    return result
