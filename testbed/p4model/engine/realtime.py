"""Switches on the native engine in real time: the packet path in C, the control side in Python.

Model.  Each testbed.p4model.switch.loop.Switch keeps its identity and its
control side (P4Runtime server, the TM's text commands, logs); its packets
move in engine.c's own thread:

    engine thread (C)   epoll_pwait2 over every wire port and a wake-up
                        eventfd, timing out at the earliest event plus
                        SLACK_US; each pass, holding the engine's lock: every
                        event due, every readable port drained (recvmmsg),
                        due frames sent (one sendmmsg per port)
    main thread         select() over the switches' TM command queues, the
                        engine's CPU-port eventfd and a stop pipe, at least
                        every CONTROL_TICK_S: TM commands run holding the
                        lock (settings copied into the engine at once),
                        PacketIn frames go to each switch's server, digests
                        and idle timeouts are polled
    gRPC threads        P4Runtime calls run one at a time (Switch.call's guard,
                        a lock of the control side); only the moment a table's
                        rows are handed to C, a pipeline is swapped or a
                        PacketOut enters takes the engine's lock, so a write
                        holds the packets up for one copy of the rows

Rules.  Every switch's program must be on the native back end: a
SetForwardingPipelineConfig whose program the native back end refuses is
refused in one line (start the switch with --backend python for it).  The
engine makes every copy a program asks for (multicast, clones, resubmit,
recirculation).  The traffic manager's settings live in the Python TrafficManager (its commands,
the controller's plan); its packets and counters live in the engine, and
EngineTrafficManager reads them from there.  Pcap files (--pcap) are
written by the engine, in the Python switch's names and format.
"""

from __future__ import annotations

import logging
import os
import select
import threading

from testbed.p4model.engine.binding import NativeFabric, SwitchStats
from testbed.p4model.engine.traffic_manager import EngineTrafficManager
from testbed.p4model.p4runtime.status import RpcError

log = logging.getLogger("testbed.p4model.engine")

CONTROL_TICK_S = 0.05  # digests and idle timeouts are polled at least this often
PCAP_FLUSH_NS = 1_000_000_000
# Timer slack of the engine's loop: a timed event may run this late so that close events share a
# wake-up (each wake-up costs a few syscalls and a context switch); it shows in the lags.
SLACK_US = 100


class EnginePort:
    """A switch port whose socket lives in the engine: its name and counters, as RawPort shows them."""

    def __init__(self, number: int, iface: str) -> None:
        self.number, self.iface, self.fd = number, iface, None
        self.engine: NativeFabric | None = None
        self.index = -1

    def stats(self) -> dict:
        wire = self.engine.wire_stats(self.index, self.number) if self.engine is not None else {}
        return {"port": self.number, "iface": self.iface, "rx_frames": wire.get("rx_frames", 0),
                "tx_frames": wire.get("tx_frames", 0), "tx_errors": wire.get("tx_errors", 0),
                "rx_truncated": wire.get("rx_truncated", 0)}

    def send(self, data: bytes) -> bool:  # the Python loop never runs on these ports
        return False

    def close(self) -> None:
        pass


