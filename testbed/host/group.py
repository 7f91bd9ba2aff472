"""Many host agents in one process (`testbed hosts --group-file FILE`): one loop serves them all.

Why: every host of a run wakes at the same instants (a permutation's hosts all send at the
cell time), and an agent in a process of its own pays a cold wake-up each time (its caches
and the scheduler's work, 0.1-0.3 ms of CPU after a sleep). A group wakes once for all of
its members and stays warm.

The model: each member is an `Agent` built from exactly the options `testbed host` takes
(`testbed.host.options.add_host_options`), its sockets opened in its own network namespace
(`testbed.host.netns`), with its own transport, NIC queue, replay and deadlines. The group runs
the members' own loop steps (`Agent.step`, `Agent.on_readable`) and replaces only their wait
with one wait for all (`_loop`): the members' coalescing window becomes the group's, so the
members' events share the loop's wake-ups. After a round of steps the loop sleeps through the
window (only the members' other sockets, link changes and PFC frames, and a command end it
early), then steps every member whose cell socket is readable, whose deadline has come, or that
has not been stepped for MAX_SLEEP_S. No event waits longer than the window, as for one agent.
The members' NICs share one native pacing thread, a lane each (their
counters and lateness apart, `nicqueue.NativePacer`), so their releases wake one thread, not
one per member; each member hands what its step released over at the step's end, as a single
agent does: a cell may be due at the ToR sooner than a round of steps ends. A member that is
done (plus its grace), timed out or stopped ends
(`Agent.end`: its NIC stopped, its sockets closed) while the others go on; the records of
every member are written at the end, when the process has left SCHED_FIFO, so that no
member's records hold the core the others' loop runs on.

Signals: SIGTERM stops every member. SIGUSR1 (a host_slow command) makes every member with a
command file re-read it, and only a member whose file changed applies it.

Records: each member's as `testbed host` writes them, with "cpu_s" and
"cpu_us_per_datagram" null and "agent_process" the group's name; the process's own figures
(its CPU over the loop, the members' datagrams, its loop's wake-ups and span) in
records/<group>.process.json, which `testbed.emulation.costs` counts once.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from pathlib import Path

from testbed.errors import TestbedError
from testbed.host.agent import MAX_SLEEP_S, Agent, AgentError, enter_realtime, leave_realtime
from testbed.host import nic_native
from testbed.host.netns import NetNamespace
from testbed.host.options import MemberArgumentError, build_agent, member_parser, wait_for_epoch
from testbed.host.nicqueue import NativePacer
from testbed.host.slow import COMMAND_SIGNAL, SignalWakeup

FD_SETSIZE = 1024  # select()'s limit on a descriptor's number


class GroupError(TestbedError):
    """A group file, or one of its members, that cannot be run."""


def load_group(path: Path) -> tuple[str, int, list[tuple[str | None, list[str]]]]:
    """The group file: its name, its realtime priority and each member's (netns, argv)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise GroupError(f"group file {path} cannot be read as JSON: {e}") from None
    if not isinstance(data, dict):
        raise GroupError(f"group file {path}: must be a JSON object, not {type(data).__name__}")
    for key in ("name", "members"):
        if key not in data:
            raise GroupError(f"group file {path}: no {key!r} key")
    name, members = data["name"], data["members"]
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise GroupError(f"group file {path}: 'name' must be a file name (no '/'), got {name!r}")
    priority = data.get("realtime_priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 99:
        raise GroupError(f"group file {path}: 'realtime_priority' must be an integer 0-99, got {priority!r}")
    if not isinstance(members, list) or not members:
        raise GroupError(f"group file {path}: 'members' must be a non-empty list")
    out = []
    for index, member in enumerate(members):
        where = f"group file {path}: member {index}"
        if not isinstance(member, dict) or "argv" not in member:
            raise GroupError(f"{where}: must be an object with an 'argv' list")
        argv, ns = member["argv"], member.get("netns")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise GroupError(f"{where}: 'argv' must be a list of strings")
        if ns is not None and (not isinstance(ns, str) or not ns):
            raise GroupError(f"{where}: 'netns' must be a path or null, got {ns!r}")
        out.append((ns, list(argv)))
    return name, priority, out


def _member_name(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--name" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--name="):
            return arg.split("=", 1)[1]
    return "?"


class AgentGroup:
    """Members' agents run by one loop (see the module's docstring)."""

    def __init__(self, name: str, agents: list[Agent], realtime_priority: int = 0) -> None:
        self.name = name
        self.agents = agents
        self.realtime_priority = realtime_priority
        self.scheduling = "other"
        self.stop = False
        self.loop_wakeups = 0
        self.cpu_s: float | None = None
        self.t_s: tuple[float, float] | None = None
        self._signalled = False
        self._wakeup: SignalWakeup | None = None
        self.pacer: NativePacer | None = None  # the members' shared pacing thread (_share_pacer)
        for agent in agents:
            agent.agent_process = name
            agent.realtime_priority = 0  # the group's priority is the process's

    def install_signals(self) -> None:
        """SIGTERM stops every member; SIGUSR1 marks the members' command files for a re-read.
        Either wakes the loop's select at once (a wake-up socket the interpreter writes to)."""
        def on_term(signum, frame):
            self.stop = True

        def on_command(signum, frame):
            self._signalled = True

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(COMMAND_SIGNAL, on_command)
        self._wakeup = SignalWakeup()
        for agent in self.agents:
            if agent.commands is not None:
                agent.commands.changed()  # what the file holds now is not a command yet

    def close_signals(self) -> None:
        if self._wakeup is None:
            return
        self._wakeup.close()
        self._wakeup = None

    def _take_commands(self) -> list[Agent]:
        """After a SIGUSR1: the members whose command file changed, marked to apply it."""
        self._signalled = False
        changed = []
        for agent in self.agents:
            if agent.commands is not None and agent.ended_at is None and agent.commands.changed():
                agent.commands.pending = True
                changed.append(agent)
        return changed

    def _share_pacer(self) -> None:
        """One native pacing thread for every member's NIC, a lane each (their counters and
        lateness apart), when the native NIC can be used here; else each member opens its own."""
        if not all(agent.native_nic for agent in self.agents):
            return
        try:
            self.pacer = NativePacer(lanes=len(self.agents))
        except nic_native.NativeUnavailable:
            return  # each member's open_nic says why, and uses the pure-Python NIC
        for lane, agent in enumerate(self.agents):
            agent.nic_pacer, agent.nic_lane = self.pacer, lane

    def run(self) -> list:
        """Run every member to its end; their AgentResults, in the members' order."""
        self.scheduling = enter_realtime(self.realtime_priority)
        self._share_pacer()  # after the scheduling change: the thread takes it
        active: list[Agent] = []
        cpu0: float | None = None
        try:
            for agent in self.agents:
                agent.begin()  # after the scheduling change: each NIC's pacing thread takes it
                agent.scheduling = self.scheduling
                active.append(agent)
            too_high = [a.name for a in active for f in a.watched if f.fileno() >= FD_SETSIZE]
            if too_high:
                raise GroupError(f"group {self.name}: members {too_high} have sockets beyond select()'s "
                                 f"{FD_SETSIZE} descriptors; split the group")
            cpu0 = Agent.cpu_s()
            t0 = self.agents[0].now()
            self._loop(active)
        finally:
            for agent in active:
                if agent.ended_at is None:
                    agent.end()
            if self.pacer is not None:
                self.pacer.stop()  # every lane has dropped what it still held
            t1 = self.agents[0].now()
            # the loop's CPU, as a single agent's `cpu_s`: the records written next are not per-cell work
            loop_cpu_s = Agent.cpu_s() - cpu0 if cpu0 is not None else None
            leave_realtime(self.scheduling)
            for agent in self.agents:
                if agent.ended_at is not None:
                    agent.write_records(agent.reason)
            self.close_signals()
        self.cpu_s = loop_cpu_s
        self.t_s = (t0, t1)
        self.write_process_file()
        return [agent.result() for agent in self.agents]

    def _loop(self, active: list[Agent]) -> None:
        """One wait for every member, then every member with something to do is stepped.

        The group's window: after a round of steps at `now` the loop does not step again before
        now + the members' coalescing window (the shortest), unless a member's other socket (link
        changes, PFC frames) or a command needs it at once; a cell that arrives inside the window
        waits for its end with whatever else comes meanwhile (each keeps its kernel receive time,
        and the replay hands it over at that time). At the window's end every member whose cell
        socket is readable, whose deadline has come, or that has not been stepped for MAX_SLEEP_S
        is stepped, so the members' events share the loop's wake-ups."""
        epoch = self.agents[0].epoch  # one clock: the members share the run's epoch
        clock = time.time
        wakeup = self._wakeup
        base = [wakeup] if wakeup is not None else []
        for agent in active:
            base += agent.watched[1:]
        window = min(agent.coalesce_s for agent in active)
        stepped: dict[int, float] = {}
        steps: list[tuple[Agent, list]] = [(a, []) for a in active]
        while True:
            if self.stop:
                for agent in active:
                    agent.reason = "stopped"
                return
            now = clock() - epoch
            ended = False
            for agent, readable in steps:
                if readable:
                    agent.on_readable(readable)
                stepped[id(agent)] = now
                if agent.step(readable):
                    agent.end()
                    active.remove(agent)
                    ended = True
            if not active:
                return
            if ended:
                base = base[:1] if wakeup is not None else []
                for agent in active:
                    base += agent.watched[1:]
            not_before = now + window
            socks = [agent.sock for agent in active]
            due = min((agent.wait_due if agent.wait_due is not None else stepped[id(agent)] + MAX_SLEEP_S)
                      for agent in active)
            self.loop_wakeups += 1
            try:
                ready = self._wait(base, socks, due, not_before, clock, epoch)
            except InterruptedError:
                ready = []
            now = clock() - epoch
            commanded: list[Agent] = []
            if ready and wakeup in ready:
                wakeup.drain()
            if self._signalled:
                commanded = self._take_commands()
            steps = []
            for agent in active:
                mine = [f for f in agent.watched if f in ready]
                if (mine or agent in commanded or (agent.wait_due is not None and agent.wait_due <= now)
                        or now - stepped[id(agent)] >= MAX_SLEEP_S):
                    steps.append((agent, mine))

    @staticmethod
    def _wait(base: list, socks: list, due: float, not_before: float, clock, epoch: float) -> list:
        """Sleep until a socket of `base` is readable (at once), or the window's end and then a cell
        socket readable or `due`; what is readable then. The cell sockets are left out of the wait
        until `not_before`: a cell inside the window does not wake the loop."""
        now = clock() - epoch
        if not_before > now:
            if due >= not_before:
                # nothing due inside the window: one wait, which a cell may end early
                ready = select.select(base + socks, [], [], min(MAX_SLEEP_S, due - now))[0]
                now = clock() - epoch
                if not ready or now >= not_before or any(f in base for f in ready):
                    return ready
            if select.select(base, [], [], max(0.0, not_before - now))[0]:
                return select.select(base + socks, [], [], 0)[0]
            now = clock() - epoch
            if due <= now:
                return select.select(base + socks, [], [], 0)[0]
        return select.select(base + socks, [], [], max(0.0, min(MAX_SLEEP_S, due - now)))[0]

    def write_process_file(self) -> None:
        """records/<group>.process.json: the process's CPU over the loop, its members' datagrams."""
        tx = sum(a.tx_datagrams for a in self.agents)
        rx = sum(a.rx_datagrams for a in self.agents)
        cpu = self.cpu_s or 0.0
        data = {"process": self.name, "members": [a.name for a in self.agents], "cpu_s": round(cpu, 3),
                "tx_datagrams": tx, "rx_datagrams": rx,
                "cpu_us_per_datagram": round(cpu * 1e6 / (tx + rx), 1) if tx + rx else None,
                "loop_wakeups": self.loop_wakeups, "scheduling": self.scheduling,
                "nic_pacer": "shared" if self.pacer is not None else "per member",
                "t_s": [round(t, 6) for t in self.t_s] if self.t_s else None}
        path = self.agents[0].records_dir / f"{self.name}.process.json"
        path.write_text(json.dumps(data, indent=1, sort_keys=True))


def build_group(path: Path) -> tuple[AgentGroup, Path | None, float | None, float]:
    """The group a file describes, every member built (sockets bound) and prepared; with the
    epoch file the members share (None: the epoch is `--epoch`, or now) and the longest timeout.
    A bad file or member raises GroupError naming it, with every socket opened so far closed."""
    name, priority, members = load_group(path)
    parser = member_parser()
    parsed = []
    for index, (ns, argv) in enumerate(members):
        try:
            parsed.append((ns, parser.parse_args(argv)))
        except MemberArgumentError as e:
            raise GroupError(f"group file {path}: member {index} ({_member_name(argv)}): {e}") from None
    names = [args.name for _ns, args in parsed]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise GroupError(f"group file {path}: hosts {twice} are members more than once")
    epoch_files = {args.epoch_file for _ns, args in parsed}
    if len(epoch_files) > 1:
        raise GroupError(f"group file {path}: the members name different epoch files "
                         f"({', '.join(sorted(str(f) for f in epoch_files))}); a group shares one")
    epochs = {args.epoch for _ns, args in parsed}
    if None in epoch_files and len(epochs) > 1:
        raise GroupError(f"group file {path}: the members name different --epoch values; a group shares one")
    records_dirs = {args.records for _ns, args in parsed}
    if len(records_dirs) > 1:
        raise GroupError(f"group file {path}: the members name different --records directories; "
                         f"a group writes one")
    agents: list[Agent] = []
    try:
        for index, (ns, args) in enumerate(parsed):
            try:
                agent = build_agent(args, NetNamespace(ns) if ns is not None else None)
                agents.append(agent)
                agent.prepare()
            except (TestbedError, OSError) as e:
                raise GroupError(f"group file {path}: member {index} ({args.name}): {e}") from None
    except GroupError:
        for agent in agents:
            agent.close_sockets()
        raise
    epoch = next(iter(epochs)) if None in epoch_files else None
    return (AgentGroup(name, agents, priority), next(iter(epoch_files)), epoch,
            max(args.timeout_s for _ns, args in parsed))


def run_group_file(path: Path) -> int:
    """`testbed hosts`: build, say 'agents ready N', wait for the epoch, run; 0 when every member
    ended done or stopped, else 3 (a line on stderr for each member that did not); 2 for a bad
    group file or member (one line)."""
    try:
        group, epoch_file, epoch, timeout_s = build_group(path)
    except GroupError as e:
        print(f"testbed hosts: {e}", file=sys.stderr)
        return 2
    group.install_signals()
    try:
        if epoch_file is not None:
            try:
                epoch = wait_for_epoch(epoch_file, timeout_s, stopped=lambda: group.stop,
                                       ready=f"agents ready {len(group.agents)}")
            except AgentError as e:  # no epoch within the timeout
                for agent in group.agents:
                    agent.close_sockets()
                print(f"testbed hosts: group {group.name}: {e}", file=sys.stderr)
                return 1
            if epoch is None:  # SIGTERM while waiting (the run ended or `testbed clean`)
                for agent in group.agents:
                    agent.close_sockets()
                return 0
        else:
            print(f"agents ready {len(group.agents)}", flush=True)
            epoch = time.time() if epoch is None else epoch
        for agent in group.agents:
            agent.epoch = epoch
        results = group.run()
    finally:
        group.close_signals()
    for agent, result in zip(group.agents, results):
        if result.exit_code:
            print(f"testbed host {agent.name}: stopped by {result.reason} after {agent.timeout_s} s with "
                  f"{result.acked} messages acknowledged, {result.delivered} delivered; see "
                  f"{agent.records_dir / (agent.name + '.stats.json')} (group {group.name})", file=sys.stderr)
    return 0 if all(r.exit_code == 0 for r in results) else 3

