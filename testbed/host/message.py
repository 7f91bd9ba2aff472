"""One message of a workload: who sends how many bytes to whom, when, after what.

"After what" is of two kinds. `deps` are messages that must have reached the
sender first (a collective's earlier steps). `compute_after` and `compute_us`
model the sender's compute as time: the message waits `compute_us` after the
later of `start_us` and the moment every collective named in `compute_after`
has finished at the sender (none named: from `start_us`), so a training job's
gradient bucket leaves once backward has produced it (host/training.py).
`compute_chain` puts earlier compute before that one, each (collectives,
compute_us) starting once its collectives have finished and the compute
before it has ended: a pipeline stage's passes that send nothing
(host/pipeline.py).

A plain record with its JSON form (the workload file an agent reads).  The
workload generators (workloads.py) and the collectives' schedules
(collectives.py) both build these; it imports neither, so both may import it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class MessageSpec:
    src: str
    dst: str
    msg_id: int
    size_bytes: int
    start_us: float = 0.0
    deps: tuple[tuple[str, int], ...] = ()  # (sender, msg_id) delivered to src first
    collective: str | None = None
    # "allreduce" | "alltoall" | "incast" | "permutation" | "poisson" | "stream"; data-carrying collectives
    # (collectives.py): "all_reduce" | "all_gather" | "reduce_scatter" | "all_to_all"
    collective_kind: str | None = None
    collective_bytes: int = 0  # S, bytes per rank, for bus bandwidth
    ranks: int = 0
    # Data-carrying collectives only (op set): what the bytes are and where they go.
    op: str | None = None  # "reduce" (receiver XORs into its buffer) | "copy" (stores)
    src_offset: int = 0  # read from the sender's buffer (its input when read_input) here
    dst_offset: int = 0  # written to the receiver's buffer here
    contrib: tuple[int, ...] = ()  # ranks whose inputs (at data_offset) the payload is the XOR of
    data_offset: int = 0
    read_input: bool = False
    apply_after: tuple[tuple[str, int], ...] = ()  # (sender, msg_id) applied at dst first
    src_rank: int = -1
    dst_rank: int = -1
    algorithm: str | None = None
    channel: int = 0  # the collective channel: its own transport flow between src and dst
    dynamic: bool = False  # its channel is the first free one of the pair's when it is sent (app.py)
    compute_after: tuple[str, ...] = ()  # collectives finished at src before its compute starts
    compute_us: float = 0.0  # the compute this message waits for, from that start
    compute_chain: tuple[tuple[tuple[str, ...], float], ...] = ()  # (collectives, us) run before it

    def to_json(self) -> dict:
        d = asdict(self)
        d["deps"] = [list(x) for x in self.deps]
        if not self.compute_after and not self.compute_us:  # messages of no compute keep their form
            d.pop("compute_after")
            d.pop("compute_us")
        else:
            d["compute_after"] = list(self.compute_after)
        if not self.dynamic:
            d.pop("dynamic")
        if self.compute_chain:
            d["compute_chain"] = [[list(names), us] for names, us in self.compute_chain]
        else:
            d.pop("compute_chain")
        if self.op is None:  # plain messages keep their compact form
            for key in ("op", "src_offset", "dst_offset", "contrib", "data_offset", "read_input",
                        "apply_after", "src_rank", "dst_rank", "algorithm", "channel"):
                d.pop(key)
        else:
            d["apply_after"] = [list(x) for x in self.apply_after]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "MessageSpec":
        d = dict(d)
        d["deps"] = tuple((str(a), int(b)) for a, b in d.get("deps", ()))
        d["apply_after"] = tuple((str(a), int(b)) for a, b in d.get("apply_after", ()))
        d["contrib"] = tuple(int(r) for r in d.get("contrib", ()))
        d["compute_after"] = tuple(str(c) for c in d.get("compute_after", ()))
        d["compute_chain"] = tuple((tuple(str(c) for c in names), float(us))
                                   for names, us in d.get("compute_chain", ()))
        return cls(**d)
