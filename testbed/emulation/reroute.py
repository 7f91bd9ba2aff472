"""The run's controller reacting to port status: fast reroute while the workload runs.

The switches' ends of every veth cable live in the root namespace, where
the run is; an rtnetlink socket (`testbed.host.carrier.LinkEvents`) tells
this thread the moment one goes down or comes back, whatever made it (a
scenario fault, or an operator's `ip link`).  A link is dead while any of
its switch-side interfaces is down; on each change the routes for the new
set of dead links (`testbed.control.reroute`) are written to the switches
over P4Runtime, new groups before the routes that use them.  A switch whose
process stopped is dead with all its cables (`set_switch`: the run, which
supervises its switch processes, says so; its cables keep carrier).  Each reaction
is recorded in `reroute.jsonl`: when the change was seen, when the last
switch acknowledged its writes, what moved.  Cables a fabric process keeps
in memory have no interface and are never cut (faulted links stay veth).
"""

from __future__ import annotations

import json
import select
import threading
import time
from pathlib import Path

from testbed.control.reroute import Rerouter
from testbed.emulation.network import switch_interface
from testbed.host.carrier import LinkEvents


class RerouteController:
    def __init__(self, topology, scenario, plans, clients: dict, epoch: float, log: Path,
                 in_memory=frozenset()) -> None:
        self.rerouter = Rerouter(topology, scenario, plans)
        self.clients = clients
        self.epoch = epoch
        self.log = log
        self.link_of: dict[str, str] = {}
        for link in topology.links:
            if link.name in in_memory:
                continue
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                if not topology.node(node).is_host:
                    self.link_of[switch_interface(node, port)] = link.name
        self.down: set[str] = set()  # switch-side interfaces seen down
        self.switches_down: set[str] = set()
        self.links_of = {s: {p.link for p in topology.ports(s)} for s in topology.switches}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self.reactions = 0
        self._events = LinkEvents()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reroute", daemon=True)

    def start(self) -> "RerouteController":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            if not select.select([self._events], [], [], 0.2)[0]:
                continue
            seen = time.time()
            changes = [(name, up) for name, up in self._events.read() if name in self.link_of]
            with self._lock:
                for name, up in changes:
                    (self.down.discard if up else self.down.add)(name)
                dead = self._dead()
                if changes and dead != self.rerouter.dead:
                    self._react(dead, seen, {name: "up" if up else "down" for name, up in changes})

    def _dead(self) -> set[str]:
        dead = {self.link_of[name] for name in self.down}
        for switch in self.switches_down:
            dead |= self.links_of[switch]
        return dead

    def set_switch(self, switch: str, up: bool, plan=None) -> dict | None:
        """A switch process stopped (up=False) or was restarted and configured from `plan`:
        reroute around it, or back through it; returns the reaction's record."""
        with self._lock:
            seen = time.time()
            (self.switches_down.discard if up else self.switches_down.add)(switch)
            if up and plan is not None:
                self.rerouter.reset(switch, plan)
            return self._react(self._dead(), seen, {switch: "up" if up else "down"})

    def _react(self, dead: set[str], seen: float, changes: dict[str, str]) -> dict:
        updates = {s: u for s, u in self.rerouter.updates(dead).items() if s not in self.switches_down}
        record = {"seen_t_s": round(seen - self.epoch, 6), "dead_links": sorted(dead), "changes": changes,
                  "switches": sorted(updates), "routes_moved": sum(len(u.modifies) for u in updates.values())}
        try:
            for switch, update in updates.items():  # make before break: groups, then routes
                client = self.clients[switch]
                client.insert(update.inserts)
                client.modify(update.modifies)
            self.rerouter.commit(dead, updates)
        except Exception as error:  # the run goes on; the record says what failed
            self.errors.append(f"reroute for dead links {sorted(dead)} failed: {error}")
            record["error"] = str(error)
        done = time.time()
        record.update(done_t_s=round(done - self.epoch, 6), reaction_ms=round((done - seen) * 1e3, 3))
        self.reactions += 1
        with self.log.open("a") as out:
            out.write(json.dumps(record) + "\n")
        return record

    def stop(self) -> list[str]:
        """Stop reacting (before teardown takes the links down) and return what failed."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self._events.close()
        return self.errors