class EngineLoop:
    """Runs `switches` (name -> Switch built with EnginePort ports) on one native engine until stop()."""

    def __init__(self, switches: dict, clock, seed: int = 1) -> None:
        self.switches = switches
        self.clock = clock
        self.engine = NativeFabric(seed=seed)
        self.engine.prepare_realtime()
        self.engine.set_slack(int(os.environ.get("TESTBED_ENGINE_SLACK_US", SLACK_US)) * 1000)
        self.index: dict[str, int] = {}
        self._stop_r, self._stop_w = os.pipe()
        self._stopping = False
        self._control = threading.RLock()  # one P4Runtime call at a time, as the Python loop has it
        self.stats = {"engine": "native"}
        for name, switch in switches.items():
            self._attach(name, switch)

    def _attach(self, name: str, switch) -> None:
        engine = self.engine
        pipeline = switch.datapath.pipeline if switch.datapath is not None else None
        _require_native(pipeline)
        index = engine.add_switch(pipeline, switch.tm, switch.drop_port)
        self.index[name] = index
        switch.tm.__class__ = EngineTrafficManager
        switch.tm.bind(engine, index)
        switch.stats = SwitchStats(engine, index)
        for number, port in switch.ports.items():
            port.engine, port.index = engine, index
            engine.wire_port(index, number, port.iface)
        if switch.cpu_port is not None:
            engine.cpu_port(index, switch.cpu_port)
        for number, capture in list(switch.captures.items()):  # the engine writes the same files
            capture.close()
            engine.pcap(index, number, capture.rx.path, capture.tx.path)
        switch.captures = {}
        self._lock_tables(pipeline)
        switch.guard = self._guarded
        switch.on_install = lambda pipeline, i=index, s=switch: self._install(i, pipeline, s.drop_port)
        switch.on_inject = lambda data, i=index, s=switch: self._inject(i, s.cpu_port, data)

    def _guarded(self, fn):
        with self._control:
            return fn()

    def _lock_tables(self, pipeline) -> None:
        for table in getattr(pipeline, "tables", {}).values():
            table._c_lock = self.engine.locked

    def _install(self, index: int, pipeline, drop_port: int) -> None:
        _require_native(pipeline)
        self._lock_tables(pipeline)
        with self.engine.locked():
            self.engine.set_pipeline(index, pipeline, drop_port)

    def _inject(self, index: int, port: int, data: bytes) -> None:
        with self.engine.locked():
            self.engine.inject_now(index, port, data)

    def connect(self, a: str, a_port: int, b: str, b_port: int) -> None:
        """A cable between two switches of this engine, both directions."""
        self.engine.cable(self.index[a], a_port, self.index[b], b_port)

    def stop(self) -> None:
        """Ask the loop to end (safe from signal handlers)."""
        self._stopping = True
        self.engine.stop()
        try:
            os.write(self._stop_w, b"!")
        except OSError:
            pass

    def run(self) -> None:
        """The engine in its own thread; this thread serves TM commands, PacketIn and digests."""
        failure: list[BaseException] = []

        def forward() -> None:
            try:
                self.engine.run_realtime(self.clock.reading()[1])
            except BaseException as error:  # reported by run()
                failure.append(error)
            finally:
                self.stop()

        thread = threading.Thread(target=forward, name="native-engine", daemon=True)
        thread.start()
        switches = list(self.switches.values())
        commands = {s.command_queue.fileno(): s for s in switches}
        notify = self.engine.notify_fd()
        fds = [*commands, notify, self._stop_r]
        by_index = {self.index[name]: s for name, s in self.switches.items()}
        next_flush = self.clock.now_ns() + PCAP_FLUSH_NS
        try:
            while not self._stopping:
                try:
                    ready = select.select(fds, (), (), CONTROL_TICK_S)[0]
                except InterruptedError:
                    continue
                for fd in ready:
                    switch = commands.get(fd)
                    if switch is not None:
                        with self.engine.locked():
                            switch.command_queue.drain()
                    elif fd == notify:
                        _drain_eventfd(notify)
                        for index, frame in self.engine.take_cpu():
                            switch = by_index[index]
                            if switch.server is not None:
                                switch.stats["packet_in"] += 1
                                switch.server.packet_in(frame)
                now = self.clock.now_ns()
                if now >= next_flush:  # a crash loses at most a second of pcap
                    next_flush = now + PCAP_FLUSH_NS
                    self.engine.pcap_flush()
                for switch in switches:
                    if switch.server is not None and switch.datapath is not None:
                        with self._control:
                            switch.server.after_packets(now)
        finally:
            self.engine.stop()
            thread.join(5.0)
            self.engine.pcap_flush()
            totals = self.engine.totals()
            self.stats.update(totals)
            log.info("native engine: %d cell-hops, %d events, %d wake-ups, its thread %.3f CPU-s",
                     totals["cell_hops"], totals["events"], totals["wakeups"], totals["thread_cpu_s"])
            for switch in switches:
                switch.fail_pending_calls()
        if failure:
            raise failure[0]


def _require_native(pipeline) -> None:
    if pipeline is not None and getattr(pipeline, "backend", "python") != "native":
        raise RpcError("INVALID_ARGUMENT", "this switch runs the native engine and the program is on the Python "
                                           "pipeline; start it with --backend python to run such a program")


def _drain_eventfd(fd: int) -> None:
    try:
        os.read(fd, 8)
    except (BlockingIOError, OSError):
        pass
