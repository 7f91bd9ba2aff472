"""An MoE training job's expert parallelism as a workload: four all-to-alls per MoE layer.

The model (docs: scenarios/README.md, "MoE jobs", with sources):

* The job's ranks (hosts, in order) fall into expert-parallel groups of
  `expert_degree` consecutive ranks (Megatron-LM builds its expert-parallel
  groups from consecutive data-parallel ranks when tensor and pipeline
  parallelism are 1).  Each group holds every expert, `experts /
  expert_degree` on each rank, and runs its all-to-alls on its own.
* Every layer is a transformer block whose feed-forward part is the experts.
  Its forward on rank r: the dense part (attention), then the dispatch
  all-to-all (each token to its top-k experts), the experts' compute, then
  the combine all-to-all (each expert's outputs back to the token's rank).
  Backward, last layer first, runs it in reverse: the combine's gradient
  all-to-all, the experts' backward, the dispatch's gradient all-to-all, the
  dense part's backward.  So an iteration is 4 x layers all-to-alls, each
  behind the compute before it, in this order (step index j):
  dispatch(0), combine(0), ..., dispatch(L-1), combine(L-1), then
  combine-grad(L-1), dispatch-grad(L-1), ..., combine-grad(0), dispatch-grad(0).
* Block sizes, per peer and all-to-all (all four of a layer alike: the
  combine returns what the dispatch sent, the gradients have the
  activations' shape), with T tokens, hidden size H, dtype b bytes, top-k k,
  E experts over e ranks:
    - dropless (`capacity_factor` None, Megatron-LM's alltoall dispatcher with
      a balanced router): T x k / e tokens, so T k H b / e bytes;
    - padded to capacity (DeepSpeed-MoE; Megatron-LM with a capacity factor
      and padding): each expert takes C = max(min_capacity,
      ceil(k T / E x capacity_factor)) tokens, each peer the E / e experts it
      holds, so (E / e) C H b bytes.
  The block a rank keeps for its own experts crosses no link.
* Compute: forward F and backward B per iteration (training.compute_times:
  jitter, the slow GPU), split evenly over the layers, a layer's share
  `expert_share` in its experts; `step_compute` says which part precedes
  which all-to-all.
* A step's messages at r wait for its compute after the previous step is
  done at r (MessageSpec.compute_after), as one CUDA stream runs compute and
  NCCL calls in turn: nothing of an MoE layer's all-to-alls overlaps compute.

Nothing here does I/O: a Job + seed -> MessageSpecs.
"""

from __future__ import annotations

import math
from dataclasses import replace

from testbed.host import collectives
from testbed.host.message import MessageSpec
from testbed.host.training import Job, compute_times, step_name


def block_bytes(job: Job) -> int:
    """The bytes one rank sends each peer of its group in one all-to-all (module docstring)."""
    m = job.moe
    assert m is not None
    row = m.hidden * job.dtype_bytes  # one token's activations
    if m.capacity_factor is None:
        return m.tokens * m.top_k * row // m.expert_degree
    capacity = max(m.min_capacity, math.ceil(m.top_k * m.tokens / m.experts * m.capacity_factor))
    return m.experts // m.expert_degree * capacity * row


def steps(layers: int) -> list[tuple[str, int]]:
    """An iteration's all-to-alls in order: (what, layer)."""
    forward = [(what, layer) for layer in range(layers) for what in ("dispatch", "combine")]
    backward = [(what, layer) for layer in reversed(range(layers)) for what in ("combine-grad", "dispatch-grad")]
    return forward + backward


def step_compute(job: Job, forward_us: float, backward_us: float, first_iteration: bool) -> list[float]:
    """The compute (us) before each step of an iteration, in `steps` order. With s the expert
    share and L layers: before dispatch(l), (1-s) F / L; before combine(l), s F / L; before
    combine-grad(l), layer l+1's dense backward (1-s) B / L (none for the last layer, whose
    backward starts at once); before dispatch-grad(l), s B / L. Layer 0's dense backward comes
    before the next iteration's dispatch(0), with that forward's dense part: the last iteration's
    is not run (no message waits for it)."""
    m = job.moe
    assert m is not None
    s, n = m.expert_share, job.layers
    dense_f, expert_f = (1 - s) * forward_us / n, s * forward_us / n
    dense_b, expert_b = (1 - s) * backward_us / n, s * backward_us / n
    out: list[float] = []
    for what, layer in steps(n):
        if what == "dispatch":
            out.append(dense_f + (dense_b if layer == 0 and not first_iteration else 0.0))
        elif what == "combine":
            out.append(expert_f)
        elif what == "combine-grad":
            out.append(dense_b if layer < n - 1 else 0.0)
        else:
            out.append(expert_b)
    return out


def groups(hosts: list[str], degree: int) -> list[list[str]]:
    """The expert-parallel groups: `degree` consecutive ranks each."""
    return [hosts[i:i + degree] for i in range(0, len(hosts), degree)]


def messages(job: Job, name: str, hosts: list[str], seed: int, start_us: float = 0.0) -> list[MessageSpec]:
    """Every iteration's all-to-alls over each expert-parallel group of `hosts`, gated by compute."""
    m = job.moe
    assert m is not None
    parts = groups(hosts, m.expert_degree)
    size = block_bytes(job) * m.expert_degree
    params = collectives.Params("all_to_all", "direct", size, job.channels, job.chunk_bytes,
                                dynamic=job.scheduling == "dynamic")
    ids: dict = {}
    out: list[MessageSpec] = []
    count = len(steps(job.layers))
    for g, members in enumerate(parts):
        label = g if len(parts) > 1 else None
        previous = None
        for k in range(job.iterations):
            before = {h: step_compute(job, *compute_times(job, seed, name, h, k), first_iteration=k == 0)
                      for h in members}
            for j in range(count):
                this = step_name(name, k, j, label)
                gate = () if previous is None else (previous,)
                for msg in collectives.schedule(this, members, params, start_us, None, None, ids):
                    out.append(replace(msg, compute_after=gate, compute_us=before[msg.src][j]))
                previous = this
    return out
