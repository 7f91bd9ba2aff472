"""The UDP driver: runs an Endpoint and a WorkloadRunner on a real socket.

One socket bound to (addr, 4793) receives every cell; each flow (one per
peer) sends from its own socket and UDP source port (`flowports`), so
flow-hash ECMP sees flows. IP_RECVTOS gives each datagram's TOS byte (so
CE marks reach DCQCN); IP_TOS is set to ECT(0) for DATA and to not-ECT for
control cells. A select() loop sleeps
until the earlier of the next datagram and the endpoint's next deadline.
With a host link delay, each cell goes to the NIC's timed send queue with the
time it reaches the ToR (`testbed.host.nicqueue`): its native engine sends it
from a thread of its own and reads arrivals in batches (recvmmsg), so the loop
does not wake for the delay line; the pure-Python engine, used without a C
compiler, wakes the loop at each release instead. With the native engine the
loop replays events at their own times and coalesces wake-ups (`Agent.replay`).
The agent stops when its own messages are acknowledged and every message
addressed to it has been delivered, then lingers for a grace period so
peers' last retransmissions still get answered; SIGTERM stops it early.
Nothing a peer sends can raise out of the loop.

A dual-port NIC (`nic_interfaces` names two interfaces, one per ToR) uses
both ports at once (`testbed.host.nic`): each flow has a socket per port,
bound to that port's interface, and each port its own wire.  The agent
listens to the kernel's link changes (`testbed.host.carrier`): a port that
loses carrier is left at once; IP_PKTINFO tells which port each datagram
arrived on, so a port that stops hearing back goes silent and is left too
(`NicPorts.check_silence`, every sample).  The NIC's rate follows the ports
still up, each change is recorded with its time, and cells lost on a dead
port are recovered by the transport's retransmissions.  Every few cell
times the agent samples its in-order DATA cells and each port's sends (the
report's goodput over time), the bytes its NIC sent and received and its
messages delivered and acknowledged (the simulator's series have the same).

With `pfc` the NIC obeys its ToR's PFC pause frames (`testbed.host.pfc`), as a
RoCE NIC does, so a fabric with PFC is lossless end to end: a raw socket per
port takes the frames (EtherType 0x8808), and while a port is paused the
priority-0 cells the pacer releases for it (all but CREDIT and CNP) wait in
that port's queue, in order; from XON or the guard's end they leave one after
the other at the port's rate, and a new pause holds those that have not begun.

A run's host_slow fault arrives as a command file and SIGUSR1 (`testbed.host.slow`).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError
from testbed.host import records
from testbed.host.app import WorkloadRunner
from testbed.host.carrier import LinkEvents, link_flags, usable
from testbed.host.config import TransportConfig
from testbed.host.endpoint import ECT0, Endpoint, channel_of_datagram
from testbed.cells.flowports import FlowSocket
from testbed.host.lateness import Lateness
from testbed.host import nic_native
from testbed.host.nic import NicPorts
from testbed.host.netns import NetNamespace, entered as in_netns
from testbed.host.nicqueue import RECV_BATCH, BatchReceiver, NativeNic, NativePacer, PythonNic, open_nic
from testbed.host.pfc import PauseGate, summed
from testbed.host.slow import SlowCommandError, SlowCommands
from testbed.cells.wire import CELL_UDP_PORT, FRAME_OVERHEAD
from testbed.host.workloads import MessageSpec
from testbed.cells import pfc as pause_frame

MAX_BATCH = 256
MAX_SLEEP_S = 0.05
# Coalescing (see Agent.replay): the loop wakes at most once per window: COALESCE_SHARE of the
# host link's delay, at most the NIC's catch-up and MAX_COALESCE_S; TESTBED_AGENT_COALESCE=0
# turns it off (every event handled at its wake-up's time, the loop before the replay) and
# TESTBED_AGENT_COALESCE_SHARE sets another share (above 0, below 1: a cell must still reach
# the NIC before it is due at the ToR).
COALESCE_SHARE = 0.5
MAX_COALESCE_S = 0.002
PROGRESS_PERIOD_S = 1.0  # --progress-file's period: a line of counters for the run's progress display
PROGRESS_WIDTH = 32  # bytes of that line, newline included
IP_PKTINFO = 8  # Linux <netinet/in.h>; the socket module does not name it
SO_TIMESTAMPNS = 35  # Linux <asm-generic/socket.h> (SCM_TIMESTAMPNS is the same); not named either
TIMESPEC = struct.Struct("@qq")  # struct timespec: seconds, nanoseconds (CLOCK_REALTIME)
# IP_TOS and the kernel's receive time; and struct in_pktinfo for dual-port NICs
TOS_ANCILLARY = socket.CMSG_SPACE(4) + socket.CMSG_SPACE(TIMESPEC.size)
ANCILLARY = TOS_ANCILLARY + socket.CMSG_SPACE(12)


class AgentError(TestbedError):
    """The agent cannot start: bad files or an address it cannot bind."""


@dataclass
class AgentResult:
    exit_code: int
    delivered: int
    acked: int
    reason: str


def coalesce_share() -> float:
    """The share of the host link's delay the loop may coalesce over: COALESCE_SHARE, or
    TESTBED_AGENT_COALESCE_SHARE when it is set."""
    text = os.environ.get("TESTBED_AGENT_COALESCE_SHARE")
    if text is None:
        return COALESCE_SHARE
    try:
        share = float(text)
    except ValueError:
        share = float("nan")
    if not 0 < share < 1:
        raise AgentError(f"TESTBED_AGENT_COALESCE_SHARE={text!r} must be a number above 0 and below 1")
    return share


def load_peers(path: Path) -> dict[str, str]:
    """JSON object name -> IPv4 address (optionally under a "peers" key)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise AgentError(f"peers file {path} cannot be read as JSON: {e}") from None
    data = data.get("peers", data) if isinstance(data, dict) else data
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise AgentError(f"peers file {path} must map host names to addresses, got {type(data).__name__}")
    return dict(data)


