"""Running STF files against the builtin target (`testbed stf`).

Each file gets a fresh switch, as the reference harness starts a fresh
simple_switch per test.  Commands run in file order: control-plane lines go
through the ControlPlane as P4Runtime updates, `packet` lines through
ingress, `expect` lines collect expectations.  Only ports named by a
packet or expect line are observed (they are the harness's interfaces);
outputs to other ports are lost, as on bmv2.  At the end each observed port
is judged (compare.py).

Queues (burst.py): consecutive packet lines are one burst, as bmv2 replays
them back to back.  Their ingress output is held and queued together in
the switch's traffic manager with `priority_queues` queues per port (1 by
default, as simple_switch; a priority with no queue is dropped), then the
queues are drained, highest priority first.  A burst ends at a
control-plane line (the harness sleeps there, so bmv2's queues empty) and
at the end of the file; expect lines and ignored lines do not end one.

A control-plane command the switch refuses is reported as a warning and the
run goes on: simple_switch_CLI prints its error and the harness carries on,
so the packets decide the verdict.  A command that cannot even be expressed
(unknown table, bad number, syntax) fails the file, as it makes the
reference harness raise.

Time: a manual clock.  The harness sleeps one second before the first
packet that follows a control-plane command, and bmv2 reads consecutive
packets about a microsecond apart; the clock does the same, so meters and
timestamps behave as on bmv2 and every run is reproducible.
"""

from __future__ import annotations

import sys
from collections import defaultdict

from testbed.errors import TestbedError
from testbed.p4model.clock import ManualClock
from testbed.p4model.errors import ControlPlaneError, PacketError
from testbed.p4model.stf import build
from testbed.p4model.stf.burst import Burst
from testbed.p4model.stf.parser import IGNORED, StfError, parse_file
from testbed.p4model.stf.result import FileResult, expectations, judge, print_verdict

_CONTROL = {
    "add", "setdefault", "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get",
    "mc_mgrp_create", "mc_mgrp_destroy", "mc_node_create", "mc_node_update", "mc_node_destroy",
    "mc_node_associate", "mc_node_dissociate", "counter_read", "counter_write", "counter_reset",
    "register_read", "register_write", "register_reset", "meter_get_rates", "meter_set_rates",
    "meter_array_set_rates",
}
_CLI_DELAY_NS = 1_000_000_000     # the harness's sleep before a packet that follows a CLI command
_PACKET_GAP_NS = 1_000            # consecutive packets


class StfRun:
    """One STF file against one fresh switch."""

    def __init__(self, path: str, pipeline, p4info, clock: ManualClock, out, verbose: bool,
                 priority_queues: int = 1):
        from testbed.p4model.control_plane import ControlPlane

        self.path = path
        self.pipeline = pipeline
        self.clock = clock
        self.out = out
        self.verbose = verbose
        self.builder = build.Builder(ControlPlane(pipeline, p4info), p4info)
        self.burst = Burst(pipeline, clock, priority_queues)
        self.received = defaultdict(list)
        self.observed: set = set()
        self.warnings = 0
        self._after_cli = True

    def say(self, text: str) -> None:
        print(text, file=self.out)

    def execute(self, commands: list) -> list:
        """Run every command; the per-port problems (empty when the file passes)."""
        self.observed, expected = expectations(commands)
        for cmd in commands:
            if cmd.kind in IGNORED:
                if self.verbose:
                    self.say(f"{self.path}:{cmd.line}: {cmd.kind} ignored (as the reference "
                             f"harness does)")
            elif cmd.kind == "packet":
                self._packet(cmd)
            elif cmd.kind != "expect":
                self._drain()
                self._control(cmd)
        self._drain()
        return judge(self.observed, expected, self.received)

    def _control(self, cmd) -> None:
        handler = getattr(self.builder, cmd.kind, None)
        if cmd.kind not in _CONTROL or handler is None:
            raise StfError(self.path, cmd.line, f"unknown command {cmd.kind!r}")
        self._after_cli = True
        try:
            result = handler(cmd)
        except build.BuildError as exc:
            raise StfError(self.path, cmd.line, str(exc)) from None
        except ControlPlaneError as exc:
            self.warnings += 1
            self.say(f"{self.path}:{cmd.line}: warning: {cmd.kind} refused ({exc.code}): "
                     f"{exc.message}")
            return
        if result and (self.verbose or cmd.kind.endswith(("_read", "_get", "_get_rates"))):
            self.say(f"{self.path}:{cmd.line}: {result}")

    def _packet(self, cmd) -> None:
        self.clock.advance_ns(_CLI_DELAY_NS if self._after_cli else _PACKET_GAP_NS)
        self._after_cli = False
        data = bytes.fromhex(cmd.data)
        if self.verbose:
            self.say(f"{self.path}:{cmd.line}: packet in  port {cmd.port}: {cmd.data}")
        try:
            jobs = self.pipeline.ingress(cmd.port, data)
        except PacketError as exc:
            self.say(f"{self.path}:{cmd.line}: packet dropped by the switch: {exc}")
            return
        self.burst.add(jobs, cmd.line)

    def _drain(self) -> None:
        outputs, drops = self.burst.drain()
        for line, reason in drops:
            self.say(f"{self.path}:{line}: packet dropped by the queues: {reason}")
        for port, out, line in outputs:
            if self.verbose:
                seen = "" if port in self.observed else " (port not observed)"
                self.say(f"{self.path}:{line}: packet out port {port}: "
                         f"{out.hex().upper()}{seen}")
            if port in self.observed:
                self.received[port].append(out)


def run_file(load_switch, path: str, out=sys.stdout, verbose: bool = False,
             priority_queues: int = 1) -> FileResult:
    """One STF file on a fresh switch from `load_switch(clock)` -> (pipeline, p4info)."""
    result = FileResult(str(path), "builtin")
    try:
        commands = parse_file(path)
        clock = ManualClock()
        pipeline, p4info = load_switch(clock)
        run = StfRun(str(path), pipeline, p4info, clock, out, verbose, priority_queues)
        result.problems = run.execute(commands)
        result.received = {port: list(run.received.get(port, [])) for port in run.observed}
    except TestbedError as exc:          # StfError, P4Error, a ControlPlane INTERNAL ...
        result.error = str(exc)
    return result


def run_files(load_switch, paths: list, out=sys.stdout, verbose: bool = False,
              priority_queues: int = 1) -> tuple:
    """Run STF files; `load_switch(clock)` gives a fresh (pipeline, p4info).
    Returns (passed, failed) after printing verdicts and the summary line."""
    passed = failed = 0
    for path in paths:
        result = run_file(load_switch, path, out, verbose, priority_queues)
        print_verdict(result, out)
        passed += result.passed
        failed += not result.passed
    print(f"{passed} passed, {failed} failed", file=out)
    return passed, failed


def builtin_loader(program: str, include=(), defines=None, backend: str = "python"):
    """`load_switch(clock)` for a P4 source file: a fresh pipeline per call
    on `backend` (pipeline.load's choice), the P4Info generated once."""
    from testbed.p4model.p4info import generate
    from testbed.p4model.pipeline import load

    cache = {}

    def load_switch(clock):
        pipeline = load(program, clock=clock, include_dirs=list(include), defines=defines,
                        backend=backend)
        if "p4info" not in cache:
            cache["p4info"] = generate(pipeline.program)
        return pipeline, cache["p4info"]

    return load_switch
