"""The switch's event loop: ports, traffic manager, pipeline, transmit.

One thread owns every packet and every piece of data-plane state:

    select(ports, TM command queue, wake-up pipe; timeout = next TM dequeue,
           next transmit, next digest deadline, at most 1 s)
      port readable   -> up to BATCH frames, each: ingress -> per copy
                         tm.depart_now (idle link: egress and send at once)
                         or else tm.offer (queued)
      commands        -> TM text commands (switch-cli) run here, between packets
      wake-up pipe    -> control-plane calls from gRPC threads run here
      then            -> tm.dequeue_ready -> egress (queue metadata) ->
                         TransmitSchedule -> send at transmit_at ->
                         flush every port (a port may batch its sends in
                         a TX ring: one syscall per pass, not per frame)

Why a call queue rather than a lock: the packet path never takes a lock,
and a P4Runtime Write becomes atomic with respect to packets for free.
gRPC threads hand a closure over (`call`), poke the pipe and wait for the
result; under full load the loop returns to select() after every batch
(BATCH frames per ready port), so a call waits at most one batch.

select() rather than epoll: it takes a timeout in microseconds (epoll's is
milliseconds), which matters when a link is shaped at tens of Mbit/s; the
switch has few descriptors.

Packet problems never end the loop: exceptions from a pipeline stage are
counted, logged (once per kind at warning level, every time at debug) and
the packet is dropped.
"""

from __future__ import annotations

import logging
import os
import queue
import select
import threading
import time
from typing import Any, Callable

from testbed.p4model.clock import Clock, MonotonicClock
from testbed.p4model.p4runtime.device import Device
from testbed.p4model.p4runtime.status import RpcError
from testbed.p4model.switch.datapath import Datapath
from testbed.p4model.switch.pcap import PortCapture
from testbed.p4model.switch.ports import RawPort
from testbed.p4model.tm import DROP_FULL, DROP_PRIORITY, TMCommands, TrafficManager, TransmitSchedule
from testbed.cells import pfc
from testbed.cells.classify import cell_class
from testbed.p4model.tm.model import DROP_LINK_LOSS, LINK_LOST, PRIORITY_DROPPED, UNCLASSIFIED
from testbed.p4model.tm.control import CommandQueue

log = logging.getLogger("testbed.p4model.switch")

BATCH = 64
MAX_WAIT_S = 1.0
CALL_TIMEOUT_S = 30.0


_MAC_CONTROL = pfc.ETHERTYPE.to_bytes(2, "big")


def _pause_source_mac(port: int) -> bytes:
    """A locally administered source address for the pause frames a port sends."""
    return bytes((0x02, 0, 0, 0, port >> 8 & 0xFF, port & 0xFF))


class _Call:
    __slots__ = ("fn", "result", "error", "done")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.result = self.error = None
        self.done = threading.Event()


