"""From a scenario's workload phases to the messages the host agents send.

Phases are resolved by the scenario layer (hosts, pairs and senders are
concrete); this turns them into MessageSpecs with start times relative to
the traffic epoch.  `pingall` phases are connectivity checks run by the
run lifecycle itself and produce no messages.
"""

from __future__ import annotations

import dataclasses

from testbed.host import collectives, moe, pipeline, training, workloads
from testbed.host.workloads import MessageSpec


def _ring(phase, start_us: float) -> list[MessageSpec]:
    """`count` back-to-back data-carrying ring all-reduce iterations (`collectives`):
    iteration k+1 of a rank starts once it has applied all of iteration k."""
    params = collectives.Params("all_reduce", "ring", phase.message_bytes)
    ids: dict = {}
    out: list[MessageSpec] = []
    last_in: dict = {}
    for k in range(phase.count):
        msgs = collectives.schedule(f"{phase.name}#{k}", list(phase.hosts), params, start_us,
                                    first_deps=last_in, ids=ids)
        last_in = {}
        for m in msgs:
            last_in.setdefault(m.dst, []).append((m.src, m.msg_id))
        out += msgs
    return out


def _collective(phase, start_us: float) -> list[MessageSpec]:
    if phase.tuned:  # algorithm auto: the tuning table's choice per size
        params = [collectives.Params(phase.op, alg, size, channels, chunk, phase.scheduling == "dynamic")
                  for size, (alg, channels, chunk) in zip(phase.sizes_bytes, phase.tuned)]
    else:
        params = [collectives.Params(phase.op, phase.algorithm, size, phase.channels, phase.chunk_bytes,
                                     phase.scheduling == "dynamic")
                  for size in phase.sizes_bytes]
    return collectives.sequence(phase.name, list(phase.hosts), params, start_us,
                                [list(s) for s in phase.servers] or None, phase.count)


def _poisson(phase, start_us: float) -> list[MessageSpec]:
    """workloads.poisson's arrivals (from time 0) moved to the phase's start."""
    arrivals = workloads.poisson(list(phase.hosts), phase.load, phase.link_rate_bps, phase.message_bytes,
                                 phase.message_wire_bytes, phase.arrivals_s, phase.arrivals_seed, name=phase.name)
    return [dataclasses.replace(m, start_us=m.start_us + start_us) for m in arrivals]


def phase_messages(phase, seed: int) -> list[MessageSpec]:
    start_us = phase.start_s * 1e6
    if phase.kind == "pingall":
        return []
    if phase.kind == "incast":
        return workloads.incast(list(phase.senders), phase.receiver, phase.message_bytes, start_us,
                                messages_per_sender=phase.count, name=phase.name)
    if phase.kind == "permutation":
        return [MessageSpec(src, dst, k, phase.message_bytes, start_us, collective=phase.name,
                            collective_kind="permutation")
                for k in range(phase.count) for src, dst in phase.pairs]
    if phase.kind == "all_to_all":
        rounds = [workloads.all_to_all(list(phase.hosts), phase.message_bytes, seed + k,
                                       phase.zipf_s or 0.0, start_us, name=f"{phase.name}#{k}")
                  for k in range(phase.count)]
        return workloads.combine(*rounds)
    if phase.kind == "poisson":
        return _poisson(phase, start_us)
    if phase.kind == "stream":
        return workloads.stream(list(phase.senders), phase.receiver, phase.message_bytes, phase.count,
                                phase.interval_s * 1e6, start_us, name=phase.name)
    if phase.kind == "ring_allreduce":
        return _ring(phase, start_us)
    if phase.kind == "collective":
        return _collective(phase, start_us)
    if phase.kind == "training" and phase.job.pipe is not None:
        return pipeline.messages(phase.job, phase.name, list(phase.hosts), seed, start_us)
    if phase.kind == "training" and phase.job.moe is not None:
        return moe.messages(phase.job, phase.name, list(phase.hosts), seed, start_us)
    if phase.kind == "training":
        return training.messages(phase.job, phase.name, list(phase.hosts), seed, start_us,
                                 [list(s) for s in phase.servers] or None)
    raise ValueError(f"unknown workload phase kind {phase.kind!r}")


def scenario_messages(scenario) -> list[MessageSpec]:
    """All phases' messages, msg_ids renumbered per flow across phases."""
    return workloads.combine(*(phase_messages(p, scenario.seed) for p in scenario.workload))


def peers_document(scenario) -> dict:
    """The agents' peers file: every host's address and, with servers of several GPUs, the local
    channel (its rate, delay and each GPU's same-server peers; `host.agent.load_local`)."""
    topo = scenario.topo
    doc: dict = {"peers": {h: topo.node(h).ip for h in topo.hosts}}
    local = scenario.links.local
    if local is not None and topo.local_links:
        doc["local"] = {"rate_mbps": local.rate_mbps, "delay_us": local.delay_us,
                        "peers": {h: topo.local_peers(h) for h in topo.hosts}}
    return doc
