"""Collectives that carry data: schedules of messages whose bytes are computed and checked.

Every rank r of a collective holds an input buffer whose bytes are a pure
function of (seed, collective name, r) (`input_bytes`).  The reduction is
bytewise XOR: associative, commutative and exact, so the result can be
checked byte for byte.  A schedule is a list of `MessageSpec`s; each names
the region it carries (`src_offset`/`dst_offset`, `size_bytes`), what the
receiver does with it (`op`: `reduce` XORs it into the receiver's buffer,
`copy` stores it) and which ranks' inputs it is the XOR of (`contrib`, over
the inputs' bytes at `data_offset`).  The application (`app.py`) sends from
its buffer as it is when the dependencies have arrived, verifies every
received payload against `contrib` (an independent copy) and, when all of a
collective's messages to it have been applied, compares its whole buffer
with the expected result (`expected_segments`).

The builder tracks, per rank and per piece of the buffer, the set of ranks
whose inputs the piece holds, so each message's `contrib`, its dependencies
(the messages that last wrote the piece at the sender) and `apply_after` (the
earlier writes of the piece at the receiver, so a `copy` never lands before a
`reduce` it supersedes) follow from the order of the steps; `check_result`
proves a schedule leaves every rank with exactly its data.

Algorithms (each over `channels` disjoint slices of the buffer, each slice
cut into pieces of at most `chunk_bytes` that pipeline; odd channels run
their rings the other way round and each channel's trees are shifted by two
ranks, so channels mostly use other rank pairs; every message names its
channel, and each channel between two ranks is a transport flow of its own,
so channels between the same pair still hash and pace apart):

* all_reduce ring: reduce-scatter ring then all-gather ring, 2(n-1) steps.
* all_reduce tree: double binary tree (NCCL's shape): two binary trees, the
  second over the ranks shifted by one, each carrying half of every slice;
  reduce up to the root, broadcast down.
* all_reduce hierarchical (servers of G GPUs): intra-server reduce of part g
  onto GPU g over the local channels, an inter-server ring all-reduce of part
  g among the GPUs g of all servers (one ring per rail), intra-server
  broadcast of part g from GPU g.
* all_gather ring, reduce_scatter ring: n-1 steps.
* all_to_all direct: every rank sends block j of its input to rank j.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from testbed.errors import TestbedError
from testbed.host.message import MessageSpec

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
ALGORITHMS = {"all_reduce": ("ring", "tree", "hierarchical"), "all_gather": ("ring",),
              "reduce_scatter": ("ring",), "all_to_all": ("direct",)}
# nccl-tests' bus bandwidth factors (busbw = algbw x factor), n ranks
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}


class CollectiveError(TestbedError):
    """Collective parameters that cannot produce a schedule."""


# -- the data ----------------------------------------------------------------------
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _key(seed: int, collective: str, rank: int) -> np.uint64:
    import zlib

    return np.uint64((zlib.crc32(f"{seed}/{collective}".encode()) << 32) ^ (rank * 0x9E3779B1) & (2**64 - 1))


def input_bytes(seed: int, collective: str, rank: int, offset: int, length: int) -> np.ndarray:
    """Bytes [offset, offset+length) of rank's input: splitmix64 of (key, 8-byte word index)."""
    first, last = offset // 8, (offset + length + 7) // 8
    with np.errstate(over="ignore"):
        z = np.arange(first, last, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + _key(seed, collective, rank)
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z ^= z >> np.uint64(31)
    start = offset - first * 8
    return z.view(np.uint8)[start:start + length]


class InputCache:
    """Whole input buffers kept for repeated slices, at most `budget_bytes` of them (oldest go first)."""

    def __init__(self, budget_bytes: int = 512 << 20) -> None:
        self.budget = budget_bytes
        self.held: dict[tuple, np.ndarray] = {}

    def slice(self, seed: int, collective: str, rank: int, size: int, offset: int, length: int) -> np.ndarray:
        key = (seed, collective, rank, size)
        buf = self.held.get(key)
        if buf is None:
            if size > self.budget:
                return input_bytes(seed, collective, rank, offset, length)
            while self.held and sum(b.size for b in self.held.values()) + size > self.budget:
                self.held.pop(next(iter(self.held)))
            buf = self.held[key] = input_bytes(seed, collective, rank, 0, size).copy()
        return buf[offset:offset + length]


CACHE = InputCache()  # one per process: the simulator's hosts share it


def xor_of(seed: int, collective: str, ranks, offset: int, length: int, size: int | None = None) -> np.ndarray:
    """XOR over `ranks` of their input bytes at [offset, offset+length) (`size`: the whole input, to cache)."""
    out = np.zeros(length, dtype=np.uint8)
    for r in ranks:
        if size is None:
            out ^= input_bytes(seed, collective, r, offset, length)
        else:
            out ^= CACHE.slice(seed, collective, r, size, offset, length)
    return out


@lru_cache(maxsize=2)
def _xor_all(seed: int, collective: str, n: int, size: int) -> np.ndarray:
    return xor_of(seed, collective, range(n), 0, size, size)


def expected_bytes(seed: int, collective: str, ranks: tuple[int, ...], offset: int, length: int,
                   size: int, n: int) -> np.ndarray:
    """The XOR of `ranks`' inputs at [offset, offset+length); all n ranks' result is computed once."""
    if len(ranks) == n:
        return _xor_all(seed, collective, n, size)[offset:offset + length]
    return xor_of(seed, collective, ranks, offset, length, size)


# -- the final buffers --------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """A region of a rank's final buffer: the XOR of `contrib`'s inputs at `data_offset`."""

    offset: int
    length: int
    contrib: tuple[int, ...]
    data_offset: int


def shards(total: int, parts: int) -> list[tuple[int, int]]:
    """(offset, length) of `parts` near-equal contiguous parts, 8-byte aligned where possible."""
    words = -(-total // 8)
    out, at = [], 0
    for i in range(parts):
        end = min(total, ((words * (i + 1)) // parts) * 8) if i < parts - 1 else total
        out.append((at, max(0, end - at)))
        at = end
    return out


def a2a_blocks(size: int, n: int) -> list[tuple[int, int]]:
    """All-to-all's n equal blocks of floor(S/n) bytes (a remainder of S mod n is not exchanged)."""
    blk = size // n
    return [(j * blk, blk) for j in range(n)]


def expected_segments(op: str, n: int, rank: int, size: int) -> list[Segment]:
    """What rank's buffer must hold at the end (only these regions are checked)."""
    everyone = tuple(range(n))
    if op == "all_reduce":
        return [Segment(0, size, everyone, 0)]
    parts = shards(size, n)
    if op == "reduce_scatter":
        off, length = parts[rank]
        return [Segment(off, length, everyone, off)]
    if op == "all_gather":
        return [Segment(off, length, (j,), off) for j, (off, length) in enumerate(parts)]
    if op == "all_to_all":  # slot j holds block `rank` of rank j's input
        blocks = a2a_blocks(size, n)
        return [Segment(blocks[j][0], blocks[j][1], (j,), blocks[rank][0]) for j in range(n)]
    raise CollectiveError(f"unknown collective op {op!r}")


def initial_buffer(seed: int, collective: str, op: str, n: int, rank: int, size: int) -> np.ndarray:
    """A rank's working buffer before the first message."""
    if op in ("all_reduce", "reduce_scatter"):
        return input_bytes(seed, collective, rank, 0, size).copy()
    buf = np.zeros(size, dtype=np.uint8)
    off, length = (a2a_blocks if op == "all_to_all" else shards)(size, n)[rank]
    buf[off:off + length] = input_bytes(seed, collective, rank, off, length)
    return buf


# -- schedules --------------------------------------------------------------------
@dataclass(frozen=True)
class Params:
    op: str
    algorithm: str
    size_bytes: int  # S: each rank's buffer (all_gather: the gathered output)
    channels: int = 1
    chunk_bytes: int = 0  # 0: one piece per channel and segment (no pipelining)
    dynamic: bool = False  # all_to_all: chunks go out on whichever of the pair's channels is free


class _Builder:
    """Pieces are (offset, length) regions; state[rank][piece] = contributors it holds."""

    def __init__(self, name: str, hosts: list[str], params: Params, start_us: float,
                 first_deps: dict[str, tuple] | None, ids: dict | None = None) -> None:
        self.name, self.hosts, self.p, self.start_us = name, hosts, params, start_us
        self.n = len(hosts)
        self.state: dict[tuple[int, tuple[int, int]], frozenset[int]] = {}
        self.writers: dict[tuple[int, tuple[int, int]], list[tuple[str, int]]] = {}
        self.ids: dict[tuple[str, str], int] = {} if ids is None else ids
        self.out: list = []
        self.pieces_of: dict[int, set] = {}
        self.first_deps = first_deps or {}
        self.channel = 0  # the channel the next sends belong to

    def holds(self, rank: int, piece: tuple[int, int]) -> frozenset[int]:
        if (rank, piece) not in self.state:
            self._no_overlap(rank, piece)
            op = self.p.op
            if op in ("all_reduce", "reduce_scatter"):
                self.state[(rank, piece)] = frozenset({rank})
            else:  # gather-like: a rank starts with its own shard only
                own = (a2a_blocks if op == "all_to_all" else shards)(self.p.size_bytes, self.n)[rank]
                inside = own[0] <= piece[0] and piece[0] + piece[1] <= own[0] + own[1]
                self.state[(rank, piece)] = frozenset({rank}) if inside else frozenset()
        return self.state[(rank, piece)]

    def _no_overlap(self, rank: int, piece: tuple[int, int]) -> None:
        """Pieces are atoms: a schedule must not cut one piece differently in two steps."""
        known = self.pieces_of.setdefault(rank, set())
        for off, length in known:
            if off < piece[0] + piece[1] and piece[0] < off + length:
                raise CollectiveError(f"{self.name}: piece {piece} of rank {rank} overlaps piece {(off, length)}")
        known.add(piece)

    def send(self, src: int, dst: int, piece: tuple[int, int], op: str,
             read: tuple[int, int] | None = None, contrib: frozenset[int] | None = None,
             data_offset: int | None = None) -> None:
        if piece[1] == 0:
            return
        s, d = self.hosts[src], self.hosts[dst]
        have = self.holds(src, piece) if contrib is None else contrib
        if not have:
            raise CollectiveError(f"{self.name}: schedule sends piece {piece} from rank {src}, which holds none of it")
        if op == "reduce":
            overlap = have & self.holds(dst, piece)
            if overlap:
                raise CollectiveError(f"{self.name}: rank {dst} would XOR rank(s) {sorted(overlap)} in twice")
            new = have | self.holds(dst, piece)
        else:
            new = have
        deps = list(self.first_deps.get(s, ()))
        if read is None:  # reads its working buffer: after every write of the piece
            deps += self.writers.get((src, piece), [])
        msg_id = self.ids.get((s, d), 0)
        self.ids[(s, d)] = msg_id + 1
        after = tuple(self.writers.get((dst, piece), []))
        rd = piece if read is None else read
        self.out.append(MessageSpec(
            s, d, msg_id, piece[1], self.start_us, tuple(dict.fromkeys(deps)), collective=self.name,
            collective_kind=self.p.op, collective_bytes=self.p.size_bytes, ranks=self.n,
            op=op, src_offset=rd[0], dst_offset=piece[0], contrib=tuple(sorted(have)),
            data_offset=piece[0] if data_offset is None else data_offset,
            read_input=read is not None, apply_after=after, src_rank=src, dst_rank=dst,
            algorithm=self.p.algorithm, channel=self.channel))
        self.state[(dst, piece)] = frozenset(new)
        self.writers.setdefault((dst, piece), []).append((s, msg_id))

    def chunks(self, region: tuple[int, int]) -> list[tuple[int, int]]:
        off, length = region
        c = self.p.chunk_bytes
        if not c or c >= length:
            return [region]
        return [(off + a, min(c, length - a)) for a in range(0, length, c)]


def _slices(size: int, channels: int) -> list[tuple[int, int]]:
    return [s for s in shards(size, channels) if s[1]]


def _ring_order(ranks: list[int], channel: int) -> list[int]:
    """Channel c's ring: odd channels run the other way round, so their messages go between other
    pairs (their own flows, hashed apart by ECMP) and over the other direction of each link."""
    return ranks if channel % 2 == 0 else ranks[::-1]


def _ring_rs_segments(b: _Builder, ranks: list[int], segs: list[tuple[int, int]]) -> None:
    """Rank ranks[i] ends holding segs[i] fully reduced (over `ranks`)."""
    m = len(ranks)
    pieces = [b.chunks(seg) for seg in segs]
    for step in range(m - 1):
        for i in range(m):
            for piece in pieces[(i - step - 1) % m]:
                b.send(ranks[i], ranks[(i + 1) % m], piece, "reduce")


def _ring_reduce_scatter(b: _Builder, ranks: list[int], region: tuple[int, int]) -> list[tuple[int, int]]:
    """Rank ranks[i] ends holding segment i of region fully reduced (over `ranks`)."""
    segs = [(region[0] + o, length) for o, length in shards(region[1], len(ranks))]
    _ring_rs_segments(b, ranks, segs)
    return segs


def _ring_all_gather(b: _Builder, ranks: list[int], segs: list[tuple[int, int]]) -> None:
    """Rank ranks[i] starts holding segment i; every rank ends with all of them."""
    m = len(ranks)
    pieces = [b.chunks(seg) for seg in segs]
    for step in range(m - 1):
        for i in range(m):
            for piece in pieces[(i - step) % m]:
                b.send(ranks[i], ranks[(i + 1) % m], piece, "copy")


def _tree(order: list[int]) -> dict[int, list[int]]:
    """Binary heap tree over `order`: children of order[i] are order[2i+1], order[2i+2]."""
    return {order[i]: [order[c] for c in (2 * i + 1, 2 * i + 2) if c < len(order)] for i in range(len(order))}


def _tree_all_reduce(b: _Builder, region: tuple[int, int], order: list[int]) -> None:
    children = _tree(order)
    up = []  # post-order: children before parents
    def visit(r: int) -> None:
        for c in children[r]:
            visit(c)
        up.append(r)
    visit(order[0])
    parent = {c: p for p, cs in children.items() for c in cs}
    pieces = b.chunks(region)
    for piece in pieces:  # pipelined: piece k goes up while piece k-1 comes down
        for r in up:
            if r in parent:
                b.send(r, parent[r], piece, "reduce")
        for r in reversed(up):
            for c in children[r]:
                b.send(r, c, piece, "copy")


def schedule(name: str, hosts: list[str], params: Params, start_us: float = 0.0,
             servers: list[list[int]] | None = None,
             first_deps: dict[str, tuple] | None = None, ids: dict | None = None) -> list:
    """The messages of one collective over `hosts` (rank i = hosts[i]).

    `servers` lists the ranks of each server in GPU order (hierarchical only).
    `first_deps` adds, per sending host, messages that must have been
    delivered to it before any of its sends (back-to-back collectives);
    `ids` continues another schedule's msg_id numbering per (src, dst).
    """
    p = params
    n = len(hosts)
    if p.op not in OPS:
        raise CollectiveError(f"unknown collective op {p.op!r}; ops are {', '.join(OPS)}")
    if p.algorithm not in ALGORITHMS[p.op]:
        raise CollectiveError(f"{p.op} has no algorithm {p.algorithm!r}; it has {', '.join(ALGORITHMS[p.op])}")
    if n < 2 or len(set(hosts)) != n:
        raise CollectiveError(f"a collective needs at least two distinct ranks, got {hosts}")
    if p.size_bytes < n * p.channels:
        raise CollectiveError(f"{p.size_bytes} B is too small for {n} ranks x {p.channels} channel(s)")
    if p.channels < 1 or p.chunk_bytes < 0:
        raise CollectiveError(f"channels ({p.channels}) must be >= 1 and chunk_bytes ({p.chunk_bytes}) >= 0")
    if p.dynamic and p.op != "all_to_all":
        raise CollectiveError(f"dynamic channel scheduling is modelled for all_to_all only, not {p.op} (its "
                              "channels join other rank pairs)")
    b = _Builder(name, hosts, p, start_us, first_deps, ids)
    ranks = list(range(n))
    if p.op == "all_to_all":
        blocks = a2a_blocks(p.size_bytes, n)
        for src in ranks:
            for k in range(1, n):  # rank src sends to src+1, src+2, ...: no common first target
                dst = (src + k) % n
                boff, blen = blocks[dst]
                for c, (coff, clen) in enumerate(_slices(blen, p.channels)):
                    b.channel = c
                    for off, length in b.chunks((coff, clen)):
                        b.send(src, dst, (blocks[src][0] + off, length), "copy",
                               read=(boff + off, length), contrib=frozenset({src}),
                               data_offset=boff + off)
        return [replace(m, dynamic=True) for m in b.out] if p.dynamic else b.out
    if p.op in ("all_gather", "reduce_scatter"):
        step = _ring_all_gather if p.op == "all_gather" else _ring_rs_segments
        parts = shards(p.size_bytes, n)
        # channel c carries slice c of every shard
        per_shard = [[(off + o, length) for o, length in _slices(plen, p.channels)] for off, plen in parts]
        for c in range(p.channels):
            b.channel = c
            order = _ring_order(ranks, c)
            segs = [per_shard[j][c] if c < len(per_shard[j]) else (parts[j][0], 0) for j in order]
            step(b, order, segs)
        return b.out
    # all_reduce
    if p.algorithm == "ring":
        for c, region in enumerate(_slices(p.size_bytes, p.channels)):
            b.channel = c
            order = _ring_order(ranks, c)
            _ring_all_gather(b, order, _ring_reduce_scatter(b, order, region))
    elif p.algorithm == "tree":
        for c, region in enumerate(_slices(p.size_bytes, p.channels)):
            b.channel = c
            halves = _slices(region[1], 2) if region[1] >= 2 else [(0, region[1])]
            for t, (off, length) in enumerate(halves):
                # the second tree: the ranks shifted by one; channel c's trees shifted by 2c more
                k = (t + 2 * c) % n
                _tree_all_reduce(b, (region[0] + off, length), ranks[k:] + ranks[:k])
    else:  # hierarchical
        if not servers or len(servers) < 2 or len({len(s) for s in servers}) != 1:
            raise CollectiveError("hierarchical all_reduce needs at least two servers of equal GPU counts "
                                  "(topology.gpus_per_server > 1, whole servers selected)")
        g = len(servers[0])
        for c, region in enumerate(_slices(p.size_bytes, p.channels)):
            b.channel = c
            parts = [(region[0] + o, length) for o, length in shards(region[1], g)]
            # the pieces the rail rings use, so every phase moves the same pieces
            pieces = [[piece for o, length in shards(part[1], len(servers))
                       for piece in b.chunks((part[0] + o, length))] for part in parts]
            for server in servers:  # intra-server reduce of part j onto GPU j
                for j, owner in enumerate(server):
                    for r in server:
                        if r != owner:
                            for piece in pieces[j]:
                                b.send(r, owner, piece, "reduce")
            for j in range(g):  # one inter-server ring per rail
                rail = _ring_order([server[j] for server in servers], c)
                _ring_all_gather(b, rail, _ring_reduce_scatter(b, rail, parts[j]))
            for server in servers:  # intra-server broadcast of part j from GPU j
                for j, owner in enumerate(server):
                    for r in server:
                        if r != owner:
                            for piece in pieces[j]:
                                b.send(owner, r, piece, "copy")
    return b.out


def check_result(messages: list, op: str, n: int, size: int) -> None:
    """Replay a schedule symbolically (contributor sets); raise unless every rank ends with its data."""
    from collections import defaultdict

    held: dict[int, dict[int, frozenset]] = defaultdict(dict)  # rank -> byte offset -> contributors
    for r in range(n):
        own = (a2a_blocks if op == "all_to_all" else shards)(size, n)[r]
        for off, length in [own] if op not in ("all_reduce", "reduce_scatter") else [(0, size)]:
            for i in range(off, off + length):
                held[r][i] = frozenset({r})
    for m in messages:
        for i in range(m.size_bytes):
            src_byte = m.src_offset + i
            if m.read_input:
                have = frozenset({m.src_rank})
            else:
                have = held[m.src_rank].get(src_byte, frozenset())
            if have != frozenset(m.contrib):
                raise CollectiveError(f"{m.src}->{m.dst}#{m.msg_id}: byte {src_byte} holds {sorted(have)}, "
                                      f"the message claims {list(m.contrib)}")
            j = m.dst_offset + i
            held[m.dst_rank][j] = (held[m.dst_rank].get(j, frozenset()) | have) if m.op == "reduce" else have
    for r in range(n):
        for seg in expected_segments(op, n, r, size):
            for i in range(seg.offset, seg.offset + seg.length):
                if held[r].get(i) != frozenset(seg.contrib):
                    raise CollectiveError(f"rank {r} ends with byte {i} holding {sorted(held[r].get(i, ()))}, "
                                          f"expected {list(seg.contrib)}")


def sequence(name: str, hosts: list[str], params: list[Params], start_us: float = 0.0,
             servers: list[list[int]] | None = None, iterations: int = 1) -> list:
    """Collectives back to back: each starts at a rank once it has received all of the previous one.

    The k-th collective is named ``<name>@<size>B#<iteration>``; msg_ids run on per (src, dst).
    """
    ids: dict = {}
    out: list = []
    last_in: dict[str, tuple] = {}
    for p in params:
        for it in range(iterations):
            msgs = schedule(f"{name}@{p.size_bytes}B#{it}", hosts, p, start_us, servers, last_in, ids)
            into: dict[str, list] = {}
            for m in msgs:
                into.setdefault(m.dst, []).append((m.src, m.msg_id))
            last_in = {h: tuple(v) for h, v in into.items()}
            out += msgs
    return out
