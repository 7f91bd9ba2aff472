"""A pipeline-parallel training job as a workload: activations and gradients between stages.

The model (docs: scenarios/README.md, "Pipeline jobs", with sources):

* The job's N ranks (hosts, in order) are `stages` p stages of N / p
  replicas: stage s of replica r is rank s x (N / p) + r, as Megatron-LM
  lays out its pipeline groups when tensor parallelism is 1 (data-parallel
  ranks vary fastest).  Each replica's pipeline runs on its own.
* An iteration is `microbatches` m micro-batches.  On each stage, a
  micro-batch's forward F_i takes F / (p m) and its backward B_i B / (p m)
  (F, B: training.compute_times, the whole model's forward and backward of
  one iteration's batch, jitter and the slow GPU included).
* The order of a stage's passes is the schedule's.  `1f1b` (Megatron-LM's
  non-interleaved schedule, PipeDream-Flush): stage s runs min(p - s - 1, m)
  warm-up forwards, then one forward and one backward in turn, then the
  remaining backwards.  `gpipe`: every forward, then every backward, last
  micro-batch first.
* F_i at stage s > 0 needs its activation from stage s - 1 and sends its own
  to s + 1 (s < p - 1); B_i at s < p - 1 needs its gradient from s + 1 and
  sends one to s - 1 (s > 0).  Each is one message of `tokens` x `hidden`
  values of the model's dtype (the micro-batch's sequence x micro-batch x
  hidden tensor Megatron-LM sends), named `<job>#<k>.f<i>.s<s>.r<r>` (the
  activation from stage s) or `.b<i>.s<s>.r<r>` (the gradient from s).
* After its last backward, the first and the last stage of a replica
  all-reduce the tied embedding's gradient (`vocab` x `hidden` values, a
  ring of the two, `<job>#<k>.e.r<r>`), as Megatron-LM does when the input
  embedding and the output layer share their weights (its default).  The
  next iteration starts at a stage once its last pass's send has left and,
  on the first and last stage, the all-reduce is done.
* A pass starts once the pass before it on its stage has ended and its
  input has arrived.  A pass that sends nothing (the last stage's forwards,
  the first stage's backwards) is carried by the next message the stage
  sends, in its MessageSpec.compute_chain, so every pass is timed exactly.

Nothing here does I/O: a Job + seed -> MessageSpecs.
"""

from __future__ import annotations

import re
from dataclasses import replace

from testbed.host import collectives
from testbed.host.message import MessageSpec
from testbed.host.training import Job, compute_times

_NAME = re.compile(r"^(?P<job>.+)#(?P<iteration>\d+)\.(?:[fb]\d+\.s\d+|e)\.r\d+$")
_Pass = tuple[str, int]  # ("F" | "B", micro-batch)


def order(schedule: str, stages: int, stage: int, microbatches: int) -> list[_Pass]:
    """The passes of one iteration at `stage`, in the order it runs them (module docstring)."""
    m = microbatches
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in reversed(range(m))]
    warmup = min(stages - stage - 1, m)
    out: list[_Pass] = [("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        out += [("F", warmup + i), ("B", i)]
    return out + [("B", i) for i in range(m - warmup, m)]


def transfer_name(job_name: str, iteration: int, kind: str, microbatch: int, stage: int, replica: int) -> str:
    """The activation (kind "f") or gradient ("b") of `microbatch` sent by `stage`."""
    return f"{job_name}#{iteration}.{kind}{microbatch}.s{stage}.r{replica}"


def embedding_name(job_name: str, iteration: int, replica: int) -> str:
    return f"{job_name}#{iteration}.e.r{replica}"


def parse_name(collective: str) -> tuple[str, int] | None:
    """(job, iteration) of a pipeline job's transfer or embedding all-reduce; None for any other."""
    match = _NAME.match(collective)
    return None if match is None else (match["job"], int(match["iteration"]))


def activation_bytes(job: Job) -> int:
    p = job.pipe
    assert p is not None
    return p.tokens * p.hidden * job.dtype_bytes


def messages(job: Job, name: str, hosts: list[str], seed: int, start_us: float = 0.0) -> list[MessageSpec]:
    """Every iteration's activations, gradients and embedding all-reduces over `hosts`."""
    pipe = job.pipe
    assert pipe is not None
    p, m = pipe.stages, pipe.microbatches
    replicas = len(hosts) // p
    size = activation_bytes(job)
    ids: dict = {}
    out: list[MessageSpec] = []
    params = collectives.Params("all_reduce", "ring", pipe.vocab * pipe.hidden * job.dtype_bytes)
    embeds = {(r, k): collectives.schedule(embedding_name(name, k, r), [hosts[r], hosts[(p - 1) * replicas + r]],
                                           params, start_us, None, None, ids)
              for r in range(replicas) for k in range(job.iterations)}
    for r in range(replicas):
        ranks = [hosts[s * replicas + r] for s in range(p)]
        for s, host in enumerate(ranks):
            chain: list[tuple[tuple[str, ...], float]] = []  # passes since this stage's last send
            for k in range(job.iterations):
                forward, backward = compute_times(job, seed, name, host, k)
                f_us, b_us = forward / (p * m), backward / (p * m)
                for kind, i in order(pipe.schedule, p, s, m):
                    if kind == "F":
                        source = transfer_name(name, k, "f", i, s - 1, r) if s > 0 else None
                        chain.append(((source,) if source else (), f_us))
                        target = ranks[s + 1] if s < p - 1 else None
                        sent = transfer_name(name, k, "f", i, s, r)
                    else:
                        source = transfer_name(name, k, "b", i, s + 1, r) if s < p - 1 else None
                        chain.append(((source,) if source else (), b_us))
                        target = ranks[s - 1] if s > 0 else None
                        sent = transfer_name(name, k, "b", i, s, r)
                    if target is None:
                        continue
                    msg_id = ids.get((host, target), 0)
                    ids[(host, target)] = msg_id + 1
                    out.append(MessageSpec(src=host, dst=target, msg_id=msg_id, size_bytes=size,
                                           start_us=start_us, collective=sent,
                                           compute_chain=tuple(chain[:-1]), compute_after=chain[-1][0],
                                           compute_us=chain[-1][1]))
                    chain = [((sent,), 0.0)]
                if s in (0, p - 1):
                    embed = embedding_name(name, k, r)
                    for msg in embeds[(r, k)]:
                        if msg.src == host:
                            out.append(replace(msg, compute_chain=tuple(chain[:-1]), compute_after=chain[-1][0],
                                               compute_us=chain[-1][1]))
                    chain = [((embed,), 0.0)]
    return out
