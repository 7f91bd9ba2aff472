"""A data-parallel training job as a workload: compute as time, gradients all-reduced in buckets.

The model, as PyTorch's DistributedDataParallel (DDP) runs one:

* Every GPU (host, one rank) holds the whole model: `parameters` gradients of
  `dtype_bytes` each, split evenly over `layers` (a layer is one gradient
  tensor, the unit DDP packs into buckets).
* An iteration on rank r is forward (F) then backward (B) of its own batch.
  Backward produces the layers' gradients last layer first, one layer every
  B / layers.  F and B are the job's times, each times (1 + jitter x u) with u
  uniform in [-1, 1], drawn per (rank, iteration) from the run's seed; the
  slow GPU's are times `slow_factor` too.
* Buckets (DDP's Reducer once it has rebuilt its buckets in the order the
  gradients became ready, after the first iteration): walking the layers in
  the order backward produces them, each is added to the open bucket, which
  closes once it holds at least its cap: `first_bucket_bytes` for the first
  bucket (DDP's 1 MiB, so the first all-reduce starts early), `bucket_bytes`
  after it (DDP's 25 MiB bucket_cap_mb); what is left at the end is the last
  bucket.  `small_bucket: last` is DDP_SET_LAST_BUCKET_CAP=1: the same walk
  from the other end, so the small bucket is the last one reduced (the one
  whose all-reduce starts when backward ends).
* A bucket is ready on rank r when backward has produced its last layer:
  F + B x (layers in it and the buckets before) / layers after the iteration's
  compute began.  Its all-reduce (a data-carrying collective of
  collectives.py, named `<job>#<iteration>.b<bucket>`) starts at r then: every
  message r sends in it waits for that compute (MessageSpec.compute_us), so
  the all-reduce overlaps the rest of backward.  As NCCL runs the collectives
  of one communicator one after the other on its stream, a bucket's
  all-reduce also starts at r only once the previous bucket's is done there
  (every message of it to r applied: MessageSpec.deps, as collectives.sequence
  chains its sizes).
* Rank r's next forward starts once every bucket of its iteration is reduced
  at r (MessageSpec.compute_after names them; the optimizer step is taken as
  free), so an all-reduce still running when backward ends delays the next
  iteration: that delay is the exposed communication.

A job with experts (`Job.moe`) is expert-parallel instead (host/moe.py).

Nothing here does I/O: parameters + seed -> MessageSpecs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

from testbed.host import collectives
from testbed.host.message import MessageSpec

MIB = 1 << 20
DDP_BUCKET_BYTES = 25 * MIB  # torch DDP bucket_cap_mb=25
DDP_FIRST_BUCKET_BYTES = 1 * MIB  # torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
_NAME = re.compile(r"^(?P<job>.+)#(?P<iteration>\d+)\.b(?P<bucket>\d+)$")
# an MoE job's all-to-all: step `index` of the iteration, in expert-parallel group `group`
_STEP = re.compile(r"^(?P<job>.+)#(?P<iteration>\d+)\.a(?P<index>\d+)(?:\.g(?P<group>\d+))?$")


@dataclass(frozen=True)
class Moe:
    """An MoE model's numbers (host/moe.py turns them into all-to-all sizes).

    Every one of the job's `layers` is a transformer block whose feed-forward
    part is `experts` experts, each token routed to `top_k` of them; the
    experts are spread evenly over `expert_degree` ranks (one all-to-all
    group); each rank routes `tokens` tokens (micro-batch x sequence) of
    `hidden` values per layer and iteration.  `capacity_factor` None is a
    dropless dispatcher (Megatron-LM's alltoall): the routed tokens only;
    a factor pads every expert's input to its capacity (DeepSpeed-MoE,
    GShard), at least `min_capacity` tokens.  `expert_share`: the fraction
    of a layer's compute its experts take."""

    experts: int
    expert_degree: int
    tokens: int
    hidden: int
    top_k: int
    expert_share: float
    capacity_factor: float | None = None
    min_capacity: int = 0


@dataclass(frozen=True)
class Pipe:
    """A pipeline-parallel job's numbers (host/pipeline.py): `stages` stages, `microbatches`
    micro-batches per iteration in the order of `schedule` ("1f1b" | "gpipe"), `tokens` tokens of
    `hidden` values per micro-batch's activation, a tied embedding of `vocab` x `hidden` values."""

    stages: int
    microbatches: int
    tokens: int
    hidden: int
    vocab: int
    schedule: str = "1f1b"


