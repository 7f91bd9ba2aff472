"""The scenario's faults, executed while the workload runs.

A link fault acts on the switch-side end of veth pairs in the root
namespace, the same for both targets: `link_down` takes a cable's
switch-side interface(s) down (the far end loses carrier, as with a pulled
cable), `link_up` brings them back, `host_down` takes down every cable of a
host and, on a GPU server, both ends of each of its local channels (veths
between host namespaces, set from inside each namespace), so the server's
other GPUs lose it too.  `link_degrade` changes what the cable's switch ends model, through
their traffic-manager control ports (builtin target): a lower rate, more
propagation delay, random loss; `link_restore` puts back the scenario's
values.  On a host cable that is the ToR->host direction (the host->ToR
half is modelled by the host agent's NIC, which keeps its rate).
`agent_stall` stops a host agent (SIGSTOP: its NIC, timers and receive
path all freeze, as a host that hangs) and `agent_resume` continues it.
`switch_stop` kills a switch's process, as a crash (its cables stay up, so its
neighbours keep sending into it until the controller reroutes) and
`switch_start` starts it again, after which the run re-installs its
pipeline, its table entries and its traffic-manager settings (the
run's `switches(name, up)` does both; the switch has a process of its own).
`host_slow` writes the host's command file and signals its agent
(SIGUSR1, `testbed.host.slow`): its application starts each message
`delay_ms` later and its NIC sends at `rate_mbps`; `host_restore` writes
the command that ends it. `gpu_slow` (a slow GPU: its compute takes
`factor` times as long) is carried out by the simulators only: here it is
recorded as an error, as the agents take no compute command yet.
Each event is recorded when it happens (`faults.jsonl`: planned and
actual time on the run's clock, what it touched) and undone at teardown,
so a run leaves every link and agent as it found them. After `kill -9`
the interfaces and agents go with the run's manifest (`testbed clean`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from testbed.emulation.network import local_interface, switch_interface
from testbed.errors import TestbedError
from testbed.host.slow import COMMAND_SIGNAL, SlowCommand, write_command


class FaultError(TestbedError):
    """A fault could not be carried out."""


@dataclass(frozen=True)
class FaultAction:
    at_s: float
    kind: str
    target: str
    interfaces: tuple[str, ...] = ()  # link_down / link_up / host_down
    local: tuple[tuple[str, str], ...] = ()  # host_down: (host, interface) of its local channels' ends
    up: bool = False
    tm_lines: tuple[tuple[str, str], ...] = ()  # link_degrade / link_restore: (switch, TM command)
    agent: str | None = None  # agent_stall / agent_resume: the host
    switch: str | None = None  # switch_stop / switch_start
    slow: SlowCommand | None = None  # host_slow / host_restore: the command for the host's agent
    gpu: float | None = None  # gpu_slow / gpu_restore: the host's compute factor (1: restored)


def _degrade_lines(scenario, fault, kind: str) -> tuple[tuple[str, str], ...]:
    """TM commands for the cable's switch ends: the degraded values, or the scenario's own."""
    topo = scenario.topo
    link = topo.link(fault.target)
    params = scenario.links.host if link.tier == "host" else scenario.links.fabric
    lines = []
    for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
        if topo.node(node).is_host:
            continue
        if kind == "link_restore":
            lines += [(node, f"set_port_rate_bps {int(params.rate_mbps * 1e6)} {port}"),
                      (node, f"set_port_delay_us {params.delay_us:g} {port}"), (node, f"set_port_loss 0 {port}")]
            continue
        if fault.rate_mbps is not None:
            lines.append((node, f"set_port_rate_bps {int(fault.rate_mbps * 1e6)} {port}"))
        if fault.extra_delay_us:
            lines.append((node, f"set_port_delay_us {params.delay_us + fault.extra_delay_us:g} {port}"))
        if fault.loss:
            lines.append((node, f"set_port_loss {fault.loss:g} {port}"))
    return tuple(lines)


def plan_faults(scenario) -> list[FaultAction]:
    """Each fault of the scenario as actions, in time order."""
    topo = scenario.topo
    actions = []
    for fault in scenario.faults:
        for at_s, kind in fault.events():  # a flapping link is its downs and ups
            if kind in ("link_degrade", "link_restore"):
                actions.append(FaultAction(at_s, kind, fault.target, tm_lines=_degrade_lines(scenario, fault, kind)))
            elif kind in ("agent_stall", "agent_resume"):
                actions.append(FaultAction(at_s, kind, fault.target, agent=fault.target))
            elif kind in ("host_slow", "host_restore"):
                command = (SlowCommand(fault.delay_ms, fault.rate_mbps) if kind == "host_slow" else SlowCommand())
                actions.append(FaultAction(at_s, kind, fault.target, slow=command))
            elif kind in ("switch_stop", "switch_start"):
                actions.append(FaultAction(at_s, kind, fault.target, switch=fault.target))
            elif kind in ("gpu_slow", "gpu_restore"):
                actions.append(FaultAction(at_s, kind, fault.target, gpu=fault.factor if kind == "gpu_slow" else 1.0))
            else:
                actions.append(FaultAction(at_s, kind, fault.target, _interfaces(topo, fault), up=kind == "link_up",
                                           local=_local_ends(topo, fault.target) if kind == "host_down" else ()))
    return sorted(actions, key=lambda a: a.at_s)


def _interfaces(topo, fault) -> tuple[str, ...]:
    links = ([topo.link(p.link) for p in topo.ports(fault.target)] if fault.kind == "host_down"
             else [topo.link(fault.target)])
    interfaces = []
    for link in links:
        for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if not topo.node(node).is_host:
                interfaces.append(switch_interface(node, port))
    return tuple(interfaces)


def _local_ends(topo, host: str) -> tuple[tuple[str, str], ...]:
    """Both ends of every local channel of `host`: (namespace's host, interface)."""
    ends = []
    for link in topo.local_links:
        if host in (link.a, link.b):
            ends += [(link.a, local_interface(link.a, link.b_gpu)), (link.b, local_interface(link.b, link.a_gpu))]
    return tuple(ends)


def set_link(interface: str, up: bool, pid: int | None = None) -> None:
    """`ip link set` on an interface of the root namespace, or of the network namespace of
    process `pid` (a Mininet host's shell)."""
    argv = ["ip", "link", "set", "dev", interface, "up" if up else "down"]
    if pid is not None:
        argv = ["nsenter", "-t", str(pid), "-n"] + argv
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise FaultError(f"{' '.join(argv)} failed: {result.stderr.strip()}")


class FaultRunner:
    """Runs the planned actions at epoch + at_s on a thread; `finish()` stops and undoes them.

    `tm(switch, line)` sends a traffic-manager command (raises FaultError when refused);
    `agents` maps a host to its agent's pid; `switches(name, up)` stops or restarts a switch;
    `namespaces` maps a host to a pid in its network namespace (its shell), for local channels;
    `commands` maps a host to its agent's command file (host_slow, testbed.host.slow)."""

    def __init__(self, actions: list[FaultAction], epoch: float, log: Path,
                 tm: Callable[[str, str], None] | None = None, agents: dict[str, int] | None = None,
                 switches: Callable[[str, bool], dict | None] | None = None,
                 namespaces: dict[str, int] | None = None, commands: dict[str, Path] | None = None) -> None:
        self.actions = actions
        self.commands = commands or {}
        self.epoch = epoch
        self.log = log
        self.tm = tm
        self.switches = switches
        self.agents = agents or {}
        self.namespaces = namespaces or {}
        self.down: set[str] = set()
        self.local_down: set[tuple[str, str]] = set()  # (host, interface) inside host's namespace
        self.stalled: set[str] = set()
        self.errors: list[str] = []
        self.applied = 0  # actions carried out (or tried), in order; the rest had not come due
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)

    def start(self) -> "FaultRunner":
        if self.actions:
            self._thread.start()
        return self

    def _run(self) -> None:
        for action in self.actions:
            if self._stop.wait(max(0.0, self.epoch + action.at_s - time.time())):
                return
            self._apply(action, time.time() - self.epoch)
            self.applied += 1

    def not_executed(self, ended_s: float) -> list[dict]:
        """The planned actions that never ran, each with why: the run ended (at `ended_s`, seconds
        since the epoch) before its time. Call after stop()."""
        return [{"at_s": a.at_s, "kind": a.kind, "target": a.target, "run_ended_s": round(ended_s, 3),
                 "reason": "the run ended before its planned time"}
                for a in self.actions[self.applied:]]

    def _apply(self, action: FaultAction, t_s: float) -> None:
        try:
            if action.gpu is not None:  # the agents take no compute command yet
                raise FaultError(f"{action.kind} {action.target}: a slow GPU is carried out by the simulator "
                                 "only (testbed sim)")
            for interface in action.interfaces:
                set_link(interface, action.up)
                (self.down.discard if action.up else self.down.add)(interface)
            for host, interface in action.local:
                pid = self.namespaces.get(host)
                if pid is None:
                    raise FaultError(f"{action.kind} {action.target}: no namespace known for {host} "
                                     f"(its local channel {interface})")
                set_link(interface, action.up, pid)
                (self.local_down.discard if action.up else self.local_down.add)((host, interface))
            for switch, line in action.tm_lines:
                if self.tm is None:
                    raise FaultError(f"{action.kind} {action.target}: no traffic-manager control here")
                self.tm(switch, line)
            if action.agent is not None:
                self._signal_agent(action.agent, stop=action.kind == "agent_stall")
            if action.slow is not None:
                self._command_agent(action.target, action.slow)
            extra = action.slow.to_json() if action.slow is not None else None
            if action.switch is not None:
                if self.switches is None:
                    raise FaultError(f"{action.kind} {action.switch}: no switch supervisor here")
                extra = self.switches(action.switch, action.kind == "switch_start")
            record = {"at_s": action.at_s, "t_s": round(t_s, 6), "kind": action.kind,
                      "target": action.target, "interfaces": list(action.interfaces)}
            if action.local:
                record["local_interfaces"] = [f"{host}:{interface}" for host, interface in action.local]
            if extra:
                record.update(extra)
            if action.tm_lines:
                record["tm_commands"] = [f"{switch}: {line}" for switch, line in action.tm_lines]
        except FaultError as error:
            self.errors.append(str(error))
            record = {"at_s": action.at_s, "t_s": round(t_s, 6), "kind": action.kind,
                      "target": action.target, "error": str(error)}
        with self.log.open("a") as out:
            out.write(json.dumps(record) + "\n")

    def _signal_agent(self, host: str, stop: bool) -> None:
        pid = self.agents.get(host)
        if pid is None:
            raise FaultError(f"{host} runs no agent in this run")
        try:
            os.kill(pid, signal.SIGSTOP if stop else signal.SIGCONT)
        except ProcessLookupError:
            raise FaultError(f"the agent of {host} (pid {pid}) has already ended") from None
        (self.stalled.add if stop else self.stalled.discard)(host)

    def _command_agent(self, host: str, command: SlowCommand) -> None:
        """Write `host`'s command file, then tell its agent (SIGUSR1) to read it."""
        pid, path = self.agents.get(host), self.commands.get(host)
        if pid is None or path is None:
            raise FaultError(f"{host} runs no agent that takes commands in this run")
        try:
            write_command(path, command)
        except OSError as error:
            raise FaultError(f"cannot write the command file of {host}'s agent {path}: {error.strerror}") from None
        try:
            os.kill(pid, COMMAND_SIGNAL)
        except ProcessLookupError:
            raise FaultError(f"the agent of {host} (pid {pid}) has already ended") from None

    def stop(self) -> None:
        """Stop what has not happened yet and let every stalled agent go on (before the run
        asks the agents to end: a stopped process cannot)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        for host in sorted(self.stalled):
            try:
                self._signal_agent(host, stop=False)
            except FaultError:
                self.stalled.discard(host)

    def finish(self) -> list[str]:
        """stop(), then bring every link this run took down back up (degraded links go with
        their switch processes, which the run has stopped by then)."""
        self.stop()
        for interface in sorted(self.down):
            try:
                set_link(interface, True)
            except FaultError as error:
                self.errors.append(str(error))
        self.down.clear()
        for host, interface in sorted(self.local_down):
            try:
                set_link(interface, True, self.namespaces.get(host))
            except FaultError as error:
                self.errors.append(str(error))
        self.local_down.clear()
        return self.errors
