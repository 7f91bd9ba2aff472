"""The scenario's faults on the program network (program_net.py), done as the emulation does them.

The actions are the emulation's (`testbed.emulation.faults.plan_faults`), each
carried out at its time on the virtual clock as an observer of the network
(`ProgramNetwork.every`: one the run ended before never runs, and
`not_executed` lists it as the emulation does), recorded in `faults.jsonl` in
the emulated run's format.  What each does, with the emulated run's pieces:

* `link_down` / `link_up` (a `link_flap`'s downs and ups) and `host_down`:
  both directions of the cable stop carrying frames.  A switch's end is cut
  in the engine (`NativeFabric.port_down`: what the port sends is lost, its
  queue draining at the link's rate into the dead cable, and so are the
  frames on their way into it); a host's end is its Wire (`Wire.down`: what
  the NIC sends is lost) and the deliveries already on the cable towards it
  are forgotten.  A dual-homed host's NIC loses the port's carrier
  (`NicPorts.set_carrier`) and its rate follows, as the agent's does.
  `host_down` also cuts its local channels.  All that is `lost_on_cut_links`.
* the controller's fast reroute (`testbed.emulation.reroute`): on each change
  of the dead links, `testbed.control.reroute.Rerouter`'s updates (new groups
  first, then the routes moved to them: make before break) are written
  `reaction_s` later to every switch that is up, as P4Runtime entities
  through the switch's in-process ControlPlane; each reaction is a line of
  `reroute.jsonl` as the emulation writes it.
* `link_degrade` / `link_restore`: the action's TM command lines, run by the
  switch's own `tm_commands` (the EngineTrafficManager copies them in).
* `agent_stall` / `agent_resume`: the host stops whole (`ProgramHost.stall`:
  no polls, no timers, no sends); what arrives meanwhile is read at resume
  with its arrival time.
* `switch_stop` / `switch_start` (`switch_restart`): the switch's process
  ends: the engine drops what it holds (`switch_clear`: queues, PFC state,
  counters) and it runs no program, so every frame that reaches it is
  dropped and it sends nothing (its cables keep carrier: the neighbours and
  hosts keep sending into it; what it sent before arrives).  The controller
  hears of it at once and routes around it.  At start a new pipeline gets its
  plan (tables, meters, TM commands), its counters start from zero, and the
  controller routes through it again.
* `host_slow` / `host_restore`: the application starts each message
  `delay_ms` late (`WorkloadRunner.set_slow`), the endpoint paces at
  `rate_mbps` and the NIC's wires send at it; `gpu_slow` / `gpu_restore`:
  its compute takes `factor` times as long (`set_compute_factor`).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from p4.v1 import p4runtime_pb2

from testbed.control.p4runtime_client import encode_table_entry
from testbed.control.reroute import Rerouter
from testbed.emulation.faults import FaultAction, plan_faults
from testbed.simulation.faults import REACTION_S
from testbed.simulation.program_host import DELIVER, LOCAL
from testbed.simulation.program_net import ProgramNetwork


class ProgramFaults:
    """Schedules the scenario's fault actions on a ProgramNetwork and records them."""

    def __init__(self, scenario, net: ProgramNetwork, run_dir: Path | None = None,
                 reaction_s: float = REACTION_S, agents: set[str] | None = None, on_restart=None) -> None:
        self.net, self.topo, self.fabric = net, net.topo, net.fabric
        self.actions = plan_faults(scenario)
        self.reaction_ns = round(reaction_s * 1e9)
        self.log = None if run_dir is None else Path(run_dir) / "faults.jsonl"
        self.reroute_log = None if run_dir is None else Path(run_dir) / "reroute.jsonl"
        self.agents = agents  # the hosts an emulated run starts agents on (None: all)
        self.on_restart = on_restart  # called with a switch's name when it starts again (telemetry)
        self.records: list[dict] = []
        self.reactions: list[dict] = []
        self.applied = 0
        self.links_down: set[str] = set()
        self.switches_down: set[str] = set()
        self.dead_seen: frozenset[str] = frozenset()
        self.links_of = {s: {p.link for p in self.topo.ports(s)} for s in self.topo.switches}
        self.rerouter = Rerouter(self.topo, scenario, self.fabric.plans) if self.actions else None
        self.cut_deliveries = 0  # frames on a cable towards a host when it was cut
        self.flushed = 0  # packets queued in a switch when it stopped
        self.dropped_while_stopped: dict[str, int] = {}  # frames that reached a stopped switch
        for path in (self.log, self.reroute_log):
            if path is not None and path.exists():
                path.unlink()

    def start(self) -> "ProgramFaults":
        for index, action in enumerate(self.actions):
            self.net.every(round(action.at_s * 1e9), lambda now, i=index, a=action: self._apply(i, a, now))
        return self

    def not_executed(self, ended_s: float) -> list[dict]:
        """The actions the run never reached, as the emulation lists them."""
        return [{"at_s": a.at_s, "kind": a.kind, "target": a.target, "run_ended_s": round(ended_s, 3),
                 "reason": "the run ended before its planned time"}
                for a in self.actions[self.applied:]]

    def carried_out(self) -> int:
        return sum(1 for r in self.records if "error" not in r)

    def lost_on_cut_links(self) -> int:
        """Frames lost into cut cables or on them when cut: switch ports (the engine's count),
        host NIC ports and local channels (their wires), and deliveries on a cut host cable."""
        engine, total = self.net.engine, self.cut_deliveries
        for name, index in self.fabric.index.items():
            for p in self.topo.ports(name):
                stats = engine.port_stats(index, p.number)
                total += stats["cut_lost"] if stats else 0
        for host in self.net.hosts.values():
            total += sum(w.lost for w in host.wires) + sum(w.lost for w in host.local_wires.values())
        return total

    def dropped_by_stopped_switches(self) -> int:
        """Packets a stopped switch had queued, and frames that reached it while it was stopped."""
        engine = self.net.engine
        live = sum(engine.switch_stats(self.fabric.index[s])["no_pipeline"] for s in self.switches_down)
        return self.flushed + sum(self.dropped_while_stopped.values()) + live

    # -- carrying out ---------------------------------------------------------------
    def _apply(self, index: int, action: FaultAction, now_ns: int) -> None:
        self.applied = index + 1
        now = now_ns / 1e9
        record = {"at_s": action.at_s, "t_s": round(now, 6), "kind": action.kind, "target": action.target,
                  "interfaces": list(action.interfaces)}
        if action.local:
            record["local_interfaces"] = [f"{host}:{interface}" for host, interface in action.local]
        kind = action.kind
        idle = action.agent or (action.target if action.slow is not None else None)
        if idle is not None and self.agents is not None and idle not in self.agents:
            what = "that takes commands " if action.slow is not None else ""
            record = {"at_s": action.at_s, "t_s": round(now, 6), "kind": kind, "target": action.target,
                      "error": f"{idle} runs no agent {what}in this run"}
        elif kind in ("link_down", "link_up", "host_down"):
            links = [p.link for p in self.topo.ports(action.target)] if kind == "host_down" else [action.target]
            for name in links:
                self._cable(name, kind != "link_up", now_ns)
            if kind == "host_down":
                self._local_channels(action.target)
            self._react({name: "up" if kind == "link_up" else "down" for name in links}, now_ns)
        elif action.tm_lines:
            errors = self._tm(action.tm_lines)
            record["tm_commands"] = [f"{switch}: {line}" for switch, line in action.tm_lines]
            if errors:
                record = {"at_s": action.at_s, "t_s": round(now, 6), "kind": kind, "target": action.target,
                          "error": "; ".join(errors)}
        elif action.agent is not None:
            self.net.hosts[action.agent].stall(kind == "agent_stall", now_ns)
        elif action.switch is not None:
            record["reroute"] = self._switch(action.switch, kind == "switch_start", now_ns)
        elif action.gpu is not None:
            runner = self.net.hosts[action.target].runner
            if runner is not None:
                runner.set_compute_factor(action.gpu)
            record["factor"] = action.gpu
        elif action.slow is not None:
            self._slow(action.target, action.slow.delay_ms, action.slow.rate_mbps, now_ns)
            record.update(action.slow.to_json())
        self.records.append(record)
        if self.log is not None:
            with self.log.open("a") as out:
                out.write(json.dumps(record) + "\n")

    def _cable(self, name: str, down: bool, now_ns: int) -> None:
        link = self.topo.link(name)
        (self.links_down.add if down else self.links_down.discard)(name)
        for node, number in ((link.a, link.a_port), (link.b, link.b_port)):
            host = self.net.hosts.get(node)
            if host is None:
                self.net.engine.port_down(self.fabric.index[node], number, down)
                continue
            ports = [p.number for p in self.topo.ports(node)]
            wire = host.wires[ports.index(number)]
            if down and not wire.down:  # the frames on the cable towards the host never arrive
                nic = self.fabric.nic_index[(node, number)]
                self.cut_deliveries += self.net.cut_in_flight(DELIVER, lambda target, arg: target != nic)
            wire.down = down
            if host.nic is not None and host.nic.set_carrier(f"{node}-eth{number - 1}", not down, now_ns / 1e9):
                host.ep.set_link_rate(host.nic.rate_bps())
                host.kick(now_ns)

    def _local_channels(self, name: str) -> None:
        """host_down on a GPU server: both ends of each of its local channels go down."""
        host = self.net.hosts[name]
        for peer, wire in host.local_wires.items():
            wire.down = True
            self.net.hosts[peer].local_wires[name].down = True
        if host.local_wires:
            self.cut_deliveries += self.net.cut_in_flight(
                LOCAL, lambda target, arg: not (target.name == name or arg[0] == name))

    def _tm(self, lines) -> list[str]:
        """The emulation's traffic-manager commands, each by its switch's command language."""
        errors = []
        for switch, line in lines:
            reply = self.fabric.switches[switch].tm_commands.execute(line)
            if reply is not None and not reply["ok"]:
                errors.append(f"{switch}: {line}: {reply['error']}")
        return errors

    def _switch(self, name: str, up: bool, now_ns: int) -> dict:
        index = self.fabric.index[name]
        engine = self.net.engine
        if not up:  # no program and nothing queued: it sends nothing more and drops what reaches it
            engine.set_pipeline(index, None)
            self.flushed += engine.switch_clear(index)
            self.switches_down.add(name)
        else:
            self.dropped_while_stopped[name] = (self.dropped_while_stopped.get(name, 0)
                                                + engine.switch_stats(index)["no_pipeline"])
            plan = self.fabric.plans[name]
            pipeline, control = self.fabric.configured(plan)
            switch = self.fabric.switches[name]
            switch.install(SimpleNamespace(pipeline=pipeline))
            engine.switch_clear(index)  # its counters start from zero
            engine.set_pipeline(index, pipeline, name=name)
            switch.tm_commands.apply_all(plan.tm_commands, source=f"{name}'s plan")
            self.fabric.controls[name] = control
            self.switches_down.discard(name)
            self.rerouter.reset(name, plan)
            if self.on_restart is not None:
                self.on_restart(name)
        return self._react({name: "up" if up else "down"}, now_ns, force=True)

    def _slow(self, name: str, delay_ms: float, rate_mbps: float | None, now_ns: int) -> None:
        host = self.net.hosts[name]
        if host.runner is not None:
            host.runner.set_slow(delay_ms / 1e3)
        cap = None if rate_mbps is None else rate_mbps * 1e6
        nominal = self.net.scenario.links.host.rate_mbps * 1e6
        if host.nic is not None:
            host.nic.rate_cap_bps = cap
            host.ep.set_link_rate(host.nic.rate_bps())
            rate = host.nic.wire_rate_bps()
        else:
            rate = nominal if cap is None else min(nominal, cap)
            host.ep.set_link_rate(rate)
        for wire in host.wires:
            wire.rate_bps = rate
        host.kick(now_ns)

    # -- the controller -----------------------------------------------------------
    def _dead(self) -> frozenset[str]:
        dead = set(self.links_down)
        for switch in self.switches_down:
            dead |= self.links_of[switch]
        return frozenset(dead)

    def _react(self, changes: dict[str, str], seen_ns: int, force: bool = False) -> dict | None:
        """The controller's answer to a change seen at `seen_ns`: the Rerouter's updates for the dead
        links now, to every switch that is up, written `reaction_s` later (an observer; writes
        land in the order they were decided, so a route never points to a group not yet there).
        The record is a line of reroute.jsonl for a link change, and is returned for the record of
        a switch's stop or start, as the emulation keeps them."""
        dead = self._dead()
        if dead == self.dead_seen and not force:
            return None
        self.dead_seen = dead
        updates = {s: u for s, u in self.rerouter.updates(dead).items() if s not in self.switches_down}
        self.rerouter.commit(dead, updates)
        done_ns = seen_ns + self.reaction_ns
        self.net.every(done_ns, lambda now: self._write(updates))
        record = {"seen_t_s": round(seen_ns / 1e9, 6), "dead_links": sorted(dead), "changes": changes,
                  "switches": sorted(updates), "routes_moved": sum(len(u.modifies) for u in updates.values()),
                  "done_t_s": round(done_ns / 1e9, 6), "reaction_ms": round(self.reaction_ns / 1e6, 3)}
        self.reactions.append(record)
        if not force and self.reroute_log is not None:
            with self.reroute_log.open("a") as out:
                out.write(json.dumps(record) + "\n")
        return record

    def _write(self, updates: dict) -> None:
        """The controller's writes: new groups, then the routes moved to them (make before break),
        each a P4Runtime update through the switch's ControlPlane."""
        index = self.fabric.p4info_index
        for switch, update in updates.items():
            control = self.fabric.controls[switch]
            for spec in update.inserts:
                kind = p4runtime_pb2.Update.MODIFY if spec.is_default else p4runtime_pb2.Update.INSERT
                control.write(self._update(kind, index, spec))
            for spec in update.modifies:
                control.write(self._update(p4runtime_pb2.Update.MODIFY, index, spec))

    @staticmethod
    def _update(kind: int, index, spec) -> p4runtime_pb2.Update:
        update = p4runtime_pb2.Update(type=kind)
        update.entity.table_entry.CopyFrom(encode_table_entry(index, spec))
        return update