@dataclass(frozen=True)
class Job:
    """A data-parallel job's numbers; times in microseconds on the run's clock."""

    iterations: int
    parameters: int
    dtype_bytes: int
    layers: int
    forward_us: float
    backward_us: float
    jitter: float = 0.0  # each compute time is times (1 + jitter x u), u uniform in [-1, 1]
    slow_host: str | None = None  # the slow GPU, whose compute takes slow_factor times as long
    slow_factor: float = 1.0
    bucket_bytes: int = DDP_BUCKET_BYTES
    first_bucket_bytes: int = DDP_FIRST_BUCKET_BYTES
    algorithm: str = "ring"
    channels: int = 1
    chunk_bytes: int = 0
    small_bucket: str = "first"  # "first" (DDP's default) | "last" (DDP_SET_LAST_BUCKET_CAP=1)
    scheduling: str = "static"  # an MoE job's all-to-alls: "dynamic" channel scheduling (host/app.py)
    moe: Moe | None = None  # an MoE model: expert-parallel all-to-alls (host/moe.py), no buckets
    pipe: Pipe | None = None  # pipeline stages: point-to-point sends (host/pipeline.py), no buckets

    @property
    def gradient_bytes(self) -> int:
        return self.parameters * self.dtype_bytes


@dataclass(frozen=True)
class Bucket:
    size_bytes: int
    layers_done: int  # layers whose gradients backward has produced once this bucket is full


def layer_bytes(job: Job) -> list[int]:
    """Each layer's gradient bytes, first layer first (the parameters split as evenly as they go)."""
    base, extra = divmod(job.parameters, job.layers)
    return [(base + (i < extra)) * job.dtype_bytes for i in range(job.layers)]


def _assign(sizes: list[int], first_cap: int, cap: int) -> list[int]:
    """DDP's assignment by size: each bucket closes once it holds at least its cap (the first
    bucket's cap, then the others'); the layers of each bucket, in the order given."""
    counts: list[int] = []
    held = layers = 0
    for size in sizes:
        held += size
        layers += 1
        if held >= (first_cap if not counts else cap):
            counts.append(layers)
            held = layers = 0
    if layers:
        counts.append(layers)
    return counts


def buckets(job: Job) -> list[Bucket]:
    """The gradient buckets in the order backward fills them."""
    ready = list(reversed(layer_bytes(job)))  # backward: the last layer's gradients first
    if job.small_bucket == "last":
        counts = list(reversed(_assign(ready[::-1], job.first_bucket_bytes, job.bucket_bytes)))
    else:
        counts = _assign(ready, job.first_bucket_bytes, job.bucket_bytes)
    out: list[Bucket] = []
    done = 0
    for n in counts:
        out.append(Bucket(sum(ready[done:done + n]), done + n))
        done += n
    return out


def compute_times(job: Job, seed: int, name: str, host: str, iteration: int) -> tuple[float, float]:
    """(forward, backward) of `host` in `iteration`, microseconds: jittered, slowed on the slow GPU."""
    rng = random.Random(f"{seed}/{name}/{host}/{iteration}")
    slow = job.slow_factor if host == job.slow_host else 1.0
    forward = job.forward_us * (1 + job.jitter * rng.uniform(-1, 1)) * slow
    backward = job.backward_us * (1 + job.jitter * rng.uniform(-1, 1)) * slow
    return forward, backward


def bucket_name(job_name: str, iteration: int, bucket: int) -> str:
    return f"{job_name}#{iteration}.b{bucket}"


def parse_name(collective: str) -> tuple[str, int, int] | None:
    """(job, iteration, bucket) of a bucket's all-reduce name; None for any other collective."""
    match = _NAME.match(collective)
    if match is None:
        return None
    return match["job"], int(match["iteration"]), int(match["bucket"])


def step_name(job_name: str, iteration: int, index: int, group: int | None = None) -> str:
    """An MoE job's all-to-all: step `index` of `iteration` in expert-parallel group `group`."""
    return f"{job_name}#{iteration}.a{index}" + ("" if group is None else f".g{group}")


def parse_step(collective: str) -> tuple[str, int, int, int] | None:
    """(job, iteration, step, group) of an MoE job's all-to-all name (group 0 when unnamed); None
    for any other collective."""
    match = _STEP.match(collective)
    if match is None:
        return None
    return match["job"], int(match["iteration"]), int(match["index"]), int(match["group"] or 0)


def messages(job: Job, name: str, hosts: list[str], seed: int, start_us: float = 0.0,
             servers: list[list[int]] | None = None) -> list[MessageSpec]:
    """Every iteration's bucket all-reduces over `hosts` (rank i = hosts[i]), gated by compute."""
    plan = buckets(job)
    ids: dict = {}
    out: list[MessageSpec] = []
    previous: tuple[str, ...] = ()
    for k in range(job.iterations):
        names = tuple(bucket_name(name, k, b) for b in range(len(plan)))
        times = {h: compute_times(job, seed, name, h, k) for h in hosts}
        last_in: dict[str, tuple] = {}  # the previous bucket's messages to each rank
        for b, bucket in enumerate(plan):
            params = collectives.Params("all_reduce", job.algorithm, bucket.size_bytes, job.channels,
                                        job.chunk_bytes)
            msgs = collectives.schedule(names[b], list(hosts), params, start_us, servers, last_in, ids)
            into: dict[str, list] = {}
            for m in msgs:
                forward, backward = times[m.src]
                ready = forward + backward * bucket.layers_done / job.layers
                out.append(replace(m, compute_after=previous, compute_us=ready))
                into.setdefault(m.dst, []).append((m.src, m.msg_id))
            last_in = {h: tuple(v) for h, v in into.items()}
        previous = names
    return out
