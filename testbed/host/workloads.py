"""Pure workload generation: parameters + seed -> list of messages.

Each message names its source, destination, size, earliest start and the
messages that must have been delivered *to its source* first (so ring
all-reduce steps are dependent, as in a real collective). msg_ids are
numbered per (src, dst) flow in list order. Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field, replace

from numpy.random import PCG64  # imported here: a first use inside the packet loop cost 6 ms

from testbed.errors import TestbedError
from testbed.host.message import MessageSpec


class WorkloadError(TestbedError):
    """Workload parameters that cannot produce traffic."""


@dataclass
class _Numberer:
    next_id: dict[tuple[str, str], int] = field(default_factory=dict)

    def __call__(self, src: str, dst: str) -> int:
        key = (src, dst)
        n = self.next_id.get(key, 0)
        self.next_id[key] = n + 1
        return n


def _check(hosts: list[str], size: int, minimum: int = 2) -> None:
    if len(hosts) < minimum:
        raise WorkloadError(f"workload needs at least {minimum} hosts, got {len(hosts)}: {hosts}")
    if len(set(hosts)) != len(hosts):
        raise WorkloadError(f"workload hosts repeat: {hosts}")
    if size < 1:
        raise WorkloadError(f"message size {size} B must be at least 1 B")


def incast(senders: list[str], receiver: str, size_bytes: int, start_us: float = 0.0,
           messages_per_sender: int = 1, gap_us: float = 0.0, name: str = "incast") -> list[MessageSpec]:
    """N:1: every sender sends `messages_per_sender` messages to one receiver."""
    _check(senders + [receiver], size_bytes)
    ids = _Numberer()
    out = []
    for k in range(messages_per_sender):
        for s in senders:
            out.append(MessageSpec(s, receiver, ids(s, receiver), size_bytes, start_us + k * gap_us,
                                   collective=name, collective_kind="incast"))
    return out


def permutation(hosts: list[str], size_bytes: int, seed: int, start_us: float = 0.0,
                name: str = "permutation") -> list[MessageSpec]:
    """Every host sends to exactly one other host and receives from one (a derangement)."""
    _check(hosts, size_bytes)
    rng = random.Random(seed)
    while True:
        perm = hosts[:]
        rng.shuffle(perm)
        if all(a != b for a, b in zip(hosts, perm)):
            break
    return [MessageSpec(a, b, 0, size_bytes, start_us, collective=name, collective_kind="permutation")
            for a, b in zip(hosts, perm)]


def all_to_all(hosts: list[str], size_bytes: int, seed: int = 0, zipf_s: float = 0.0,
               start_us: float = 0.0, name: str = "alltoall") -> list[MessageSpec]:
    """Each rank sends S(N-1)/N bytes spread over the others; zipf_s > 0 skews it toward popular ranks."""
    _check(hosts, size_bytes)
    n = len(hosts)
    order = hosts[:]
    random.Random(seed).shuffle(order)
    weight = {h: 1.0 / (i + 1) ** zipf_s for i, h in enumerate(order)}
    out = []
    for src in hosts:
        others = [d for d in hosts if d != src]
        total = sum(weight[d] for d in others)
        budget = size_bytes * (n - 1) / n
        for dst in others:
            size = max(1, round(budget * weight[dst] / total))
            out.append(MessageSpec(src, dst, 0, size, start_us, collective=name,
                                   collective_kind="alltoall", collective_bytes=size_bytes, ranks=n))
    return out


def poisson(hosts: list[str], load: float, link_rate_bps: float, size_bytes: int, message_wire_bytes: int,
            duration_s: float, seed: int | str, name: str = "poisson") -> list[MessageSpec]:
    """Open-loop offered load: each host starts `size_bytes` messages to uniformly random other
    hosts at exponential intervals whose mean makes its offered load `load` of its link rate
    (in the wire bytes one message takes, `message_wire_bytes`), from time 0 to `duration_s`."""
    _check(hosts, size_bytes)
    if not 0 < load <= 1:
        raise WorkloadError(f"offered load {load} must be in (0, 1] of the link rate")
    rng = random.Random(seed)
    mean_gap_s = message_wire_bytes * 8 / (load * link_rate_bps)
    ids = _Numberer()
    out = []
    for src in hosts:
        others = [h for h in hosts if h != src]
        t = rng.expovariate(1 / mean_gap_s)
        while t < duration_s:
            dst = rng.choice(others)
            out.append(MessageSpec(src, dst, ids(src, dst), size_bytes, t * 1e6, collective=name,
                                   collective_kind="poisson"))
            t += rng.expovariate(1 / mean_gap_s)
    return out


def stream(senders: list[str], receiver: str, size_bytes: int, count: int, interval_us: float,
           start_us: float = 0.0, name: str = "stream") -> list[MessageSpec]:
    """`count` messages into one receiver, one every `interval_us`, the senders taking turns:
    short messages at a steady pace (the mice among testbed/claims/experiments.py's elephants)."""
    _check(senders + [receiver], size_bytes)
    ids = _Numberer()
    return [MessageSpec(src, receiver, ids(src, receiver), size_bytes, start_us + k * interval_us,
                        collective=name, collective_kind="stream")
            for k in range(count) for src in [senders[k % len(senders)]]]


def ring_allreduce(hosts: list[str], size_bytes: int, start_us: float = 0.0,
                   name: str = "allreduce") -> list[MessageSpec]:
    """2(N-1) dependent steps; in each, rank i sends S/N to rank i+1 after receiving step-1 from i-1.

    The data-carrying ring of `collectives` (one channel, one piece per segment):
    the bytes are the ranks' XOR-reduced buffers, verified by every receiver.
    """
    from testbed.host import collectives  # numpy's buffers: only a ring all-reduce needs them

    _check(hosts, size_bytes)
    if size_bytes < len(hosts):
        raise WorkloadError(f"ring all-reduce of {size_bytes} B cannot give each of {len(hosts)} ranks a byte")
    return collectives.schedule(name, list(hosts), collectives.Params("all_reduce", "ring", size_bytes),
                                start_us)


def combine(*workloads: list[MessageSpec]) -> list[MessageSpec]:
    """Concatenate workloads, renumbering msg_ids per flow and rewriting dependencies."""
    ids = _Numberer()
    out = []
    for wl in workloads:
        mapping: dict[tuple[str, str, int], int] = {}
        for m in wl:
            mapping[(m.src, m.dst, m.msg_id)] = ids(m.src, m.dst)
        for m in wl:
            deps = tuple((s, mapping[(s, m.src, mid)]) for s, mid in m.deps)
            after = tuple((s, mapping[(s, m.dst, mid)]) for s, mid in m.apply_after)
            out.append(replace(m, msg_id=mapping[(m.src, m.dst, m.msg_id)], deps=deps, apply_after=after))
    return out


def payload(seed: int, src: str, dst: str, msg_id: int, size: int) -> bytes:
    """The deterministic bytes of a message, so a receiver can verify them independently: the
    raw output of a PCG64 generator seeded from (seed, src, dst, msg_id). It costs about 0.3 ms
    per MiB (Mersenne Twister's randbytes, 3 ms), which an agent pays when a message starts and
    again when one is delivered, inside its packet loop."""
    key = hashlib.sha256(f"{seed}/{src}/{dst}/{msg_id}".encode()).digest()
    words = PCG64(int.from_bytes(key[:16], "little")).random_raw((size + 7) // 8)
    return words.tobytes()[:size]


def for_host(messages: list[MessageSpec], host: str) -> list[MessageSpec]:
    return [m for m in messages if m.src == host]