class Switch(Device):
    """Ports + TM + pipeline + event loop; also the P4Runtime server's Device."""

    def __init__(self, ports: dict[int, RawPort], clock: Clock | None = None, cpu_port: int | None = None,
                 drop_port: int = 511, priority_queues: int = 1, pcap_dir: str | None = None,
                 memory_ports: dict[int, str] | None = None, logger: logging.Logger | None = None) -> None:
        """`ports` are real interfaces; `memory_ports` (number -> the name its pcap files take)
        are links to switches of the same fabric process, wired later through `handoffs`."""
        self.clock = clock or MonotonicClock()
        self.ports = ports
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.log = logger or log
        memory_ports = memory_ports or {}
        self.tm = TrafficManager(self.clock, priority_queues=priority_queues, ports=sorted({*ports, *memory_ports}))
        self.schedule = TransmitSchedule()
        self.tm_commands = TMCommands(self.tm)
        self.tm_commands.register("port_stats", "Each real port's frame counters, send errors included "
                                  "(a port whose interface is down cannot send).", self.port_stats)
        self.command_queue = CommandQueue(self.tm_commands)
        names = {**{n: p.iface for n, p in ports.items()}, **memory_ports}
        self.captures = {n: PortCapture(pcap_dir, iface) for n, iface in names.items()} if pcap_dir else {}
        # port -> hand_off(transmit_at_ns, frame): a link in memory (testbed/p4model/fabric)
        self.handoffs: dict[int, Callable[[int, bytes], None]] = {}
        self.datapath: Datapath | None = None
        self.server = None
        self._flushes = [p.flush for p in ports.values() if hasattr(p, "flush")]
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._stop = False
        self._loop_thread: int | None = None
        self._debug = self.log.isEnabledFor(logging.DEBUG)
        self.stats = {"rx": 0, "tx": 0, "pipeline_errors": 0, "ingress_drops": 0, "no_pipeline": 0,
                      "tm_drops": 0, "no_interface": 0, "drop_port": 0, "packet_in": 0, "loop_errors": 0,
                      "pfc_frames_rx": 0, "pfc_frames_tx": 0, "pfc_malformed": 0}
        self._warned: set[str] = set()
        # set by testbed/p4model/engine/realtime.py when the native engine moves the packets:
        # calls run under its guard, installs and PacketOut go to it, `stats` and the TM read it
        self.backend = "python"
        self.guard: Callable[[Callable[[], Any]], Any] | None = None
        self.on_install: Callable[[Any], None] | None = None
        self.on_inject: Callable[[bytes], None] | None = None

    # ---- Device (for the P4Runtime server) ----------------------------

    def call(self, fn: Callable[[], Any]) -> Any:
        if self.guard is not None:
            return self.guard(fn)
        if self._loop_thread is None or self._loop_thread == threading.get_ident():
            return fn()
        if self._stop:
            raise RpcError("UNAVAILABLE", "the switch is shutting down")
        slot = _Call(fn)
        self._calls.put(slot)
        self._poke()
        if not slot.done.wait(CALL_TIMEOUT_S):
            raise RpcError("UNAVAILABLE", f"the switch's event loop did not answer within {CALL_TIMEOUT_S} s")
        if slot.error is not None:
            raise slot.error
        return slot.result

    def install(self, config) -> None:
        pipeline = config.pipeline if config is not None else None
        if self.on_install is not None:
            self.on_install(pipeline)
        if pipeline is None:
            self.datapath = None
            return
        pipeline.cpu_port = self.cpu_port
        if hasattr(pipeline, "drop_port"):
            pipeline.drop_port = self.drop_port
        self.datapath = Datapath(pipeline)
        self.log.info("pipeline installed (%s)", self.datapath.mode)

    def inject(self, data: bytes) -> None:
        if self.on_inject is not None and self.cpu_port is not None:
            self.on_inject(data)
            return
        if self.cpu_port is not None:
            self.receive(self.cpu_port, data, self.clock.now_ns())
            self.service(self.clock.now_ns())

    def _poke(self) -> None:
        try:
            os.write(self._wake_w, b"!")
        except (BlockingIOError, OSError):
            pass

    def stop(self) -> None:
        """Ask the loop to end (safe from signal handlers and other threads)."""
        self._stop = True
        self._poke()

    # ---- packet path ---------------------------------------------------
    #
    # Per packet the path is: one ingress call, per copy one TM call, one
    # egress call and one send.  No wrapper objects (the pipeline's own jobs
    # are queued).  Each frame's arrival time is its own clock reading; a copy
    # whose link is idle leaves its queue as it arrives (tm.depart_now: same
    # model, property-tested) and is egressed and sent at once, and a frame
    # that is due when egress ends is sent at once instead of going through
    # the transmit schedule, unless earlier frames of its port are still held
    # there (per-port order is never changed).

    def receive(self, port: int, data: bytes, now_ns: int) -> None:
        """One frame from `port` at `now_ns`: ingress and queue its copies
        (each waits in the TM until service() dequeues it)."""
        if data[12:14] == _MAC_CONTROL:
            self._on_pause_frame(port, data, now_ns)
            return
        datapath = self.datapath
        if datapath is None:
            self.stats["no_pipeline"] += 1
            return
        try:
            jobs = datapath.ingress(port, data, now_ns // 1000)
        except Exception as error:
            self._packet_error(datapath, "ingress", port, error)
            return
        if not jobs:
            self.stats["ingress_drops"] += 1
            if self._debug:
                self.log.debug("port %d in %d B: dropped in ingress", port, len(data))
            return
        self._enqueue(datapath, jobs, port, now_ns, len(data), cell_class(data), source=port)
        if self.tm.pfc_events:
            self._send_pause_frames(now_ns)

    def receive_frames(self, port: int, frames, arrival_ns: int | None = None) -> None:
        """receive() then service() for every frame of one drained batch (same
        semantics, less overhead).  Each frame arrives at its own clock
        reading, or at `arrival_ns` (a frame handed over by a link in memory
        arrives when the upstream model says, however late the loop is); a
        copy whose link is idle departs at once and is egressed and sent
        before the next frame is looked at, the rest is queued."""
        datapath = self.datapath
        if datapath is None:
            self.stats["no_pipeline"] += len(frames)
            return
        if self._debug:
            for data in frames:
                now_ns = self.clock.now_ns() if arrival_ns is None else arrival_ns
                self.receive(port, data, now_ns)
                self.service(now_ns)
            return
        if arrival_ns is None:  # frames from a port: each at its own clock reading
            read_clock, clock_offset = self.clock.reading()
        ingress, egress_now = datapath.ingress, datapath.egress_now
        depart_now, offer = self.tm.depart_now, self.tm.offer
        classify = cell_class
        drop_port = self.drop_port
        schedule = self.schedule
        on_wire = schedule.transmit_lag
        ports = self.ports if not self.captures else {}  # captured ports go through _send
        handoffs = self.handoffs if not self.captures else {}  # captured links go through _release
        drops = tm_drops = to_drop_port = sent = 0
        tm = self.tm
        for data in frames:
            now_ns = read_clock() - clock_offset if arrival_ns is None else arrival_ns
            if data[12:14] == _MAC_CONTROL:  # PFC: the MAC takes it, the pipeline never sees it
                self._on_pause_frame(port, data, now_ns)
                continue
            now_us = now_ns // 1000
            cls = classify(data)
            try:
                jobs = ingress(port, data, now_us)
            except Exception as error:
                self._packet_error(datapath, "ingress", port, error)
                continue
            if not jobs:
                drops += 1
                continue
            for job in jobs:
                out = job.port
                if out == drop_port:
                    to_drop_port += 1
                    continue
                try:
                    at = depart_now(out, job.priority, now_ns, job.length, cls)
                    if at is None:
                        if offer(out, job.priority, (datapath, job), now_ns, job.length, cls, port) < 0:
                            tm_drops += 1
                        continue
                except Exception as error:  # e.g. an egress port the TM cannot model
                    self._packet_error(None, "enqueue", port, error)
                    continue
                try:
                    result = egress_now(job, now_us)
                except Exception as error:
                    self._packet_error(datapath, "egress", out, error)
                    continue
                if result.__class__ is bytes:  # the usual case: one frame, to the job's port
                    hand_off = handoffs.get(out)
                    if hand_off is not None:  # a link in memory: the far end takes it at `at` (as _release)
                        hand_off(at, result)
                        sent += 1
                        continue
                    if at == now_ns and not schedule.held:  # on time, nothing held: out it goes
                        p = ports.get(out)
                        if p is not None:
                            on_wire.on_time += 1
                            sent += p.send(result)
                            continue
                    result = (((out, result),), None)
                frames_out, more = result
                sent += self._release(frames_out, at, now_ns)
                if more:
                    self._enqueue(datapath, more, out, now_ns)
        stats = self.stats
        stats["tx"] += sent
        if drops or tm_drops or to_drop_port:
            stats["ingress_drops"] += drops
            stats["tm_drops"] += tm_drops
            stats["drop_port"] += to_drop_port
        if tm.pfc_events:
            self._send_pause_frames(self.clock.now_ns() if arrival_ns is None else arrival_ns)

    def _on_pause_frame(self, port: int, data: bytes, now_ns: int) -> None:
        """A PFC frame from the link on `port`: that port's queues hold the named priorities."""
        try:
            named = pfc.parse(data)
        except pfc.PauseFrameError:
            self.stats["pfc_malformed"] += 1
            return
        self.stats["pfc_frames_rx"] += 1
        rate = self.tm.port_rate_bps(port)
        for priority, quanta in named:
            until = now_ns + round(pfc.quanta_s(quanta, rate) * 1e9) if quanta and rate else \
                (1 << 62 if quanta else 0)
            self.tm.pause(port, priority, until, now_ns)

    def _send_pause_frames(self, now_ns: int) -> None:
        """The TM's due XOFF/XON frames, each out of the port its packets came in on: it reaches
        the sender a frame time and the link's delay after the moment the TM decided it."""
        events, self.tm.pfc_events = self.tm.pfc_events, []
        for source, priority, pause, at_ns in events:
            frame = pfc.build(_pause_source_mac(source), priority, pause)
            self.stats["pfc_frames_tx"] += 1
            self.stats["tx"] += self._release(((source, frame),), self.tm.control_frame_arrival_ns(source, at_ns,
                                                                                               len(frame)), now_ns)

    def _enqueue(self, datapath: Datapath, jobs, port: int, now_ns: int, size: int = 0,
                 cls: int = UNCLASSIFIED, source: int = -1) -> None:
        debug = self._debug
        offer = self.tm.offer
        for job in jobs:
            if job.port == self.drop_port:
                self.stats["drop_port"] += 1
                if debug:
                    self.log.debug("port %d in %d B: to the drop port", port, size)
                continue
            try:
                code = offer(job.port, job.priority, (datapath, job), now_ns, job.length, cls, source)
            except Exception as error:  # e.g. an egress port the TM cannot model
                self._packet_error(None, "enqueue", port, error)
                continue
            if code < 0:
                self.stats["tm_drops"] += 1
            if debug:
                self.log.debug("port %d in %d B: -> port %d prio %d %s", port, size, job.port, job.priority,
                          f"queued behind {code}" if code >= 0 else
                          f"dropped ({DROP_PRIORITY if code == PRIORITY_DROPPED else DROP_LINK_LOSS if code == LINK_LOST else DROP_FULL})")

    def service(self, now_ns: int) -> None:
        """Dequeue what is due, run egress, transmit what is due."""
        schedule = self.schedule
        if self.tm.has_work():
            departures = self.tm.dequeue_ready(now_ns)
            if departures:
                depart = self._depart
                sent = 0
                for d in departures:
                    sent += depart(d, now_ns)
                self.stats["tx"] += sent
        if self.tm.pfc_events:
            self._send_pause_frames(now_ns)
        if schedule.held:
            self._transmit(schedule.pop_due(now_ns))
        for flush in self._flushes:  # ports may batch their sends (TX rings): out they go
            flush()
        server = self.server
        if server is not None and self.datapath is not None:
            server.after_packets(now_ns)

    def _depart(self, d, now_ns: int) -> int:
        """Egress for one Departure, then its frames: sent now when due (and no
        earlier frame of the port is held), else held until transmit_at.
        Returns how many went out of a port."""
        datapath, job = d.packet
        try:
            frames, more = datapath.egress(job, d)
        except Exception as error:
            self._packet_error(datapath, "egress", d.port, error)
            return 0
        sent = self._release(frames, d.transmit_at_ns, now_ns)
        if not frames and self._debug:
            self.log.debug("port %d: dropped in egress", d.port)
        if more:
            self._enqueue(datapath, more, d.port, now_ns)
        return sent

    def _release(self, frames, at: int, now_ns: int) -> int:
        """Each (port, frame) due at `at`: sent now when due and no earlier
        frame of its port is held, else held until then.  Returns how many
        went out of a port."""
        schedule = self.schedule
        handoffs = self.handoffs
        sent = 0
        for port, data in frames:
            if handoffs:
                hand_off = handoffs.get(port)
                if hand_off is not None:  # a link in memory: the far end takes it at `at`
                    if self.captures:
                        self.captures[port].tx.write(data)
                    hand_off(at, data)
                    sent += 1
                    continue
            if at <= now_ns and not (schedule.held and schedule.holds(port)):
                if at == now_ns:  # what pop_due(now_ns) would record
                    schedule.transmit_lag.on_time += 1
                else:
                    schedule.transmit_lag.record(now_ns - at)
                sent += self._send(port, data)
            else:
                schedule.push(port, at, data)
        return sent

    def _send(self, port: int, data: bytes) -> int:
        """Write one frame (or hand it to the controller); 1 if it went out of a port."""
        p = self.ports.get(port)
        if p is not None:
            if p.send(data):
                if self.captures:
                    self.captures[port].tx.write(data)
                return 1
        elif port == self.cpu_port and self.server is not None:
            self.stats["packet_in"] += 1
            self.server.packet_in(data)
        else:
            self.stats["no_interface"] += 1
            if self._debug:
                self.log.debug("port %d has no interface: %d B dropped", port, len(data))
        return 0

    def port_stats(self) -> dict:
        return {str(n): p.stats() for n, p in self.ports.items() if hasattr(p, "stats")}

    def _transmit(self, due) -> None:
        send = self._send
        sent = 0
        for port, data in due:
            sent += send(port, data)
        self.stats["tx"] += sent

    def _packet_error(self, datapath: Datapath | None, stage: str, port: int, error: Exception) -> None:
        """A packet raised in `stage` (a pipeline stage of `datapath`, or the
        TM's enqueue when None): it is dropped, counted, and logged (at
        warning level once per kind of failure, then at debug level)."""
        self.stats["pipeline_errors"] += 1
        if datapath is not None:
            what = datapath.failed(error, stage, port)
        else:
            what = f"packet from port {port} dropped: {stage} failed: {type(error).__name__}: {error}"
        kind = f"{stage}:{type(error).__name__}"
        if kind not in self._warned:
            self._warned.add(kind)
            self.log.warning("%s (further such errors at debug level)", what)
        elif self._debug:
            self.log.debug("%s", what)

    # ---- the loop ------------------------------------------------------
    #
    # run() is this switch's own loop (one process per switch).  A fabric
    # process (testbed/p4model/fabric) runs many switches in one loop of its
    # own through the same pieces: wake_fd/run_calls, command_queue,
    # receive_frames, service, next_event_ns, and own_loop for the thread.

    @property
    def wake_fd(self) -> int:
        """Readable when a gRPC thread has handed the loop a call (run_calls runs it)."""
        return self._wake_r

    def own_loop(self, thread_id: int | None) -> None:
        """The thread that runs this switch's packets from now on (None: none, calls run inline)."""
        self._loop_thread = thread_id

    def run_calls(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except (BlockingIOError, OSError):
            pass
        while True:
            try:
                slot = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                slot.result = slot.fn()
            except BaseException as error:  # handed to the caller's thread
                slot.error = error
            slot.done.set()

    def next_event_ns(self) -> int | None:
        """When service() next has work: a dequeue, a held transmit or a digest deadline."""
        nxt = self.tm.next_event_ns()
        at = self.schedule.next_ns()
        if at is not None and (nxt is None or at < nxt):
            nxt = at
        if self.server is not None:
            at = self.server.next_deadline_ns()
            if at is not None and (nxt is None or at < nxt):
                nxt = at
        return nxt

    def _timeout(self, now_ns: int) -> float:
        nxt = self.next_event_ns()
        if nxt is None:
            return MAX_WAIT_S
        wait = (nxt - now_ns) / 1e9
        return 0.0 if wait <= 0 else min(wait, MAX_WAIT_S)

    def run(self) -> None:
        """Run until stop(); then flush pcaps and fail any waiting calls."""
        self._loop_thread = threading.get_ident()
        captures = self.captures
        by_fd = {p.fd: (p.receive, p.number, captures.get(p.number)) for p in self.ports.values()}
        cmd_fd = self.command_queue.fileno()
        fds = list(by_fd) + [cmd_fd, self._wake_r]
        now_ns = self.clock.now_ns
        receive_batch, service, timeout = self.receive_frames, self.service, self._timeout
        stats = self.stats
        sel = select.select
        next_flush = time.monotonic() + 1.0
        try:
            while not self._stop:
                try:
                    ready = sel(fds, (), (), timeout(now_ns()))[0]
                    for fd in ready:
                        port = by_fd.get(fd)
                        if port is not None:
                            receive, number, capture = port
                            frames = receive(BATCH)
                            if frames:
                                stats["rx"] += len(frames)
                                if capture is not None:
                                    write, stamp = capture.rx.write, time.time()
                                    for data in frames:
                                        write(data, stamp)
                                receive_batch(number, frames)
                        elif fd == cmd_fd:
                            self.command_queue.drain()
                        else:
                            self.run_calls()
                    service(now_ns())
                    if captures and time.monotonic() >= next_flush:
                        next_flush = time.monotonic() + 1.0
                        for c in captures.values():
                            c.flush()
                except InterruptedError:
                    continue
                except Exception as error:  # guard: the loop itself must survive anything
                    self.stats["loop_errors"] += 1
                    self.log.exception("switch loop error (continuing): %s", error)
        finally:
            self._loop_thread = None
            self.fail_pending_calls()
            for c in captures.values():
                c.close()

    def fail_pending_calls(self) -> None:
        while True:
            try:
                slot = self._calls.get_nowait()
            except queue.Empty:
                return
            slot.error = RpcError("UNAVAILABLE", "the switch is shutting down")
            slot.done.set()

    def close(self) -> None:
        for p in self.ports.values():
            p.close()
        for c in self.captures.values():
            c.close()
        self.command_queue.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
