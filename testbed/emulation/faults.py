"""The scenario's faults, executed while the workload runs.

A fault acts on the switch-side end of veth pairs in the root namespace,
the same for both targets: `link_down` takes a cable's switch-side
interface(s) down (the far end loses carrier, as with a pulled cable),
`link_up` brings them back, `host_down` takes down every cable of a host.
Each event is recorded when it happens (`faults.jsonl`: planned and
actual time on the run's clock, the interfaces touched) and undone at
teardown, so a run leaves every link as it found it. After `kill -9` the
interfaces go with the run's manifest (`testbed clean`).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.emulation.network import switch_interface
from testbed.errors import TestbedError


class FaultError(TestbedError):
    """A fault could not be carried out."""


@dataclass(frozen=True)
class FaultAction:
    at_s: float
    kind: str
    target: str
    interfaces: tuple[str, ...]
    up: bool


def plan_faults(scenario) -> list[FaultAction]:
    """Each fault of the scenario as interface actions, in time order."""
    topo = scenario.topo
    actions = []
    for fault in scenario.faults:
        links = ([topo.link(p.link) for p in topo.ports(fault.target)] if fault.kind == "host_down"
                 else [topo.link(fault.target)])
        interfaces = []
        for link in links:
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                if not topo.node(node).is_host:
                    interfaces.append(switch_interface(node, port))
        for at_s, kind in fault.events():  # a flapping link is its downs and ups
            actions.append(FaultAction(at_s, kind, fault.target, tuple(interfaces), up=kind == "link_up"))
    return sorted(actions, key=lambda a: a.at_s)


def set_link(interface: str, up: bool) -> None:
    argv = ["ip", "link", "set", "dev", interface, "up" if up else "down"]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise FaultError(f"{' '.join(argv)} failed: {result.stderr.strip()}")


class FaultRunner:
    """Runs the planned actions at epoch + at_s on a thread; `finish()` stops and undoes them."""

    def __init__(self, actions: list[FaultAction], epoch: float, log: Path) -> None:
        self.actions = actions
        self.epoch = epoch
        self.log = log
        self.down: set[str] = set()
        self.errors: list[str] = []
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

    def _apply(self, action: FaultAction, t_s: float) -> None:
        try:
            for interface in action.interfaces:
                set_link(interface, action.up)
                (self.down.discard if action.up else self.down.add)(interface)
            record = {"at_s": action.at_s, "t_s": round(t_s, 6), "kind": action.kind,
                      "target": action.target, "interfaces": list(action.interfaces)}
        except FaultError as error:
            self.errors.append(str(error))
            record = {"at_s": action.at_s, "t_s": round(t_s, 6), "kind": action.kind,
                      "target": action.target, "error": str(error)}
        with self.log.open("a") as out:
            out.write(json.dumps(record) + "\n")

    def finish(self) -> list[str]:
        """Stop what has not happened yet, bring every link this run took down back up."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        for interface in sorted(self.down):
            try:
                set_link(interface, True)
            except FaultError as error:
                self.errors.append(str(error))
        self.down.clear()
        return self.errors
