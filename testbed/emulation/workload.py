"""From a scenario's workload phases to the messages the host agents send.

Phases are resolved by the scenario layer (hosts, pairs and senders are
concrete); this turns them into MessageSpecs with start times relative to
the traffic epoch.  `pingall` phases are connectivity checks run by the
run lifecycle itself and produce no messages.
"""

from __future__ import annotations

from testbed.host import workloads
from testbed.host.workloads import MessageSpec


def _ring(phase, start_us: float) -> list[MessageSpec]:
    """`count` back-to-back ring all-reduce iterations: iteration k+1 of a
    rank starts when its predecessor's last step of iteration k arrived."""
    hosts = list(phase.hosts)
    n = len(hosts)
    steps = 2 * (n - 1)
    chunk = max(1, -(-phase.message_bytes // n))
    out = []
    for k in range(phase.count):
        for step in range(steps):
            for i, src in enumerate(hosts):
                msg_id = k * steps + step
                prev = hosts[(i - 1) % n]
                deps = ((prev, msg_id - 1),) if msg_id else ()
                out.append(MessageSpec(src, hosts[(i + 1) % n], msg_id, chunk, start_us, deps,
                                       collective=f"{phase.name}#{k}", collective_kind="allreduce",
                                       collective_bytes=phase.message_bytes, ranks=n))
    return out


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
    if phase.kind == "ring_allreduce":
        return _ring(phase, start_us)
    raise ValueError(f"unknown workload phase kind {phase.kind!r}")


def scenario_messages(scenario) -> list[MessageSpec]:
    """All phases' messages, msg_ids renumbered per flow across phases."""
    return workloads.combine(*(phase_messages(p, scenario.seed) for p in scenario.workload))
