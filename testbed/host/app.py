"""The application on a host: starts its workload's messages, verifies what arrives.

Shared by the simulator and the UDP agent. A message starts at its start
time once every message it depends on has been delivered here (ring
all-reduce steps); while the host is slowed (`set_slow`, the host_slow
fault) it starts that much later again. Payloads are generated deterministically from the seed,
so the receiver checks delivered bytes against an independent copy, not
only against the transport's own checksum.

Data-carrying collectives (`collectives.py`, messages with `op`): each rank
keeps a working buffer per collective; a message's bytes are read from it
(or from the rank's input) when the message starts, a received message is
checked against the XOR of its contributors' inputs and then XORed into or
copied over the buffer (after the writes listed in `apply_after`), and once
every message of the collective to this rank is applied the whole buffer is
compared with the expected result: a `collective_done` record says whether
it matched, byte for byte.

Compute is time (a training job, `host/training.py`): a message naming
collectives in `compute_after` also waits `compute_us` after the later of its
start time and the moment all of them have finished here; with none named its
compute runs from its start time; `compute_chain` runs earlier compute the
same way first, each part after the one before it.  A collective (or any
named set of messages) has finished here once every message of it to this
rank is applied or received (a data-carrying collective's `collective_done`)
and every message of it from this rank has started: a rank whose compute was
late for an all-to-all (whose peers' blocks all reached it first) starts its
next compute only once its own blocks are on their way, and a pipeline
stage's send has finished at the sender once it has left.  A slow GPU (gpu_slow,
`set_compute_factor`) takes factor x compute_us for the compute placed meanwhile;
`message_sent` says how long its compute ran (`compute_ran_us`).

A `dynamic` message (an all-to-all with dynamic channel scheduling) is not
tied to its channel: once ready it joins its destination's queue, and the
pair's channel with the fewest unacknowledged chunks, while below
DYNAMIC_DEPTH, sends it, so a channel on a slow path carries less.

A GPU of a multi-GPU server reaches the GPUs of its own server over the
local channel: a second endpoint (`local`, its own pacer at the channel's
rate) carries every message to a peer in `local_peers`.
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Callable, Collection, Protocol

import numpy as np

from testbed.cells import segment
from testbed.host import collectives, records, workloads
from testbed.host.receiver import Delivered
from testbed.host.sender import OutMessage
from testbed.host.workloads import MessageSpec

# what one agent builds ahead of its epoch (WorkloadRunner.prepare): the bytes it sends and verifies
# dynamic channel scheduling: the chunks a channel may have unacknowledged (two, so a channel
# sends its next chunk while the last one's acknowledgement comes back)
DYNAMIC_DEPTH = 2
PREPARE_BUDGET_BYTES = 64 << 20


class Transport(Protocol):
    """What the application asks of a host's transport: an Endpoint, or anything that answers the
    same (a test's fake). Typed so, the compiled runner calls it as Python does, by name."""

    on_delivered: Callable[[Delivered], None]
    on_acked: Callable[[str, OutMessage], None]
    expect: Callable[[str, int], bytes | None] | None

    def send_message(self, now: float, dst: str, msg_id: int, payload: bytes | segment.Framed,
                     channel: int = 0) -> object: ...  # the message (OutMessage); the runner keeps none

    def idle(self) -> bool: ...


def _collective(spec: MessageSpec) -> tuple[str, str]:
    """A data-carrying message's collective and its kind (MessageSpec sets both with `op`)."""
    assert spec.collective is not None and spec.collective_kind is not None, spec
    return spec.collective, spec.collective_kind


class WorkloadRunner:
    def __init__(self, name: str, endpoint: Transport, specs: list[MessageSpec], seed: int,
                 addr_of: Callable[[str], str] = str, name_of: Callable[[str], str] = str,
                 local: Transport | None = None, local_peers: Collection[str] = frozenset()) -> None:
        self.name = name
        self.ep = endpoint
        self.local = local
        self.local_peers = set(local_peers) if local is not None else set()
        self.seed = seed
        self.addr_of = addr_of
        self.name_of = name_of
        self._specs = sorted((s for s in specs if s.src == name), key=lambda s: s.start_us)
        self._sent: set[int] = set()
        # A host_slow fault: each message whose turn comes while this is above 0 starts that much
        # later (seconds); `_delayed` holds those already put off, so none is put off twice.
        self.slow_delay_s = 0.0
        self._delayed: set[int] = set()
        # A gpu_slow fault: compute placed while this is above 1 takes that many times as long.
        self.compute_factor = 1.0
        self._compute_ran: dict[int, float] = {}  # message -> how long its compute ran (us), once placed
        self._ran_of_sent: dict[tuple[str, int], float] = {}  # (dst, msg_id) -> that, once sent
        self._index()
        self.incoming = {(s.src, s.msg_id): s for s in specs if s.dst == name and s.op}
        # point-to-point messages to this host: their bytes are regenerated to verify them
        self._to_check = {(s.src, s.msg_id): s for s in specs if s.dst == name and not s.op}
        self._open: dict[str, int] = {}  # collective -> its messages here not yet applied/received/started
        # dynamic channel scheduling: per destination, the ready chunks not sent yet, the channels
        # its messages name, and the unacknowledged chunks per (destination, channel)
        self._queued: dict[str, list[int]] = {}
        self._lanes: dict[str, list[int]] = {}
        self._in_flight: dict[tuple[str, int], int] = {}
        for spec in self._specs:
            if spec.dynamic and spec.channel not in self._lanes.setdefault(spec.dst, []):
                self._lanes[spec.dst].append(spec.channel)
        for s in specs:
            if s.collective is not None and name in (s.src, s.dst):
                self._open[s.collective] = self._open.get(s.collective, 0) + 1
        self._prepared: dict[int, segment.Framed] = {}  # index into _specs -> its framed payload, built ahead
        self._expected: dict[tuple[str, int], bytes] = {}  # (src, msg_id) -> the bytes it must carry
        self.by_key: dict[tuple[str, int], MessageSpec] = {}
        self.received: set[tuple[str, int]] = set()
        self.records: list[dict] = []
        self.verify_failures = 0
        self.checked_as_they_came = 0  # messages compared cell by cell with bytes built ahead
        self.buffers: dict[str | None, np.ndarray] = {}  # collective -> this rank's working buffer
        self.applied: set[tuple[str, int]] = set()
        self.held: list[tuple[MessageSpec, bytes]] = []  # received, waiting for apply_after
        self.to_apply: dict[str | None, int] = {}  # collective -> messages to this rank not yet applied
        for spec in self.incoming.values():
            self.to_apply[spec.collective] = self.to_apply.get(spec.collective, 0) + 1
        self.collectives_done: dict[str | None, bool] = {}
        self.to_send: dict[str | None, int] = {}  # collective -> this rank's messages not yet started
        for spec in self._specs:
            if spec.op:
                self.to_send[spec.collective] = self.to_send.get(spec.collective, 0) + 1
        for ep in (endpoint, local):
            if ep is not None:
                ep.on_delivered = self._delivered
                ep.on_acked = self._acked
                ep.expect = self._expected_bytes

    def prepare(self, budget_bytes: int = PREPARE_BUDGET_BYTES) -> int:
        """Build ahead the payloads of this host's point-to-point messages, those it sends and those
        it will verify, earliest start first, until `budget_bytes` are held; returns the bytes built.

        An agent calls this before its run's epoch: generating and framing a payload is work in
        proportion to its size, and every host of a permutation starting its message at one instant
        would do it at once inside the packet loops.  A message sent is kept framed
        (segment.frame_ahead), a message to verify as its bytes.  Messages past the budget are built when they start, as
        before; the bytes are the same either way (workloads.payload), so the simulator, which does
        not call this, gives the same results."""
        mine = [(spec.start_us, 0, i, spec) for i, spec in enumerate(self._specs) if not spec.op]
        theirs = [(spec.start_us, 1, i, spec) for i, spec in enumerate(self._to_check.values())]
        held = 0
        for _start, incoming, i, spec in sorted(mine + theirs, key=lambda t: t[:3]):
            if held + spec.size_bytes > budget_bytes:
                break
            held += spec.size_bytes
            data = workloads.payload(self.seed, spec.src, spec.dst, spec.msg_id, spec.size_bytes)
            if incoming:
                self._expected[(spec.src, spec.msg_id)] = data
            else:
                self._prepared[i] = segment.frame_ahead(data)  # the transport's framing too
        return held

    def _expected_bytes(self, src_addr: str, msg_id: int) -> bytes | None:
        """The bytes a message from `src_addr` must carry, when they were built ahead (prepare):
        the transport compares them cell by cell as the message comes (Endpoint.expect)."""
        return self._expected.get((self.name_of(src_addr), msg_id)) if self._expected else None

    def _endpoint(self, dst: str) -> Transport:
        return self.local if self.local is not None and dst in self.local_peers else self.ep

    # -- data-carrying collectives --------------------------------------------
    def _buffer(self, spec: MessageSpec, rank: int) -> np.ndarray:
        buf = self.buffers.get(spec.collective)
        if buf is None:
            name, kind = _collective(spec)
            buf = self.buffers[name] = collectives.initial_buffer(
                self.seed, name, kind, spec.ranks, rank, spec.collective_bytes)
        return buf

    def _collective_payload(self, spec: MessageSpec) -> bytes:
        if spec.read_input:
            return collectives.input_bytes(self.seed, _collective(spec)[0], spec.src_rank, spec.src_offset,
                                           spec.size_bytes).tobytes()
        buf = self._buffer(spec, spec.src_rank)
        return buf[spec.src_offset:spec.src_offset + spec.size_bytes].tobytes()

    def _check_collective(self, spec: MessageSpec, payload: bytes) -> bool:
        if len(payload) != spec.size_bytes:
            return False
        want = collectives.expected_bytes(self.seed, _collective(spec)[0], spec.contrib, spec.data_offset,
                                          spec.size_bytes, spec.collective_bytes, spec.ranks)
        return bool(np.array_equal(np.frombuffer(payload, dtype=np.uint8), want))

    def _apply_ready(self, now: float) -> None:
        progress = True
        while progress:
            progress = False
            for i, (spec, payload) in enumerate(self.held):
                if all(tuple(a) in self.applied for a in spec.apply_after):
                    del self.held[i]
                    self._apply(spec, payload, now)
                    progress = True
                    break

    def _apply(self, spec: MessageSpec, payload: bytes, now: float) -> None:
        buf = self._buffer(spec, spec.dst_rank)
        region = buf[spec.dst_offset:spec.dst_offset + spec.size_bytes]
        data = np.frombuffer(payload, dtype=np.uint8)
        if spec.op == "reduce":
            region ^= data
        else:
            region[:] = data
        self.applied.add((spec.src, spec.msg_id))
        self._satisfy("applied", (spec.src, spec.msg_id), now)
        left = self.to_apply[spec.collective] = self.to_apply[spec.collective] - 1
        if left == 0:
            self._finish_collective(spec, now)
        self._close(_collective(spec)[0], now)

    def _finish_collective(self, spec: MessageSpec, now: float) -> None:
        name, kind = _collective(spec)
        buf = self.buffers[name]
        segments = collectives.expected_segments(kind, spec.ranks, spec.dst_rank,
                                                 spec.collective_bytes)
        ok = True
        checked = 0
        for seg in segments:
            want = collectives.expected_bytes(self.seed, name, seg.contrib, seg.data_offset,
                                              seg.length, spec.collective_bytes, spec.ranks)
            ok = ok and bool(np.array_equal(buf[seg.offset:seg.offset + seg.length], want))
            checked += seg.length
        self.verify_failures += not ok
        self.collectives_done[spec.collective] = ok
        self.records.append(records.collective_record(self.name, spec, ok, checked, now))
        self._release(spec.collective)

    def _release(self, collective: str | None) -> None:
        """Free a buffer nothing will read or write again (all applied, all sent)."""
        if self.to_apply.get(collective) == 0 and not self.to_send.get(collective):
            self.buffers.pop(collective, None)

    def _delivered(self, d: Delivered) -> None:
        src = self.name_of(d.src)
        spec = self.incoming.get((src, d.msg_id))
        if spec is None:
            expected = self._expected.pop((src, d.msg_id), None)
            if expected is not None and d.matches_expected is not None:
                ok = d.matches_expected  # compared with these bytes cell by cell as they came
                self.checked_as_they_came += 1
            else:
                if expected is None:
                    known = self._to_check.get((src, d.msg_id))
                    size = known.size_bytes if known is not None else len(d.payload)
                    expected = workloads.payload(self.seed, src, self.name, d.msg_id, size)
                ok = expected == d.payload
        else:
            ok = self._check_collective(spec, d.payload)
        self.verify_failures += not ok
        self.received.add((src, d.msg_id))
        self.records.append(records.delivered_record(self.name, src, d, ok))
        self._satisfy("received", (src, d.msg_id), d.delivered_s)
        if spec is None:
            plain = self._to_check.get((src, d.msg_id))
            if plain is not None and plain.collective is not None:
                self._close(plain.collective, d.delivered_s)
        if spec is not None and (src, d.msg_id) not in self.applied:
            self.held.append((spec, d.payload))
            self._apply_ready(d.delivered_s)

    def _acked(self, dst_addr: str, msg: OutMessage) -> None:
        spec = self.by_key[(self.name_of(dst_addr), msg.msg_id)]
        assert msg.done_s is not None  # the endpoint calls it once the message is acknowledged
        rec = records.sent_record(self.name, spec.dst, spec, msg, msg.done_s)
        ran = self._ran_of_sent.pop((spec.dst, spec.msg_id), None)
        if ran is not None:
            rec["compute_ran_us"] = ran
        self.records.append(rec)
        if spec.dynamic:  # its channel is free for the next chunk of the pair's queue
            self._in_flight[(spec.dst, spec.channel)] -= 1
            self._dispatch(spec.dst, msg.done_s)

    # -- starting messages: each waits for its start time and its dependencies ----
    def _index(self) -> None:
        """Count each message's unmet dependencies (its deps, and the collectives its compute
        waits for); index who waits for what (so a poll costs the messages that became ready, not
        the whole workload). `_earliest` is each message's start time in us, moved later by its
        compute once the collectives that start the compute have finished."""
        self._unmet: list[int] = []
        self._gate: list[int] = []  # collectives its compute waits for, not finished here yet
        self._done_at: dict[str, float] = {}  # collective -> when it finished here (us)
        self._earliest: list[float] = []
        self._waiters: dict[tuple, list[int]] = {}
        self._ready: list[tuple[float, int]] = []
        self._started = 0
        for i, spec in enumerate(self._specs):
            need = "applied" if spec.op else "received"
            keys = set(tuple(d) for d in spec.deps)
            gate = set(spec.compute_after).union(*(names for names, _us in spec.compute_chain))
            self._unmet.append(len(keys) + len(gate))
            self._gate.append(len(gate))
            self._earliest.append(spec.start_us + (0.0 if gate else spec.compute_us
                                                   + sum(us for _names, us in spec.compute_chain)))
            for key in keys:
                self._waiters.setdefault((need, key), []).append(i)
            for name in gate:
                self._waiters.setdefault(("done", (name,)), []).append(i)
            if not keys and not gate:
                heapq.heappush(self._ready, (self._earliest[i], i))

    def _close(self, collective: str, now: float) -> None:
        """One message of `collective` to or from this rank applied, received or started: once none
        is left, the collective has finished here (module docstring)."""
        left = self._open[collective] = self._open[collective] - 1
        if left == 0:
            self._done_at[collective] = now * 1e6
            self._satisfy("done", (collective,), now)

    def _compute_end(self, spec: MessageSpec) -> float:
        """When the compute `spec` waits for ends (us): its chain's parts, then its own, each from the
        later of the part before's end and its collectives' finish here."""
        at = spec.start_us
        for names, us in spec.compute_chain + ((spec.compute_after, spec.compute_us),):
            at = max([at] + [self._done_at[n] for n in names]) + us * self.compute_factor
        return at

    def _satisfy(self, need: str, key: tuple, now: float) -> None:
        for i in self._waiters.pop((need, key), ()):
            if need == "done":
                self._gate[i] -= 1
                if self._gate[i] == 0:  # every part of its compute can be placed now
                    spec = self._specs[i]
                    self._earliest[i] = self._compute_end(spec)
                    self._compute_ran[i] = (spec.compute_us + sum(us for _n, us in spec.compute_chain)
                                            ) * self.compute_factor
            self._unmet[i] -= 1
            if self._unmet[i] == 0:
                heapq.heappush(self._ready, (self._earliest[i], i))

    @property
    def pending(self) -> list[MessageSpec]:
        """Messages not started yet."""
        return [spec for i, spec in enumerate(self._specs) if i not in self._sent]

    def poll(self, now: float) -> None:
        ready = self._ready
        # in seconds, as next_deadline and the simulator's wake-ups have it: 4.06 * 1e6 is below
        # 4060000.0, and a message polled at its own start time waited for the next wake-up
        while ready and ready[0][0] / 1e6 <= now:
            _, i = heapq.heappop(ready)
            if self.slow_delay_s > 0 and i not in self._delayed:  # its turn came now: it starts later
                self._delayed.add(i)
                heapq.heappush(ready, ((now + self.slow_delay_s) * 1e6, i))
                continue
            spec = self._specs[i]
            if spec.dynamic:  # into the pair's shared queue; a free channel of the pair takes it
                self._queued.setdefault(spec.dst, []).append(i)
                self._dispatch(spec.dst, now)
            else:
                self._send(i, spec.channel, now)

    def _send(self, i: int, channel: int, now: float) -> None:
        spec = self._specs[i]
        self._sent.add(i)
        if spec.compute_after or spec.compute_chain or spec.compute_us:
            self._ran_of_sent[(spec.dst, spec.msg_id)] = self._compute_ran.pop(
                i, spec.compute_us + sum(us for _n, us in spec.compute_chain))
        data: bytes | segment.Framed
        if spec.op:
            data = self._collective_payload(spec)
            self.to_send[spec.collective] -= 1
            self._release(spec.collective)
        else:
            prepared = self._prepared.pop(i, None)
            data = prepared if prepared is not None else workloads.payload(
                self.seed, self.name, spec.dst, spec.msg_id, spec.size_bytes)
        self.by_key[(spec.dst, spec.msg_id)] = spec if channel == spec.channel else replace(spec, channel=channel)
        self._endpoint(spec.dst).send_message(now, self.addr_of(spec.dst), spec.msg_id, data, channel)
        if spec.collective is not None:
            self._close(spec.collective, now)

    def _dispatch(self, dst: str, now: float) -> None:
        """Dynamic channel scheduling: while `dst`'s queue holds chunks, the pair's channel with the
        fewest unacknowledged chunks below DYNAMIC_DEPTH (the lowest on a tie) sends the next one, so
        a channel whose chunks are acknowledged later (a slower path) takes fewer."""
        queue = self._queued.get(dst)
        lanes = self._lanes[dst]
        while queue:
            channel = min(lanes, key=lambda c: (self._in_flight.get((dst, c), 0), c))
            if self._in_flight.get((dst, channel), 0) >= DYNAMIC_DEPTH:
                return
            self._in_flight[(dst, channel)] = self._in_flight.get((dst, channel), 0) + 1
            self._send(queue.pop(0), channel, now)

    def set_slow(self, delay_s: float) -> None:
        """A straggler's application (host_slow): from now on, each message whose turn comes (its
        start time reached and its dependencies met) starts `delay_s` later; 0 ends it (messages
        already put off keep their later start)."""
        self.slow_delay_s = max(0.0, delay_s)

    def set_compute_factor(self, factor: float) -> None:
        """A slow GPU (gpu_slow): compute placed from now on takes `factor` times its `compute_us`;
        1 ends it (compute already placed keeps its end)."""
        self.compute_factor = max(1e-9, factor)

    def next_deadline(self, now: float) -> float | None:
        if self._ready and self._ready[0][0] / 1e6 > now:
            return self._ready[0][0] / 1e6
        return None

    def finished(self) -> bool:
        return len(self._sent) == len(self._specs) and self.ep.idle() and (self.local is None or self.local.idle())
