"""The simulator's speed: cell-hops per second of wall time and CPU per cell-hop.

Three cases, each run to completion (the benchmark fails if a message is left
undelivered): a 1 MiB permutation on every host of a k=4 and a k=8 fat-tree
(1 KiB cells, spraying by entropy, cc none), and a 15:1 incast of 1 MiB on a
16-host leaf-spine.  Each runs on the program network (`testbed sim`'s default:
the scenario's P4 program on the native engine, program_net.py) and on the
hand-written model of fabric.p4 (sim.py).  A cell-hop is one frame handed
across one switch: the engine's own count on the program network, every frame
a switch port sent on the model.  Wall time includes building the network
(for the program network: compiling nothing, loading the cached program and
writing every switch's tables); the per-hop figures are over the run alone.
`python -m benchmarks.sim_bench k8` runs one case.
"""

from __future__ import annotations

import sys
import time

SCENARIO = """
name: sim_bench_{name}
duration_s: 60
topology: {topology}
links: {{rate_mbps: 100000, delay_us: 1}}
fabric: {{load_balancing: spray_rr_entropy, cell_size: 1024}}
transport: {{cc: {cc}}}
workload: [{workload}]
"""
PERMUTATION = "{kind: permutation, message_bytes: 1048576, count: 1}"
CASES = {  # name: (title, topology, cc, workload)
    "k4": ("1 MiB permutation, k=4 fat-tree (16 hosts, 20 switches)", "{kind: fat_tree, k: 4}", "none", PERMUTATION),
    "k8": ("1 MiB permutation, k=8 fat-tree (128 hosts, 80 switches)", "{kind: fat_tree, k: 8}", "none",
           PERMUTATION),
    "incast15": ("15:1 incast of 1 MiB, 4x2 leaf-spine of 16 hosts, tita",
                 "{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 4}", "tita",
                 "{kind: incast, senders: 15, message_bytes: 1048576, count: 1}"),
}


def scenario_text(name: str) -> str:
    _, topology, cc, workload = CASES[name]
    return SCENARIO.format(name=name, topology=topology, cc=cc, workload=workload)


def measure(text: str, switches: str) -> dict:
    """One case on one switch model: wall and CPU seconds, cell-hops, messages."""
    from testbed.scenario import parse_scenario
    from testbed.scenario.workload import scenario_messages
    from testbed.simulation import run as simrun

    scenario = parse_scenario(text, "sim_bench.yaml")
    messages = scenario_messages(scenario)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if switches == "program":
        net = simrun.build_program_network(scenario)
    else:
        net = simrun.build_network(scenario)
    wall1, cpu1 = time.perf_counter(), time.process_time()
    net.load(messages, scenario.seed)
    net.run(scenario.duration_s)
    wall2, cpu2 = time.perf_counter(), time.process_time()
    if switches == "program":
        hops = net.cell_hops()
    else:
        hops = sum(p.stats.tx_packets for p in net.switch_ports())
    delivered = sum(len(h.runner.received) for h in net.hosts.values())
    return {"build_wall_s": wall1 - wall0, "run_wall_s": wall2 - wall1, "run_cpu_s": cpu2 - cpu1,
            "wall_s": wall2 - wall0, "cell_hops": hops, "messages": len(messages), "delivered": delivered,
            "finished": net.finished()}


def case_lines(name: str) -> list[str]:
    title, text = CASES[name][0], scenario_text(name)
    lines = []
    for switches in ("program", "model"):
        r = measure(text, switches)
        if not r["finished"]:
            raise AssertionError(f"{name} on the {switches}: {r['delivered']} of {r['messages']} messages delivered")
        lines.append(f"{name} {switches:7s}: {title}: {r['wall_s']:.2f} s wall ({r['build_wall_s']:.2f} building), "
                     f"{r['cell_hops']:,} cell-hops, {r['cell_hops'] / r['run_wall_s']:,.0f} cell-hops/s, "
                     f"{r['run_cpu_s'] * 1e6 / r['cell_hops']:.2f} CPU us per cell-hop")
    return lines


def run(names: list[str] | None = None) -> list[str]:
    from testbed.p4model.backend.native import compiler

    if compiler() is None:
        return ["sim_bench: no C compiler (cc or gcc): the program network cannot run, not measured"]
    return [line for name in (names or list(CASES)) for line in case_lines(name)]


if __name__ == "__main__":
    unknown = [n for n in sys.argv[1:] if n not in CASES]
    if unknown:
        sys.exit(f"sim_bench: no case {', '.join(unknown)}; cases: {', '.join(CASES)}")
    for line in run(sys.argv[1:] or None):
        print(line, flush=True)
