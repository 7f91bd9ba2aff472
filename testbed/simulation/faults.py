"""The scenario's faults on the simulator, with the emulation's parameters and meaning.

The actions are the emulation's own (`testbed.emulation.faults.plan_faults`),
each carried out at its time on the virtual clock (the scenario's, or the
slowed run's) and recorded in `faults.jsonl` in the emulated run's format;
actions the run never reached (it ended first) are listed by `not_executed`
as the emulation lists them.

* `link_down` / `link_up` (and a `link_flap`'s downs and ups): both directions
  of the cable are cut: frames queued for it drain into the dead cable and,
  with those on it, are lost; a dual-homed host's NIC leaves the port (its
  carrier, `NicPorts.set_carrier`) and its rate follows, as the agent's does.
  `host_down`: every cable of the host and both ends of its local channels.
* the controller's fast reroute: after `reaction_s` (the emulated
  controller's reaction, tens of milliseconds of P4Runtime writes), every
  switch that is up routes on the up*/down* paths of the fabric without the
  dead links (`testbed.control.reroute`'s rule, groups in the plan's order
  and divisors, so spraying moves around the cut; a host the cut leaves
  unreachable keeps its route), each reaction in `reroute.jsonl` as the
  emulation writes it; when every link is back the plan's routes return.
* `link_degrade` / `link_restore`: the traffic-manager commands the emulation
  sends, applied to the switch-side egress ports they name: rate, delay
  (propagation), and loss (each frame leaving is lost with that probability).
* `agent_stall` / `agent_resume`: the host stops whole (application,
  transport, timers, NIC), as SIGSTOP stops the agent; what arrives meanwhile
  waits and is read at resume with its arrival time.
* `switch_stop` / `switch_start` (`switch_restart`): the switch drops what it
  has queued and what is on its cables and every frame that reaches it; the
  controller routes around it at once (the run supervises the switch, as in
  the emulation) and the change takes `reaction_s`. At start it forwards
  again on its plan's routes (its tables reinstalled), its counters start
  from zero, and the others route through it again after `reaction_s`.
* `gpu_slow` / `gpu_restore`: the host's (GPU's) compute placed from then on
  takes `factor` times as long (`WorkloadRunner.set_compute_factor`); 1 at
  restore.
* `host_slow` / `host_restore`: the host's application starts each message
  `delay_ms` after its turn (`WorkloadRunner.set_slow`) and its NIC sends at
  `rate_mbps` (the endpoint's pacer, credits and flows, and its ports' wire).
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.control.reroute import updown_distances, updown_next_hops
from testbed.emulation.faults import FaultAction, plan_faults
from testbed.simulation.sim import Network
from testbed.topo.entropy import group_choice, layout_of

# The emulated controller's reaction to a port change (seen to every switch written): tens of
# milliseconds, mostly P4Runtime writes (docs/architecture.md, "Fast reroute").
REACTION_S = 0.02


def fabric_routes(topology, dead: frozenset[str]) -> dict[str, dict[str, tuple[tuple[int, ...], int]]]:
    """switch -> host -> (member ports, entropy divisor) for these dead links: the plan's shortest
    paths on the intact fabric, up*/down* paths on a cut one (testbed.control.reroute)."""
    layout = layout_of(topology)
    reduced = topology.without_links(dead) if dead else topology
    distances = {h: updown_distances(reduced, h) for h in reduced.hosts} if dead else None
    out = {}
    for switch in topology.switches:
        routes = {}
        for host in topology.hosts:
            hops = (reduced.next_hops(switch, host) if distances is None
                    else updown_next_hops(reduced, switch, host, distances[host]))
            if hops:
                divisor, members = group_choice(reduced, layout, switch, hops)
                routes[host] = (tuple(members), divisor)
        out[switch] = routes
    return out


class SimFaults:
    """Schedules the scenario's fault actions on `net` (built by sim.from_topology) and records them."""

    def __init__(self, scenario, net: Network, run_dir: Path | None = None, reaction_s: float = REACTION_S,
                 on_restart=None, agents: set[str] | None = None) -> None:
        if net.topo is None:
            raise ValueError("faults need a network built from a topology (sim.from_topology)")
        self.net = net
        self.topo = net.topo
        self.actions = plan_faults(scenario)
        self.reaction_s = reaction_s
        self.log = None if run_dir is None else Path(run_dir) / "faults.jsonl"
        self.reroute_log = None if run_dir is None else Path(run_dir) / "reroute.jsonl"
        self.on_restart = on_restart  # called with a switch's name when it starts again (telemetry)
        # the hosts an emulated run starts agents on (those with messages; None: all): a stall or a
        # slow-down of another host fails there with a recorded error, and so it does here
        self.agents = agents
        self.records: list[dict] = []
        self.reactions: list[dict] = []
        self.applied = 0
        self.links_down: set[str] = set()
        self.switches_down: set[str] = set()
        # what each switch routes on now (the plan's, until a fault moves them); only with faults
        self.intact = fabric_routes(self.topo, frozenset()) if self.actions else {}
        self.routes = {switch: dict(routes) for switch, routes in self.intact.items()}
        self.dead: frozenset[str] = frozenset()
        self.links_of = {s: {p.link for p in self.topo.ports(s)} for s in self.topo.switches}
        for path in (self.log, self.reroute_log):
            if path is not None and path.exists():
                path.unlink()

    def start(self) -> "SimFaults":
        for index, action in enumerate(self.actions):  # observers: a run that ended reaches none after
            self.net.sim.every(action.at_s, lambda i=index, a=action: self._apply(i, a))
        return self

    def not_executed(self, ended_s: float) -> list[dict]:
        """The actions the run never reached, as the emulation lists them."""
        return [{"at_s": a.at_s, "kind": a.kind, "target": a.target, "run_ended_s": round(ended_s, 3),
                 "reason": "the run ended before its planned time"}
                for a in self.actions[self.applied:]]

    # -- carrying out ---------------------------------------------------------------
    def _apply(self, index: int, action: FaultAction) -> None:
        now = self.net.sim.now
        self.applied = index + 1
        record = {"at_s": action.at_s, "t_s": round(now, 6), "kind": action.kind, "target": action.target,
                  "interfaces": list(action.interfaces)}
        if action.local:
            record["local_interfaces"] = [f"{host}:{interface}" for host, interface in action.local]
        kind = action.kind
        idle = (action.agent or (action.target if action.slow is not None else None))
        if idle is not None and self.agents is not None and idle not in self.agents:
            what = "that takes commands " if action.slow is not None else ""
            record = {"at_s": action.at_s, "t_s": round(now, 6), "kind": kind, "target": action.target,
                      "error": f"{idle} runs no agent {what}in this run"}
        elif kind in ("link_down", "link_up", "host_down"):
            links = ([p.link for p in self.topo.ports(action.target)] if kind == "host_down" else [action.target])
            for name in links:
                self._cable(name, down=kind != "link_up")
            if kind == "host_down":
                self._local_channels(action.target)
            self._react({name: "up" if kind == "link_up" else "down" for name in links}, now)
        elif action.tm_lines:
            for switch, line in action.tm_lines:
                self._tm(switch, line)
            record["tm_commands"] = [f"{switch}: {line}" for switch, line in action.tm_lines]
        elif action.agent is not None:
            self.net.hosts[action.agent].stall(kind == "agent_stall")
        elif action.switch is not None:
            record["reroute"] = self._switch(action.switch, up=kind == "switch_start", now=now)
        elif action.gpu is not None:
            runner = self.net.hosts[action.target].runner
            if runner is not None:
                runner.set_compute_factor(action.gpu)
            record["factor"] = action.gpu
        elif action.slow is not None:
            self._slow(action.target, action.slow.delay_ms, action.slow.rate_mbps)
            record.update(action.slow.to_json())
        self.records.append(record)
        if self.log is not None:
            with self.log.open("a") as out:
                out.write(json.dumps(record) + "\n")

    def _cable(self, name: str, down: bool) -> None:
        link = self.topo.link(name)
        a, b = self.net.port_of[(link.a, link.a_port)], self.net.port_of[(link.b, link.b_port)]
        a.set_down(down)
        b.set_down(down)
        (self.links_down.add if down else self.links_down.discard)(name)
        for node, number in ((link.a, link.a_port), (link.b, link.b_port)):
            host = self.net.hosts.get(node)
            if host is not None and host.nic is not None:  # a dual-homed NIC leaves a port without carrier
                if host.nic.set_carrier(f"{node}-eth{number - 1}", not down, self.net.sim.now):
                    host.ep.set_link_rate(host.nic.rate_bps())
                    host.kick()

    def _local_channels(self, host: str) -> None:
        h = self.net.hosts[host]
        for port in h.local_ports.values():
            port.set_down(True)
            port.reverse.set_down(True)

    def _tm(self, switch: str, line: str) -> None:
        """One traffic-manager command of the emulation's link_degrade, on the port it names."""
        command, value, port = line.split()
        egress = self.net.port_of[(switch, int(port))]
        if command == "set_port_rate_bps":
            egress.rate_bps = float(value)
        elif command == "set_port_delay_us":
            egress.delay_s = float(value) / 1e6
        elif command == "set_port_loss":
            egress.loss = float(value)
        else:
            raise ValueError(f"{switch}: no simulator meaning for traffic-manager command {line!r}")

    def _switch(self, name: str, up: bool, now: float) -> dict:
        switch = self.net.switches[name]
        egress = [self.net.port_of[(name, p.number)] for p in self.topo.ports(name)]
        if not up:
            switch.down = True
            for port in egress:
                port.flush()
                port.freeze(True)
            self.switches_down.add(name)
        else:
            switch.down = False
            self._install(name, self.intact[name])  # its plan, reinstalled
            for port in egress:
                port.freeze(False)
            self.switches_down.discard(name)
            if self.on_restart is not None:
                self.on_restart(name)
        return self._react({name: "up" if up else "down"}, now, force=True)

    def _slow(self, host: str, delay_ms: float, rate_mbps: float | None) -> None:
        h = self.net.hosts[host]
        if h.runner is not None:
            h.runner.set_slow(delay_ms / 1e3)
        cap = None if rate_mbps is None else rate_mbps * 1e6
        uplinks = list(h.uplinks) or [h.uplink]
        if h.nic is not None:
            h.nic.rate_cap_bps = cap
            h.ep.set_link_rate(h.nic.rate_bps())
            wire = h.nic.wire_rate_bps()
        else:
            nominal = uplinks[0].spec.rate_bps
            h.ep.set_link_rate(nominal if cap is None else min(nominal, cap))
            wire = nominal if cap is None else min(nominal, cap)
        for port in uplinks:
            port.rate_bps = wire
        h.kick()

    # -- the controller -----------------------------------------------------------
    def _dead(self) -> frozenset[str]:
        dead = set(self.links_down)
        for switch in self.switches_down:
            dead |= self.links_of[switch]
        return frozenset(dead)

    def _react(self, changes: dict[str, str], seen: float, force: bool = False) -> dict | None:
        """The controller's answer to a change: the routes for the dead links now, written to every
        switch that is up `reaction_s` later; recorded in reroute.jsonl (link changes) or returned
        for the fault's record (a switch's stop or start, as the emulation does)."""
        dead = self._dead()
        if dead == self.dead and not force:
            return None
        wanted = fabric_routes(self.topo, dead)
        moves = {}
        for switch, routes in wanted.items():
            if switch in self.switches_down:
                continue
            moved = {h: r for h, r in routes.items() if self.routes[switch].get(h) != r}
            if moved:
                moves[switch] = moved
                self.routes[switch].update(moved)
        self.dead = dead
        done = seen + self.reaction_s
        record = {"seen_t_s": round(seen, 6), "dead_links": sorted(dead), "changes": changes,
                  "switches": sorted(moves), "routes_moved": sum(len(m) for m in moves.values()),
                  "done_t_s": round(done, 6), "reaction_ms": round(self.reaction_s * 1e3, 3)}
        self.net.sim.at(done, self._write_routes, moves)
        self.reactions.append(record)
        if not force and self.reroute_log is not None:
            with self.reroute_log.open("a") as out:
                out.write(json.dumps(record) + "\n")
        return record

    def _write_routes(self, moves: dict) -> None:
        for switch, routes in moves.items():
            if switch not in self.switches_down:
                self._install(switch, routes)

    def _install(self, switch: str, routes: dict[str, tuple[tuple[int, ...], int]]) -> None:
        sw = self.net.switches[switch]
        for host, (members, divisor) in routes.items():
            sw.routes[host] = [self.net.port_of[(switch, p)] for p in members]
            sw.divisors[host] = divisor
        if switch in self.routes:
            self.routes[switch].update(routes)

