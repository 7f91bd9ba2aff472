"""The fabric loop's own CPU per cell-hop: a whole planned k=4 fat-tree in one process.

Every switch of the fat-tree runs fabric.p4 with the controller's plan (routes, spraying
groups, TM link rates and delays) inside one FabricLoop; every fabric cable is in memory and
every host port is a stand-in that keeps what it is sent. Each host sends DATA cells to its
permutation partner at the links' rate (entropy cycling, as spray_rr_entropy senders do), for
a fixed amount of model time, and the loop is driven in model time (a manual clock): no
syscalls, no select(), no other process. The figure is the CPU the loop spends per packet its
traffic managers take (= per cell-hop, the unit the emulation's costs use), and every cell must
reach its destination host (the benchmark fails otherwise). This is the floor of what a
fabric process costs per cell-hop; `testbed run` measures the same unit inside a real run
(`result.json` costs), where ports, wake-ups and the machine's other processes add to it.
"""

from __future__ import annotations

import time

SCENARIO = """
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: %g, delay_us: 1000}
fabric: {load_balancing: spray_rr_entropy, cell_size: 1024}
workload: [{kind: pingall}]
"""
RATE_MBPS = 20
MODEL_TIME_S = 0.5


def build(rate_mbps: float, backend: str = "python"):
    from testbed.emulation.model_fabric import build as build_model

    return build_model(SCENARIO % rate_mbps, "fabric_bench.yaml", backend=backend)


def senders(scenario, topology, fabric=None):
    """(edge switch, its port, frames cycling the entropy) per host, to a partner in another pod."""
    from testbed.emulation.model_fabric import ModelFabric, data_cells

    model = fabric or ModelFabric(scenario, topology, {}, None, None)
    hosts = topology.hosts
    out = []
    for i, src in enumerate(hosts):
        dst = hosts[(i + len(hosts) // 2) % len(hosts)]
        edge, port = model.tor_of(src)
        out.append((edge, port, data_cells(model, src, dst, i + 1)))
    return out


def drive(rate_mbps: float = RATE_MBPS, model_time_s: float = MODEL_TIME_S, backend: str = "python") -> dict:
    fabric = build(rate_mbps, backend)
    flows = senders(fabric.scenario, fabric.topology)
    hosts = fabric.topology.hosts
    gap_ns = int(len(flows[0][2][0]) * 8e3 / rate_mbps)  # one cell's time on the host link
    end_ns = int(model_time_s * 1e9)
    sent = 0
    started = time.process_time()
    now = 0
    while now < end_ns:
        for k, (_, _, frames) in enumerate(flows):
            fabric.inject(hosts[k], frames[sent // len(flows) % len(frames)], now)
            sent += 1
        now = fabric.run_until(now + gap_ns - 1, now) + 1  # every event before the next injection
    drain_until = now + 200_000_000
    while fabric.next_due_ns() is not None and now < drain_until:
        now = fabric.run_until(min(fabric.next_due_ns(), drain_until), now)
    cpu = time.process_time() - started
    hops = fabric.tm_totals()["enqueued"]
    delivered = fabric.delivered()
    return {"sent": sent, "delivered": delivered, "cell_hops": hops, "cpu_s": cpu,
            "us_per_cell_hop": cpu * 1e6 / hops if hops else None}


def run() -> list[str]:
    from testbed.p4model.backend.native import NativeBuildError, NativeUnsupported, compiler

    lines = []
    for backend in ("python", "native"):
        if backend == "native" and compiler() is None:
            lines.append("native engine: no C compiler (cc or gcc), not measured")
            continue
        try:
            r = drive(backend=backend)
        except (NativeUnsupported, NativeBuildError) as error:
            lines.append(f"native engine: not measured: {error}")
            continue
        if r["delivered"] != r["sent"]:
            raise AssertionError(f"{backend}: {r['sent']} cells sent but {r['delivered']} delivered")
        lines.append(f"{backend}: k=4 fat-tree, 20 switches in one fabric loop, spray_rr_entropy, 16 hosts at "
                     f"{RATE_MBPS} Mbit/s for {MODEL_TIME_S} s of model time: {r['cell_hops']:,} cell-hops, every "
                     f"one of {r['sent']:,} cells delivered")
        lines.append(f"{backend}: CPU per cell-hop (pipeline, traffic manager, hand-off; no ports, no wake-ups): "
                     f"{r['us_per_cell_hop']:.2f} us")
    return lines
