"""The v1model architecture as bmv2 simple_switch runs it.

Receive -> parser -> verify_checksum -> ingress -> after-ingress decisions
(I2E clone, digest, resubmit, multicast, drop, enqueue) -> [queue] ->
egress -> after-egress decisions (E2E clone, drop, deparse with
compute_checksum first, recirculate, transmit truncated).

Facts mirrored from simple_switch.cpp (ingress_thread/egress_thread):
* every new packet's metadata is zero; ingress_port, packet_length,
  instance_type and ingress_global_timestamp are set on receive;
* an I2E clone re-parses the original bytes (ingress_port kept for the
  parse), then its metadata is reset except the preserved field list and
  instance_type = 1; a resubmit restarts ingress with the original bytes,
  metadata reset except the field list, instance_type = 6; a recirculated
  packet re-enters ingress with the deparsed bytes, metadata reset except
  the field list, instance_type = 4 (so ingress_port is 0 unless preserved);
* multicast sets instance_type = 5 and egress_rid per copy, copying the
  whole PHV; a unicast packet is enqueued with instance_type = 0;
* in egress, egress_spec starts at a value different from the drop port;
  the packet_length register is the received length, adjusted by every
  setValid/setInvalid of the ingress pipeline;
* an E2E clone copies the headers as modified by egress, resets the
  metadata except the field list, instance_type = 2, and goes back to the
  egress queue of the session's port.
bmv2 loops forever on a packet that always recirculates/resubmits; we
bound the passes (MAX_PASSES) and drop with a log line.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from testbed.p4model.runtime.packet import Cursor, ExitControl, PacketAbort, PacketContext, ParseError

log = logging.getLogger("testbed.p4model.v1model")

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
DROP_PORT = 511
MAX_PASSES = 64


# A packet between ingress and egress (what the traffic manager queues) is
# its ingress pass's PacketContext: .port, .priority (where to queue), .hdr,
# .meta, .sm (the PHV), .payload, .length (bmv2's packet-length register:
# egress packet_length), .ingress_length (what counters/meters count),
# .passes (resubmit/recirculation passes so far: the loop guard), .truncate
# (bytes to keep at transmit, 0: all; a clone's session limit).
EgressJob = PacketContext


def _job(port: int, priority: int, hdr, meta, sm, payload: bytes, length: int, ingress_length: int,
         passes: int, truncate: int) -> EgressJob:
    """A new job: a clone or a multicast replica (a unicast packet's own
    context becomes its job in place)."""
    job = PacketContext(ingress_length, sm)
    job.length = length
    job.payload = payload
    job.truncate = truncate
    job.port, job.priority, job.hdr, job.meta, job.passes = port, priority, hdr, meta, passes
    return job


class QueueMeta(NamedTuple):
    """Queueing metadata the traffic manager hands to egress, in µs and
    packets.  The names are tm.Departure's, so egress reads a Departure as
    it is; deq_ts_us becomes egress_global_timestamp (None: the clock's now)."""

    enq_ts_us: int = 0          # -> standard_metadata.enq_timestamp
    enq_qdepth: int = 0
    deq_timedelta_us: int = 0   # -> deq_timedelta
    deq_qdepth: int = 0
    deq_ts_us: int | None = None  # -> egress_global_timestamp


class EgressResult(NamedTuple):
    """What one egress pass produced: packets to transmit (port, bytes),
    and new jobs to enqueue (E2E clones; egress jobs of recirculated
    packets, whose ingress already ran)."""

    packets: list
    jobs: list


_result = tuple.__new__  # EgressResult(...) without NamedTuple's Python-level __new__
_NO_JOBS = ()  # read-only: EgressResult.jobs of a pass that made none
_NOTHING = EgressResult((), ())  # a pass that dropped its packet


def as_queue_meta(q) -> QueueMeta:
    """QueueMeta from None, a dict or a plain tuple (objects with QueueMeta's
    attribute names, e.g. a tm.Departure, are used as they are)."""
    if q is None:
        return QueueMeta()
    if isinstance(q, dict):
        return QueueMeta(**q)
    return QueueMeta(*q)


class V1Switch:
    """Runs a CompiledProgram with simple_switch semantics.

    Per packet: ingress(port, data, now_us=None) -> jobs, then per job
    egress(job, queue_meta) -> EgressResult, or egress_now(job, now_us) for a
    job that never waited.  ingress and egress_now are closures made once in
    __init__ (_make_ingress, _make_egress_pass); they raise what a packet
    raised (Pipeline adds the guard)."""

    def __init__(self, compiled, pre, digests, clock, drop_port: int = DROP_PORT,
                 max_passes: int = MAX_PASSES) -> None:
        self.c = compiled
        self.pre = pre
        self.digests = digests
        self.clock = clock
        self.drop_port = drop_port
        self.max_passes = max_passes
        self.rt = compiled.rt
        # no statement can ask for a clone, digest, resubmit, recirculation,
        # truncation or direct-meter result: a packet's context never needs
        # looking at or resetting for them
        self._plain = not getattr(compiled, "requests", True)
        b = compiled.blocks
        empty = getattr(compiled, "empty_blocks", ())  # controls that do nothing are not called
        self._parser = b["parser"]
        self._verify = None if "verify_checksum" in empty else b["verify_checksum"]
        self._ingress = b["ingress"]
        self._egress = None if "egress" in empty else b["egress"]
        self._compute = None if "compute_checksum" in empty else b["compute_checksum"]
        self._deparser = b["deparser"]
        self._H = compiled.hdr_class
        self._M = compiled.meta_class
        self._SM = compiled.sm_class
        self._fields = compiled.field_list_fns
        self.stats = {"received": 0, "transmitted": 0, "dropped": 0, "errors": 0,
                      "loop_drops": 0, "clones": 0, "resubmits": 0, "recirculations": 0,
                      "replicas": 0}
        self.ingress = self._make_ingress()
        self._egress_pass = self.egress_now = self._make_egress_pass()

    # The two per-packet functions are closures over this switch's parts: a
    # closure variable is read faster than an attribute of self, which on
    # this path is a quarter of a microsecond per packet.  Settings that may
    # change after construction (drop_port, _plain) are still read off self.

    def _make_ingress(self):
        switch, stats, rt, clock = self, self.stats, self.rt, self.clock
        new_hdr, new_meta, new_sm = self._H, self._M, self._SM
        parser, verify, ingress_control = self._parser, self._verify, self._ingress
        after_ingress, resubmit = self._after_ingress, self._resubmit
        cursor = Cursor(b"")  # one per switch: a parse never outlives it, nor starts another

        def ingress(port: int, data: bytes, now_us: int | None = None) -> list:
            """Receive `data` on `port` at `now_us` (default: the clock's now)
            and run the ingress side; returns the EgressJobs to queue
            (after-ingress decisions done).

            The first pass is written out here (_ingress_pass is the same for
            resubmitted and recirculated passes) and a pass that asked for
            nothing but one unicast copy or a drop returns at once; clones,
            digests, resubmit and multicast go through _after_ingress."""
            stats["received"] += 1
            length = len(data)
            hdr, meta, sm = new_hdr(), new_meta(), new_sm()
            sm.ingress_port = port
            sm.ingress_global_timestamp = (clock.now_us() if now_us is None else now_us) & 0xFFFFFFFFFFFF
            sm.packet_length = length  # instance_type: NORMAL, the new metadata's 0
            ctx = PacketContext(length, sm)
            rt.pkt = ctx
            cursor.data = data
            cursor.off = 0
            cursor.end = length
            try:
                parser(cursor, hdr, meta, sm)
            except ParseError as err:
                sm.parser_error = err.code
            ctx.payload = data[cursor.off:]
            if verify is not None:
                try:
                    verify(hdr, meta)
                except ExitControl:
                    pass
            ingress_control(hdr, meta, sm)
            if not sm.mcast_grp and (switch._plain or ctx.clone_session is None and ctx.digest is None
                                     and ctx.resubmit is None):
                out = sm.egress_spec
                if out == switch._drop_port:
                    stats["dropped"] += 1
                    return []
                sm.instance_type = NORMAL
                ctx.port = out
                ctx.priority = sm.priority
                ctx.hdr = hdr
                ctx.meta = meta
                ctx.passes = 0
                return [ctx]  # length, ingress_length, payload, truncate are already the job's
            jobs: list = []
            resubmit(port, data, after_ingress(ctx, port, data, hdr, meta, sm, 0, jobs), 0, jobs)
            return jobs

        return ingress

    def _make_egress_pass(self):
        switch, stats, rt = self, self.stats, self.rt
        egress_control, compute, deparser = self._egress, self._compute, self._deparser
        after_egress = self._after_egress

        def egress_now(job: EgressJob, now_us: int | None) -> EgressResult | bytes:
            """Egress control, after-egress decisions and deparse of a job
            that left its queue as it arrived, at `now_us` (tm.depart_now):
            enq_timestamp = egress_global_timestamp = now_us, queue depths
            and deq_timedelta 0 (None: egress() has set the queue fields).

            One unicast frame with nothing else asked for is the common case:
            it ends here and returns the frame itself (bytes, for job.port); a
            pass that asked for more goes on in _after_egress and returns an
            EgressResult, as a drop does."""
            sm = job.sm
            if now_us is not None:
                sm.enq_timestamp = now_us & 0xFFFFFFFF
                sm.enq_qdepth = sm.deq_timedelta = sm.deq_qdepth = 0
                sm.egress_global_timestamp = now_us & 0xFFFFFFFFFFFF
            hdr, meta = job.hdr, job.meta
            sm.egress_port = job.port
            sm.egress_spec = switch._egress_spec_start
            sm.packet_length = job.length & 0xFFFFFFFF
            ctx = job
            if switch._plain:  # one frame or a drop is all that can come out
                rt.pkt = ctx
                if egress_control is not None:
                    egress_control(hdr, meta, sm)
            else:
                # the job's context serves the egress pass: its per-pass requests start empty
                # (length, ingress_length, payload and sm carry over, as bmv2's registers do)
                limit = job.truncate
                if ctx.clone_session is not None or ctx.recirculate is not None or ctx.resubmit is not None \
                        or ctx.digest is not None:
                    ctx.clone_session = ctx.resubmit = ctx.recirculate = ctx.digest = None
                    ctx.clone_fields = ()
                if limit:
                    ctx.truncate = 0
                if ctx.dm is not None:
                    ctx.dm = None
                rt.pkt = ctx
                if egress_control is not None:
                    egress_control(hdr, meta, sm)
                if ctx.clone_session is not None or ctx.recirculate is not None or limit or ctx.truncate:
                    return after_egress(ctx, hdr, meta, sm, limit)
            if sm.egress_spec == switch._drop_port:
                stats["dropped"] += 1
                return _NOTHING
            if compute is not None:  # deparse(), written out: the per-packet path
                try:
                    compute(hdr, meta)
                except ExitControl:
                    pass
            out: list = []
            deparser(out, hdr)
            payload = ctx.payload
            out.append(payload if payload.__class__ is bytes else bytes(payload))
            stats["transmitted"] += 1
            return b"".join(out)

        return egress_now

    @property
    def drop_port(self) -> int:
        return self._drop_port

    @drop_port.setter
    def drop_port(self, port: int) -> None:
        self._drop_port = port
        self._egress_spec_start = 0 if port != 0 else 1  # in egress: anything but the drop port

    # ------------------------------------------------------------ ingress

    def _parse(self, data: bytes, hdr, meta, sm, ctx) -> None:
        cur = Cursor(data)
        try:
            self._parser(cur, hdr, meta, sm)
        except ParseError as err:
            sm.parser_error = err.code
        ctx.payload = data[cur.off:]

    def _verify_checksums(self, hdr, meta) -> None:
        if self._verify is not None:
            try:
                self._verify(hdr, meta)
            except ExitControl:
                pass

    def _resubmit(self, port: int, data: bytes, preserve, passes: int, jobs: list) -> None:
        """Ingress again with the original bytes while a pass asks for it
        (`preserve`: (field_list_fn, old_meta, old_sm), None: no request)."""
        while preserve is not None:
            passes += 1
            self.stats["resubmits"] += 1
            if passes >= self.max_passes:
                self.stats["loop_drops"] += 1
                log.warning("packet resubmitted %d times: dropped (bmv2 would loop forever)", passes)
                return
            preserve = self._ingress_pass(port, data, RESUBMIT, preserve, passes, jobs)

    def _new_phv(self, port, length, instance_type, preserve):
        hdr, meta, sm = self._H(), self._M(), self._SM()
        if preserve is not None:
            fn, old_meta, old_sm = preserve
            fn(old_meta, old_sm, meta, sm)
        else:
            sm.ingress_port = port
            sm.ingress_global_timestamp = self.clock.now_us() & 0xFFFFFFFFFFFF
        sm.instance_type = instance_type
        sm.packet_length = length
        return hdr, meta, sm

    def _ingress_pass(self, port, data, instance_type, preserve, passes, jobs):
        """One ingress pass of a resubmitted or recirculated packet; returns
        the next resubmit request (or None)."""
        length = len(data)
        hdr, meta, sm = self._new_phv(port, length, instance_type, preserve)
        ctx = PacketContext(length, sm)
        self.rt.pkt = ctx
        self._parse(data, hdr, meta, sm, ctx)
        self._verify_checksums(hdr, meta)
        self._ingress(hdr, meta, sm)
        return self._after_ingress(ctx, port, data, hdr, meta, sm, passes, jobs)

    def _after_ingress(self, ctx, port, data, hdr, meta, sm, passes, jobs):
        """The after-ingress decisions in bmv2's order: I2E clone, digest,
        resubmit (returned: (field_list_fn, meta, sm), ends the pass),
        multicast, drop, unicast."""
        # I2E clone: the received bytes re-parsed, metadata reset but the list
        if ctx.clone_session is not None:
            self._ingress_clone(ctx, port, data, meta, sm, passes, jobs)
        if ctx.digest is not None:
            self.digests.push(*ctx.digest)
        if ctx.resubmit is not None:
            return (ctx.resubmit, meta, sm)
        mgid = sm.mcast_grp
        if mgid:
            sm.instance_type = REPLICATION
            self._multicast(hdr, meta, sm, ctx, ctx.ingress_length, mgid, passes, jobs)
            return None
        if sm.egress_spec == self.drop_port:
            self.stats["dropped"] += 1
            return None
        sm.instance_type = NORMAL
        ctx.port, ctx.priority, ctx.hdr, ctx.meta, ctx.passes = sm.egress_spec, sm.priority, hdr, meta, passes
        jobs.append(ctx)  # length, ingress_length, payload, truncate are already the job's
        return None

    def _ingress_clone(self, ctx, port, data, meta, sm, passes, jobs) -> None:
        session = self.pre.clone_session(ctx.clone_session & 0x7FFF)
        fields = ctx.clone_fields
        if session is None:
            return
        for instance, out_port in session.replicas:
            chdr, cmeta, csm = self._H(), self._M(), self._SM()
            csm.ingress_port = port
            cctx = PacketContext(len(data), csm)
            self.rt.pkt = cctx
            self._parse(data, chdr, cmeta, csm, cctx)
            cmeta, csm = self._M(), self._SM()     # reset metadata, keep the list
            fields(meta, sm, cmeta, csm)
            csm.instance_type = INGRESS_CLONE
            csm.egress_rid = instance
            csm.packet_length = len(data)
            self.stats["clones"] += 1
            jobs.append(_job(out_port, 0, chdr, cmeta, csm, cctx.payload, len(data), len(data),
                             passes, session.packet_length_bytes))
        self.rt.pkt = ctx

    def _multicast(self, hdr, meta, sm, ctx, ingress_length, mgid, passes, jobs) -> None:
        for rid, port in self.pre.group(mgid):
            sm.egress_rid = rid
            self.stats["replicas"] += 1
            jobs.append(_job(port, sm.priority, hdr._copy(), meta._copy(), sm._copy(),
                             ctx.payload, ctx.length, ingress_length, passes, ctx.truncate))

    # ------------------------------------------------------------- egress

    def egress(self, job: EgressJob, queue_meta=None) -> EgressResult:
        """Run egress and the deparser for one dequeued job."""
        q = queue_meta
        try:
            ts = q.deq_ts_us
        except AttributeError:  # None, a dict or a plain tuple
            q = as_queue_meta(q)
            ts = q.deq_ts_us
        sm = job.sm
        sm.enq_timestamp = q.enq_ts_us & 0xFFFFFFFF
        sm.enq_qdepth = q.enq_qdepth & 0x7FFFF
        sm.deq_timedelta = q.deq_timedelta_us & 0xFFFFFFFF
        sm.deq_qdepth = q.deq_qdepth & 0x7FFFF
        sm.egress_global_timestamp = (self.clock.now_us() if ts is None else ts) & 0xFFFFFFFFFFFF
        result = self._egress_pass(job, None)
        if result.__class__ is bytes:
            return _result(EgressResult, ([(job.port, result)], _NO_JOBS))
        return result

    def _after_egress(self, job: EgressJob, hdr, meta, sm, limit: int) -> EgressResult:
        """The after-egress decisions of a pass that asked for an E2E clone,
        recirculation or truncation (`limit`: the job's own truncation)."""
        ctx = job
        packets, jobs = [], []
        if ctx.clone_session is not None:
            self._egress_clone(ctx, job, jobs)
        if sm.egress_spec == self._drop_port:
            self.stats["dropped"] += 1
            return _result(EgressResult, (packets, jobs))
        data = self.deparse(hdr, meta, ctx)
        if ctx.recirculate is not None:
            passes = job.passes + 1
            self.stats["recirculations"] += 1
            if passes >= self.max_passes:
                self.stats["loop_drops"] += 1
                log.warning("packet recirculated %d times: dropped (bmv2 would loop forever)", passes)
                return EgressResult(packets, jobs)
            preserve = self._ingress_pass(0, data, RECIRC, (ctx.recirculate, meta, sm), passes, jobs)
            self._resubmit(0, data, preserve, passes, jobs)
            return EgressResult(packets, jobs)
        if ctx.truncate and (not limit or ctx.truncate < limit):
            limit = ctx.truncate
        if limit and len(data) > limit:
            data = data[:limit]
        self.stats["transmitted"] += 1
        packets.append((job.port, data))
        return _result(EgressResult, (packets, jobs))

    def deparse(self, hdr, meta, ctx) -> bytes:
        if self._compute is not None:
            try:
                self._compute(hdr, meta)
            except ExitControl:
                pass
        out: list = []
        self._deparser(out, hdr)
        payload = ctx.payload
        out.append(payload if payload.__class__ is bytes else bytes(payload))
        return b"".join(out)

    def _egress_clone(self, ctx, job, jobs) -> None:
        session = self.pre.clone_session(ctx.clone_session & 0x7FFF)
        if session is None:
            return
        for instance, port in session.replicas:
            cmeta, csm = self._M(), self._SM()
            ctx.clone_fields(job.meta, job.sm, cmeta, csm)
            csm.instance_type = EGRESS_CLONE
            csm.egress_rid = instance
            self.stats["clones"] += 1
            jobs.append(_job(port, 0, job.hdr._copy(), cmeta, csm, ctx.payload, ctx.length,
                             job.ingress_length, job.passes, session.packet_length_bytes))


def run_guarded(fn, on_error):
    """Call fn(); a PacketAbort or any other exception from a packet is
    reported through on_error(exc) instead of propagating."""
    try:
        return fn()
    except PacketAbort as exc:
        on_error(exc)
    except Exception as exc:  # noqa: BLE001 - a packet must never stop the switch
        on_error(exc)
    return None