def load_local(path: Path, name: str) -> tuple[list[str], float, float] | None:
    """This host's local channel from the peers file's optional "local" section:
    {"rate_mbps": R, "delay_us": D, "peers": {host: [same-server hosts]}}; None without one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise AgentError(f"peers file {path} is not readable JSON: {e}") from None
    local = data.get("local") if isinstance(data, dict) else None
    if not local or name not in local.get("peers", {}):
        return None
    try:
        return [str(p) for p in local["peers"][name]], float(local["rate_mbps"]), float(local["delay_us"])
    except (KeyError, TypeError, ValueError) as e:
        raise AgentError(f"peers file {path}: its local section is malformed ({e!r})") from None


def load_workload(path: Path) -> tuple[int, list[MessageSpec]]:
    """JSON {"seed": int, "messages": [MessageSpec...]} shared by all hosts of a run."""
    try:
        data = json.loads(Path(path).read_text())
        specs = [MessageSpec.from_json(m) for m in data["messages"]]
        return int(data.get("seed", 1)), specs
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise AgentError(f"workload file {path} is not a valid workload: {e!r}") from None


class Agent:
    def __init__(self, name: str, addr: str, peers: dict[str, str], specs: list[MessageSpec],
                 cfg: TransportConfig, records_dir: Path, seed: int, port: int = CELL_UDP_PORT,
                 grace_s: float = 1.0, timeout_s: float = 600.0, epoch: float | None = None,
                 link_delay_s: float = 0.0, realtime_priority: int = 0,
                 local: tuple[list[str], float, float] | None = None,
                 nic_interfaces: list[str] | None = None, nic_choice: str = "flow", pfc: bool = False,
                 progress_file: Path | None = None, native_nic: bool = True,
                 command_file: Path | None = None, netns: NetNamespace | None = None) -> None:
        self.name = name
        # The network namespace every socket of this host is opened in (None: the process's own):
        # a group serves hosts of several namespaces from one process (testbed.host.netns).
        self.netns = netns
        # host_slow commands from the run (testbed.host.slow); each applied one is kept with its time
        self.commands = SlowCommands(command_file) if command_file is not None else None
        self.slow_changes: list[dict] = []
        self.progress_file = progress_file  # PROGRESS_PERIOD_S: "messages cells" (report_progress)
        self.addr = addr
        self.port = port
        self.peers = dict(peers)
        self.peers.setdefault(name, addr)
        self.by_addr = {a: n for n, a in self.peers.items()}
        self.cfg = cfg
        self.records_dir = Path(records_dir)
        self.grace_s = grace_s
        self.timeout_s = timeout_s
        self.epoch = time.time() if epoch is None else epoch
        missing = sorted({s.dst for s in specs if s.src == name} - set(self.peers))
        if missing:
            raise AgentError(f"workload sends from {name} to {missing}, which the peers file does not list")
        self.expected_in = {(s.src, s.msg_id) for s in specs if s.dst == name}
        self.ep = Endpoint(addr, cfg, wire_from_schedule=link_delay_s > 0)  # with no delay line, cells leave at `now`
        # A GPU's channel to the GPUs of its own server: its own endpoint (pacer at the channel's
        # rate) and its own delay line (serialisation at that rate + the channel's delay).
        self.local_ep: Endpoint | None = None
        self.local_addrs: set[str] = set()
        local_peers: set[str] = set()
        if local is not None:
            local_peers, rate_mbps, delay_us = set(local[0]), local[1], local[2]
            unknown = sorted(local_peers - set(self.peers))
            if unknown:
                raise AgentError(f"local peers {unknown} of {name} are not in the peers file")
            self.local_cfg = cfg.for_local_channel(rate_mbps * 1e6, delay_us / 1e6)
            self.local_ep = Endpoint(addr, self.local_cfg)
            self.local_addrs = {self.peers[p] for p in local_peers}
            self.local_delay_s = delay_us / 1e6
        self.runner = WorkloadRunner(name, self.ep, specs, seed, addr_of=self.peers.__getitem__,
                                     name_of=lambda a: self.by_addr.get(a, a), local=self.local_ep,
                                     local_peers=local_peers)
        self.stop = False
        self.unknown_peer = 0
        self.socket_errors = 0
        self.tx_datagrams = 0
        self.rx_datagrams = 0
        self.wakeups = 0
        self.lateness = Lateness()  # pacer lateness: the host half of the fidelity verdict
        self._cpu0 = 0.0
        self.loop_cpu_s: float | None = None  # CPU from begin() to end() (`cpu_s` in the stats)
        self.seed = seed
        # The host->ToR direction of the host link (the ToR's traffic manager
        # models the other): a cell the NIC pacer put on the wire at `start`
        # (its schedule, which a late wake-up may have passed) reaches the ToR
        # when its last bit does, start + serialisation + propagation delay, as
        # a switch port's departure does; until then it waits in the NIC's timed
        # send queue (`testbed.host.nicqueue`), which sends it then.
        self.link_delay_s = link_delay_s
        self.realtime_priority = realtime_priority
        self.scheduling = "other"
        # The NIC's ports; cfg.link_rate_bps is all of them together (testbed.host.options).
        names = list(nic_interfaces or [f"{name}-eth0"])
        # A port that has sent for 4 base RTTs and heard nothing back is dead (its ToR, not its cable).
        self.nic_ports = NicPorts(names, cfg.link_rate_bps / len(names), nic_choice, silence_s=4 * cfg.rtt_s)
        self._port_of_ifindex: dict[int, int] = {}
        self.multiport = len(names) > 1
        # The timed send queue the delay line hands its cells to (`testbed.host.nicqueue`): opened
        # in run(), so a native pacing thread takes the packet loop's scheduling.
        self.native_nic = native_nic
        if native_nic:  # built (first use) and loaded now, before the agent says it is ready
            try:
                nic_native.load()
            except nic_native.NativeUnavailable:
                pass  # open_nic says why again and the pure-Python NIC is used
        self.nicq: NativeNic | PythonNic | None = None
        # A pacing thread shared with other hosts of this process (a group sets it before begin()),
        # and this host's lane in it; None: the NIC has a thread of its own.
        self.nic_pacer: NativePacer | None = None
        self.nic_lane = 0
        self.nic_engine_note: str | None = None
        self.receiver: BatchReceiver | None = None
        self.nic_dropped = 0
        self.ended_at: float | None = None  # the agent's clock when its loop ended (end())
        self.agent_process: str | None = None  # the group's name when a group runs it (testbed.host.group)
        # Event-time replay (`replay`): the window the loop coalesces wake-ups over (0: off), the
        # transport's next deadline as the last kick left it, and the time of the last event replayed.
        self.coalesce_s = 0.0
        self.coalesce_share = coalesce_share()
        self._due: float | None = None
        self._event_clock = 0.0
        self.replayed_events = 0
        self.built_ahead_bytes: int | None = None  # payload bytes built before the loop (prepare)
        self.replay_stalls = 0
        # PFC: per NIC port, the socket its pause frames arrive on and the gate that obeys them.
        self.pause_gates: list[PauseGate] | None = None
        with in_netns(self.netns):
            self._pause_socks = open_pause_sockets(names) if pfc else []
        if pfc:
            self.pause_gates = [PauseGate(self.nic_ports.port_rate_bps) for _ in names]
        try:
            with in_netns(self.netns):
                self.sock = self._open()
        except AgentError:
            for pause_sock in self._pause_socks:
                pause_sock.close()
            raise
        self._flow_socks: dict[tuple[str, int, int], FlowSocket] = {}  # (peer, channel, NIC port) -> socket
        self._flow_sport: dict[tuple[str, int], int] = {}  # (peer, channel) -> UDP source port
        self.link_events: LinkEvents | None = None
        # Goodput over time: in-order DATA cells received and datagrams sent per port, sampled.
        self.sample_s = max(0.01, 8 * cfg.data_wire_bytes * 8 / self.nic_ports.port_rate_bps)
        # ... and, as the simulator's series have them, frames (bytes on the wire) through its NIC
        # ports both ways and its messages delivered and acknowledged so far.
        self.series: dict[str, list] = {"t_s": [], "in_order_cells": [], "port_tx": [], "tx_bytes": [],
                                        "rx_bytes": [], "messages_delivered": [], "messages_acked": []}
        self.nic_tx_bytes = 0
        self.nic_rx_bytes = 0
        self._records_seen = 0
        self._acked = 0

    def _open(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
            # When each datagram reached this host, not when the loop read it: what it triggers
            # may start on the modelled wire from then (Endpoint.receive's `arrived`).
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            if self.multiport:
                sock.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)  # the port each datagram arrived on
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            sock.bind((self.addr, self.port))
        except OSError as e:
            sock.close()
            raise AgentError(f"cannot bind UDP {self.addr}:{self.port}: {e.strerror}") from None
        sock.setblocking(False)
        return sock

    def now(self) -> float:
        return time.time() - self.epoch

    def _send(self, dst: str, data: bytes, ect: bool, port: int = 0) -> None:
        channel = channel_of_datagram(data)
        flow = self._flow_socks.get((dst, channel, port))
        if flow is None:
            flow = self._open_flow(dst, port, channel)
        try:
            flow.send(data, (dst, self.port), ECT0 if ect else 0)
            self.tx_datagrams += 1
        except OSError:
            self.socket_errors += 1  # peer gone (ICMP unreachable) or buffer full: like a loss

    def _sport(self, dst: str, channel: int = 0) -> int:
        sport = self._flow_sport.get((dst, channel))
        return sport if sport is not None else self._open_flow(dst, 0, channel).sport

    def _open_flow(self, dst: str, port: int, channel: int = 0) -> FlowSocket:
        """The socket of channel `channel`'s flow to `dst` on one NIC port: its source port is
        chosen once (flowports; each channel its own, so ECMP hashes channels apart) and shared
        by every NIC port; on a dual-port NIC each socket is bound to its port's interface. A
        cell's channel is in its flow id, so the answers to a channel's cells (ACKs, NACKs,
        credits) leave from the answering host's socket for that channel too."""
        sport = self._flow_sport.get((dst, channel))
        device = self.nic_ports.ports[port].name if self.multiport else None
        with in_netns(self.netns):
            if sport is None:
                flow = FlowSocket.open(self.addr, dst, self.seed, self._flow_ports(), device, channel)
            else:
                flow = FlowSocket.on_port(self.addr, sport, device)
        self._flow_sport[(dst, channel)] = flow.sport
        self._flow_socks[(dst, channel, port)] = flow
        return flow

    def _flow_ports(self) -> set[int]:
        return {self.port} | set(self._flow_sport.values())

    def _watch_carrier(self) -> None:
        """A dual-port NIC follows its ports' carrier from the kernel's link changes."""
        if not self.multiport:
            return
        with in_netns(self.netns):  # the host's interfaces, as its namespace sees them
            self.link_events = LinkEvents()
            now = self.now()
            for index, port in enumerate(self.nic_ports.ports):
                self.nic_ports.set_carrier(port.name, usable(link_flags(port.name)), now)
                try:
                    self._port_of_ifindex[socket.if_nametoindex(port.name)] = index
                except OSError:
                    pass
        self.ep.set_link_rate(self.nic_ports.rate_bps())

    def _on_link_events(self) -> None:
        now = self.now()
        changed = False
        for name, up in self.link_events.read():
            changed |= self.nic_ports.set_carrier(name, up, now)
        if changed:
            self.ep.set_link_rate(self.nic_ports.rate_bps())

    def apply_slow_command(self, now: float) -> None:
        """The run's host_slow command (testbed.host.slow): the application's delay before each
        message and the NIC's rate cap, applied at `now` and recorded; a bad file is recorded too."""
        try:
            command = self.commands.take()
        except SlowCommandError as error:
            self.slow_changes.append({"t_s": round(now, 6), "error": str(error)})
            return
        if command is None:
            return
        self.runner.set_slow(command.delay_ms / 1e3)
        self.nic_ports.rate_cap_bps = None if command.rate_mbps is None else command.rate_mbps * 1e6
        self.ep.set_link_rate(self.nic_ports.rate_bps())
        self.slow_changes.append({"t_s": round(now, 6), **command.to_json(),
                                  "nic_rate_mbps": round(self.nic_ports.rate_bps() / 1e6, 6)})

    def _sample(self, now: float) -> None:
        s = self.series
        s["t_s"].append(round(now, 6))
        s["in_order_cells"].append(self.ep.in_order_cells)
        s["port_tx"].append([p.tx for p in self.nic_ports.ports])
        s["tx_bytes"].append(self.nic_tx_bytes)
        s["rx_bytes"].append(self.nic_rx_bytes)
        s["messages_delivered"].append(len(self.runner.received))
        recs = self.runner.records
        self._acked += sum(1 for r in recs[self._records_seen:] if r["kind"] == "message_sent")
        self._records_seen = len(recs)
        s["messages_acked"].append(self._acked)

    def report_progress(self, fd: int) -> None:
        """Messages delivered and DATA cells passed on in order (local channel included), as one
        fixed-width line written over the last in place: one pwrite, no rename, no growth, so a
        reader polling the file (testbed.progress's display of a run) sees whole counters."""
        cells = self.ep.in_order_cells + (self.local_ep.in_order_cells if self.local_ep is not None else 0)
        os.pwrite(fd, f"{len(self.runner.received)} {cells}".ljust(PROGRESS_WIDTH - 1).encode() + b"\n", 0)

    def _receive_batch(self) -> int:
        """Read what has arrived (at most MAX_BATCH datagrams) and hand it to the transport;
        how many were read."""
        if self.receiver is not None:
            return self._receive_batched()
        ancillary = ANCILLARY if self.multiport else TOS_ANCILLARY
        count = 0
        for _ in range(MAX_BATCH):
            try:
                data, anc, _flags, src = self.sock.recvmsg(65535, ancillary)
            except (BlockingIOError, InterruptedError):
                return count
            except OSError:
                self.socket_errors += 1
                continue
            self.rx_datagrams += 1
            count += 1
            if src[0] not in self.by_addr or src[0] == self.addr:
                self.unknown_peer += 1
                continue
            tos, arrived = 0, None
            for level, kind, value in anc:
                if level == socket.IPPROTO_IP and kind == socket.IP_TOS and value:
                    tos = value[0]
                elif level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= TIMESPEC.size:
                    seconds, nanoseconds = TIMESPEC.unpack_from(value)
                    arrived = seconds + nanoseconds * 1e-9 - self.epoch  # the agent's clock is realtime too
                elif level == socket.IPPROTO_IP and kind == IP_PKTINFO and len(value) >= 4 and self.multiport:
                    port = self._port_of_ifindex.get(int.from_bytes(value[:4], sys.byteorder))
                    if port is not None:
                        self.nic_ports.heard(port, self.now())
            if src[0] in self.local_addrs:
                ep = self.local_ep
            else:
                ep = self.ep
                self.nic_rx_bytes += len(data) + FRAME_OVERHEAD
            ep.receive(self.now(), src[0], data, tos, arrived)
        return count

    def _receive_batched(self) -> int:
        """The same as the recvmsg loop, read with recvmmsg: each datagram's TOS byte and kernel
        receive time come with it; how many were read."""
        count, arrivals = self._read_arrivals()
        for ep, src, data, tos, arrived in arrivals:
            ep.receive(self.now(), src, data, tos, arrived)
        return count

    def _read_arrivals(self) -> tuple[int, list]:
        """What has arrived (at most MAX_BATCH datagrams, read with recvmmsg), as (endpoint,
        source, data, TOS byte, kernel receive time) in arrival order, datagrams of no peer
        counted and left out; and how many were read. A batch short of RECV_BATCH drained the
        socket, so no empty read (one system call) follows it."""
        count, out = 0, []
        by_addr, local_addrs, me, ep, local_ep = self.by_addr, self.local_addrs, self.addr, self.ep, self.local_ep
        while count < MAX_BATCH:
            batch = self.receiver.read()
            if not batch:
                break
            count += len(batch)
            for data, src, tos, arrived in batch:
                if src not in by_addr or src == me:
                    self.unknown_peer += 1
                    continue
                if src in local_addrs:
                    out.append((local_ep, src, data, tos, arrived))
                else:
                    self.nic_rx_bytes += len(data) + FRAME_OVERHEAD
                    out.append((ep, src, data, tos, arrived))
            if len(batch) < RECV_BATCH:
                break
        self.rx_datagrams += count
        return count, out

    def replay(self, wall: float, readable: bool) -> int:
        """Event-time replay: hand the transport what happened since the last wake-up at the
        time each thing happened, not at the time the loop got to it.

        The model: every datagram arrived at its kernel receive time and every deadline of the
        transport (pacer releases, timers, the workload's starts) falls at its own time, so the
        loop replays them in time order, as the simulator does: each arrival is received at its
        time, each deadline before it polled first (`_kick`), and the transport is polled once
        after the last arrival read. A cell an arrival made carries that arrival's time
        (`Transmit.ready`), and the NIC's catch-up lets it start there when the poll comes within
        the catch-up; so what the transport sends starts on the modelled wire at a time that does
        not depend on when the loop woke. That lets the loop coalesce wake-ups (`coalesce_s`,
        within the catch-up), as long as a cell is handed to the NIC before it is due at the ToR
        (the host link's delay is that budget). Returns how many events were replayed."""
        events = 0
        if readable:
            _count, arrivals = self._read_arrivals()
            if arrivals:
                for ep, src, data, tos, arrived in arrivals:
                    # Its event time: the kernel receive time, kept in time order (read after a
                    # later deadline was replayed, it counts from that) and never after `wall`.
                    t = arrived if arrived is not None else wall
                    if t < self._event_clock:
                        t = self._event_clock
                    elif t > wall:
                        t = wall
                    due = self._due
                    if due is not None and due <= t:
                        events += self._advance(t)
                    ep.receive(t, src, data, tos, t)
                events += len(arrivals)
                self._kick(t)
        events += self._advance(wall)
        self.replayed_events += events
        return events

    def _advance(self, t: float) -> int:
        """Poll the transport at each of its deadlines up to `t`, in order; how many."""
        kicks = 0
        while self._due is not None and self._due <= t:
            due = self._due
            self._kick(due)
            kicks += 1
            if self._due is not None and self._due <= due:
                # No progress at one instant (what is due waits for something else): poll it
                # again at `t`, then after it; never step through the time in between.
                self.replay_stalls += 1
                self._due = t if due < t else t + 1e-9
        return kicks

    def _kick(self, t: float) -> None:
        """The transport, the workload and the local channel at event time `t`; `_due` is then
        their next deadline."""
        self._event_clock = t
        self._poll_transport(t)
        due = self.ep.polled_deadline
        runner_due = self.runner.next_deadline(t)
        if runner_due is not None and (due is None or runner_due < due):
            due = runner_due
        if self.local_ep is not None:
            local_due = self.local_ep.polled_deadline
            if local_due is not None and (due is None or local_due < due):
                due = local_due
        self._due = due

    def _to_wire(self, due: float, dst: str, data: bytes, ect: bool, port: int = 0) -> None:
        """Hand a cell to the NIC's timed send queue: it leaves when it reaches the ToR, `due`
        (staged; the loop flushes what a wake-up released before it sleeps)."""
        channel = channel_of_datagram(data)
        flow = self._flow_socks.get((dst, channel, port))
        if flow is None:
            flow = self._open_flow(dst, port, channel)
        self.nicq.stage(due, flow, dst, self.port, data, ECT0 if ect else 0)

    def _receive_pause_frames(self, port: int) -> None:
        sock, pause = self._pause_socks[port], self.pause_gates[port].pause
        for _ in range(MAX_BATCH):
            try:
                frame = sock.recv(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.socket_errors += 1
                continue
            pause.on_frame(frame, self.now())

    def _release_held(self, now: float) -> int:
        """Held cells whose turn on their port's wire has come, once its pause is over: one after
        the other at the port's rate, in order; how many were sent."""
        sent = 0
        for port, gate in enumerate(self.pause_gates):
            wire = self.nic_ports.ports[port]
            while (start := gate.next_start(now, wire.next_free)) is not None:
                dst, data, ect = gate.pop()
                due = self.nic_ports.on_wire(port, start, len(data) + FRAME_OVERHEAD, self.link_delay_s,
                                             data[0] & 0x0F)
                if self.link_delay_s:
                    self._to_wire(due, dst, data, ect, port)
                else:
                    self._send(dst, data, ect, port)
                    sent += 1
        return sent

    def _done(self) -> bool:
        """Every message of this host's acknowledged and every message to it delivered. Asked at
        every wake-up: the counts are compared first (no subset test while messages are missing)."""
        received = self.runner.received
        return (len(received) >= len(self.expected_in) and self.runner.finished()
                and self.expected_in <= received)

    @staticmethod
    def cpu_s() -> float:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    def _enter_realtime(self) -> None:
        self.scheduling = enter_realtime(self.realtime_priority)

    def _leave_realtime(self) -> None:
        leave_realtime(self.scheduling)

    def _poll_transport(self, now: float) -> int:
        """Service the workload and the transport at `now` and put what they release on the
        wires; how many datagrams were sent at `now` (not through the NIC's timed queue)."""
        nic, gates, nicq = self.nic_ports, self.pause_gates, self.nicq
        self.runner.poll(now)
        nicq.release(now)  # the Python NIC's due cells (the native one sends on its own)
        sent = 0 if gates is None else self._release_held(now)
        delay, multiport = self.link_delay_s, self.multiport
        flow_socks = self._flow_socks
        for tx in self.ep.poll(now):
            data, dst = tx.data, tx.dst
            channel = channel_of_datagram(data)
            if multiport:
                port, data = nic.choose(data, self._sport(dst), channel)
            else:  # one port: no choice, but the peer's channel-0 flow is opened first, as always
                port = 0
                if (dst, 0) not in self._flow_sport:
                    self._sport(dst)
            wire_bytes = len(data) + FRAME_OVERHEAD
            self.nic_tx_bytes += wire_bytes
            kind = data[0] & 0x0F
            if gates is not None and not gates[port].admit(kind, tx.start, (dst, data, tx.ect), now):
                continue
            if delay:
                due = nic.on_wire(port, tx.start, wire_bytes, delay, kind)
                flow = flow_socks.get((dst, channel, port))  # _to_wire, inlined: the hot path
                if flow is None:
                    flow = self._open_flow(dst, port, channel)
                nicq.stage(due, flow, dst, self.port, data, ECT0 if tx.ect else 0)
            else:
                nic.sent(port, now, kind)
                self._send(dst, data, tx.ect, port)
                sent += 1
        if self.local_ep is not None:
            for tx in self.local_ep.poll(now):
                serialised = (len(tx.data) + FRAME_OVERHEAD) * 8 / self.local_cfg.link_rate_bps
                self._to_wire(tx.start + serialised + self.local_delay_s, tx.dst, tx.data, tx.ect)
        return sent

    def _open_nic(self) -> None:
        self.nicq, self.nic_engine_note = open_nic(self.now, self.epoch, self.native_nic, self.nic_pacer,
                                                   self.nic_lane)
        self.nicq.start()
        if self.nicq.engine == "native" and not self.multiport:  # IP_PKTINFO is read by recvmsg only
            self.receiver = BatchReceiver(self.sock, self.epoch)

    def _coalescing_window(self) -> float:
        """How late the loop may wake (`replay`): `coalesce_share` of the shortest delay a cell
        has between the transport and the ToR (the host link's, and the local channel's), at
        most the NIC's catch-up and MAX_COALESCE_S. Zero (every event at its wake-up, as before) without the native
        NIC's timed queue and batched receive, with PFC (its gates run on the wall clock), or
        with TESTBED_AGENT_COALESCE=0."""
        if (self.nicq is None or self.nicq.engine != "native" or self.receiver is None
                or self.pause_gates is not None or not self.link_delay_s
                or os.environ.get("TESTBED_AGENT_COALESCE", "1") == "0"):
            return 0.0
        budget = self.link_delay_s
        if self.local_ep is not None:
            budget = min(budget, self.local_delay_s)
        return min(MAX_COALESCE_S, self.coalesce_share * budget, self.cfg.nic_catchup_s)

    def prepare(self) -> int:
        """Build the workload's payloads ahead (WorkloadRunner.prepare), once: `testbed host` calls
        this before it says it is ready, so the work is done before the run's epoch is even set."""
        if self.built_ahead_bytes is None:
            self.built_ahead_bytes = self.runner.prepare()
        return self.built_ahead_bytes

    def run(self) -> AgentResult:
        """The loop of one agent in its own process: `begin`, then `step` and `_wait` in turn until
        it is done (plus its grace), times out or is stopped, then `end` and its records. A group
        of agents in one process (`testbed.host.group`) drives the same steps from one select."""
        self._enter_realtime()
        self.begin()  # after the scheduling change: a native pacing thread takes it
        readable: list = []
        try:
            while not self.stop:
                if self.step(readable):
                    break
                readable = self._wait(self.watched, self.wait_due, self.wait_not_before)
                self.on_readable(readable)
            else:
                self.reason = "stopped"
        finally:
            self.end()
            self._leave_realtime()  # writing the records is not the NIC's work: it must not hold a core
            self.write_records(self.reason)
        return self.result()

    def begin(self) -> None:
        """Open the NIC's queue, build what prepare() did not, and set the loop's state: the
        sockets it watches (`watched`: the cell socket first), its first sample and deadline. The
        CPU spent from here on is the loop's (`cpu_s` in the stats)."""
        self._open_nic()
        self.coalesce_s = self._coalescing_window()
        self._replaying = self.coalesce_s > 0
        self.prepare()  # when the command line did not already (before the epoch)
        self._cpu0 = self.cpu_s()  # imports and setup are not per-cell work
        self.watched = [self.sock] + list(self._pause_socks)
        for index, _pause_sock in enumerate(self._pause_socks):
            self._receive_pause_frames(index)  # a pause that came first holds the first cell too
        self._watch_carrier()
        if self.link_events is not None:
            self.watched.append(self.link_events)
        self._wakeup = self.commands.wakeup if self.commands is not None else None
        if self._wakeup is not None:
            self.watched.append(self._wakeup)  # a host_slow command wakes the loop
        self._finished_at: float | None = None
        self.reason = "timeout"
        self._due_s: float | None = None
        self._next_sample = 0.0
        self._progress_fd = (os.open(self.progress_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                             if self.progress_file is not None else None)
        self._next_progress = 0.0
        self.wait_due: float | None = None
        self.wait_not_before = 0.0
        self._due = self._event_clock = self.now()  # replaying: the first wake-up polls the transport

    def step(self, readable: list) -> bool:
        """One wake-up of the loop, given what the wait found readable: receive, apply a slow-down,
        sample, replay (or poll) the transport, and hand the NIC what it released. True when the
        agent ends (`reason` says why); else `wait_due` and `wait_not_before` say how long it may
        sleep (`_wait`)."""
        if not self._replaying and self.sock in readable:
            self._receive_batch()  # read at its own `now`, before the poll's
        now = self.now()
        if self.commands is not None and self.commands.pending:
            self.apply_slow_command(now)
            self._repoll(now)
        if now >= self._next_sample:
            self._sample(now)
            self._next_sample = now + self.sample_s
            if self.nic_ports.check_silence(now):
                self.ep.set_link_rate(self.nic_ports.rate_bps())
                self._repoll(now)
            if self._progress_fd is not None and now >= self._next_progress:
                self.report_progress(self._progress_fd)
                self._next_progress = now + PROGRESS_PERIOD_S
        nicq = self.nicq
        if self._replaying:
            events = self.replay(now, self.sock in readable or not readable)
            due = self._due
        else:
            sent = self._poll_transport(now)
            self.lateness.on_wake(self._due_s, now, sent)  # cells sent at `now`; the queue times its own
            events = 1
            due = self._next_deadline(now)
            self._due_s = due
            released = nicq.next_due()  # the Python NIC's next release (the native one needs none)
            if released is not None and (due is None or released < due):
                due = released
        if self._finished_at is None and events and self._done():
            self._finished_at = now
        if self._finished_at is not None and now - self._finished_at >= self.grace_s:
            self.reason = "done"
            return True
        if now >= self.timeout_s:
            self.reason = "timeout"
            return True
        self.wakeups += 1
        nicq.flush()  # what this wake-up released, handed to the NIC in one call
        self.wait_due = due
        self.wait_not_before = now + self.coalesce_s
        return False

    def on_readable(self, readable: list) -> None:
        """What the wait found besides cells: link changes, a host_slow signal, PFC frames."""
        for fileobj in readable:
            if fileobj is self.sock:
                continue
            if fileobj is self.link_events:
                self._on_link_events()
                self._repoll(self.now())
            elif fileobj is self._wakeup and fileobj is not None:
                self.commands.drain()  # the command itself is applied at the top of the loop
            else:
                self._receive_pause_frames(self._pause_socks.index(fileobj))

    def end(self) -> None:
        """Stop the NIC (cells still on the wire are lost), take the last sample and progress line
        and close every socket; the records are written after (`write_records`)."""
        self.nic_dropped = self.nicq.close() if self.nicq is not None else 0
        self.ended_at = self.now()
        self.loop_cpu_s = self.cpu_s() - self._cpu0  # the loop's; writing the records is not per-cell work
        self._sample(self.ended_at)
        if self._progress_fd is not None:
            self.report_progress(self._progress_fd)
            os.close(self._progress_fd)
            self._progress_fd = None
        self.close_sockets()

    def close_sockets(self) -> None:
        """Close the cell, flow, PFC and link-event sockets (also for an agent that never ran)."""
        self.sock.close()
        if self.link_events is not None:
            self.link_events.close()
        for flow in self._flow_socks.values():
            flow.sock.close()
        for pause_sock in self._pause_socks:
            pause_sock.close()

    def result(self) -> AgentResult:
        code = 0 if self.reason in ("done", "stopped") else 3
        acked = sum(1 for r in self.runner.records if r["kind"] == "message_sent")
        return AgentResult(code, len(self.runner.received), acked, self.reason)

    def _repoll(self, now: float) -> None:
        """Something outside the transport's own events changed it (a NIC rate, a slow-down): a
        replaying loop polls it again now."""
        if self._due is None or self._due > now:
            self._due = now

    def _next_deadline(self, now: float) -> float | None:
        """When the transport, the workload, the local channel or a paused port next needs the
        loop (None: only when something arrives)."""
        due = [t for t in (self.ep.polled_deadline, self.runner.next_deadline(now),
                           self.local_ep.polled_deadline if self.local_ep is not None else None)
               if t is not None]
        gates = self.pause_gates
        if gates is not None:
            due += [t for t in (gate.wake_at(port.next_free) for gate, port in zip(gates, self.nic_ports.ports))
                    if t is not None]
        return min(due) if due else None

    def _wait(self, watched: list, due: float | None, not_before: float) -> list:
        """Sleep until something in `watched` is readable or `due` comes, but do not start work
        before `not_before` (the coalescing window): a deadline inside the window waits for its
        end, and so does a datagram that arrives inside it, with whatever else arrives meanwhile
        (each keeps its kernel receive time). Returns what is readable. So that a datagram inside
        the window does not wake the loop only to put it to sleep again (two wake-ups), the cell
        socket (watched[0]) is left out of the wait until the window ends; the rest of `watched`
        (link changes, a host_slow command, PFC frames) wakes it at once. A window only comes with
        the replay, which reads the socket after a wait that returns nothing, so a deadline
        already due at the window's end returns at once, without a select. select() takes
        microseconds; selectors' epoll and poll round a timeout up to whole milliseconds, and at
        5 Mbit/s a cell takes 1.7 ms."""
        now = self.now()
        try:
            if not_before > now:
                others = watched[1:]
                if others:
                    if select.select(others, [], [], not_before - now)[0]:
                        return select.select(watched, [], [], 0)[0]  # with the cells that came meanwhile
                else:
                    time.sleep(not_before - now)
                now = self.now()
                if due is not None and due <= now:
                    return []  # due already: the replay reads the socket anyway, no select to ask
            wait = MAX_SLEEP_S if due is None else min(MAX_SLEEP_S, max(0.0, due - now))
            return select.select(watched, [], [], wait)[0]
        except InterruptedError:
            return []

    def write_records(self, reason: str) -> None:
        records.write_jsonl(self.records_dir / f"{self.name}.jsonl", self.runner.records)
        if self.ep.int_records:  # INT hop records (fabric.int): only when switches wrote some
            for rec in self.ep.int_records:  # the sender by its host name, as the other records
                rec["src"] = self.by_addr.get(rec["src"], rec["src"])
            records.write_jsonl(self.records_dir / "int" / f"{self.name}.jsonl", self.ep.int_records)
        stats = self.ep.stats()
        if self.nicq is not None:  # what the NIC's queue sent, and how late each left
            self.tx_datagrams += self.nicq.sent
            self.socket_errors += self.nicq.errors
            self.lateness.samples_us.extend(self.nicq.lateness_us())
        cells = self.tx_datagrams + self.rx_datagrams
        # in a group (testbed.host.group) the CPU is the process's, in its <group>.process.json
        cpu = None if self.agent_process is not None else self.loop_cpu_s
        self.udp_source_ports = {self.by_addr.get(dst, dst): sport for (dst, ch), sport in self._flow_sport.items()
                                 if ch == 0}
        by_channel: dict[str, dict[str, int]] = {}
        for (dst, ch), sport in sorted(self._flow_sport.items()):
            by_channel.setdefault(self.by_addr.get(dst, dst), {})[str(ch)] = sport
        stats.update({
            "cpu_s": None if cpu is None else round(cpu, 3),
            "tx_datagrams": self.tx_datagrams, "rx_datagrams": self.rx_datagrams,
            "cpu_us_per_datagram": round(cpu * 1e6 / cells, 1) if cells and cpu is not None else None,
            "loop_wakeups": self.wakeups, "rx_counts": dict(self.ep.counters),
            "loop_coalesce_us": round(self.coalesce_s * 1e6, 1), "replayed_events": self.replayed_events,
            "payload_bytes_built_ahead": self.built_ahead_bytes,
            "replay_stalls": self.replay_stalls,
            "host": self.name, "end_reason": reason, "unknown_peer_datagrams": self.unknown_peer,
            "socket_errors": self.socket_errors, "verify_failures": self.runner.verify_failures,
            "messages_checked_cell_by_cell": self.runner.checked_as_they_came,
            "messages_pending": len(self.runner.pending),
            "messages_expected_missing": len(self.expected_in - self.runner.received),
            "scheduling": self.scheduling,
            "udp_source_ports": self.udp_source_ports,
            "udp_source_ports_by_channel": by_channel,
            "pacer_lateness": self.lateness.summary(),
            "local_channel": self.local_ep.stats() if self.local_ep is not None else None,
            "nic_ports": self.nic_ports.stats(),
            "nic_queue": None if self.nicq is None else {
                "engine": self.nicq.engine, "why_not_native": self.nic_engine_note,
                "batched_receive": self.receiver is not None,
                "dropped_at_stop": self.nic_dropped},
            "pfc": None if self.pause_gates is None else summed(
                {port.name: gate.stats(self.ended_at if self.ended_at is not None else self.now()) for port, gate in zip(self.nic_ports.ports, self.pause_gates)}),
            "slow_changes": self.slow_changes,
            "nic_port_changes": [{"t_s": round(t, 6), "port": name, "up": up, "why": why}
                                 for t, name, up, why in self.nic_ports.changes],
            "series": dict(self.series, period_s=self.sample_s,
                           data_cell_payload_bytes=self.cfg.cell_size),
        })
        if self.agent_process is not None:
            stats["agent_process"] = self.agent_process
        (self.records_dir / f"{self.name}.stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True))


def enter_realtime(priority: int) -> str:
    """SCHED_FIFO for the packet loop (below the switches' priority), so a busy machine cannot
    make the NIC late; RLIMIT_RTTIME stops a runaway loop. Returns the scheduling as the stats
    name it ("other" for priority 0, or with the reason it could not be changed)."""
    if not priority:
        return "other"
    try:
        resource.setrlimit(resource.RLIMIT_RTTIME, (200_000, 1_000_000))
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return f"fifo {priority}"
    except OSError as error:
        return f"other ({error.strerror})"


def leave_realtime(scheduling: str) -> None:
    """Back to normal scheduling once the packet loop ends: under SCHED_FIFO the records (tens of
    milliseconds of JSON) kept the other agents of that core from their deadlines."""
    if scheduling.startswith("fifo"):
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass


def open_pause_sockets(interfaces: list[str]) -> list[socket.socket]:
    """A raw socket per NIC port that receives its PFC frames (EtherType 0x8808), non-blocking."""
    socks: list[socket.socket] = []
    try:
        for name in interfaces:
            socks.append(open_pause_socket(name))
    except AgentError:
        for sock in socks:
            sock.close()
        raise
    return socks


def open_pause_socket(interface: str) -> socket.socket:
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(pause_frame.ETHERTYPE))
    except OSError as e:
        needs = " (a raw socket needs root or CAP_NET_RAW)" if e.errno in (errno.EPERM, errno.EACCES) else ""
        raise AgentError(f"cannot open a PFC socket for {interface}: {e.strerror}{needs}") from None
    try:
        sock.bind((interface, pause_frame.ETHERTYPE))
    except OSError as e:
        sock.close()
        raise AgentError(f"cannot listen for PFC frames on {interface}: {e.strerror}") from None
    sock.setblocking(False)
    return sock


def install_sigterm(agent: Agent) -> None:
    def handler(signum, frame):
        agent.stop = True

    signal.signal(signal.SIGTERM, handler)
