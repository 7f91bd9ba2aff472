"""Start a fabric process: spec -> switches, servers, links in memory -> one loop.

Start-up order (each failure is one sentence on stderr, exit code 1, and
whatever was already started is stopped): logging, every switch as
`testbed switch` would build it (its ports, TM settings, control server,
P4Runtime server, its own log file), the links in memory, then once every
switch's gRPC port accepts connections one line on stdout:
`fabric ready: N switches, M links in memory, grpc PORT..PORT`.
SIGTERM/SIGINT stop the loop; pcaps are flushed, servers stopped, exit 0.
"""

from __future__ import annotations

import logging
import sys
from concurrent.futures import ThreadPoolExecutor

from testbed.errors import TestbedError
from testbed.p4model.clock import MonotonicClock
from testbed.p4model.fabric.loop import FabricLoop
from testbed.p4model.fabric.spec import FabricSpec, FabricSwitch, load_spec
from testbed.p4model.switch import logs
from testbed.p4model.switch.main import build, wait_accepting
from testbed.p4model.switch.signals import handle_signals, restore

log = logging.getLogger("testbed.p4model.fabric")

GRPC_WORKERS = 8  # per switch; a fabric process serves many


def switch_logger(s: FabricSwitch) -> logging.Logger:
    """The switch's own log (its --log-file and --log-level), apart from the process's."""
    logger = logging.getLogger(f"testbed.p4model.switch.{s.name}")
    logger.propagate = s.options.log_file is None  # no file of its own: into the process's log
    logger.setLevel(logs.LEVELS[s.options.log_level])
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    if s.options.log_file:
        handler = logging.FileHandler(s.options.log_file)
        handler.setFormatter(logging.Formatter(logs.FORMAT, datefmt="%H:%M:%S"))
        logger.addHandler(handler)
    return logger


class Fabric:
    """The running switches of one spec; close() stops whatever was started."""

    def __init__(self, spec: FabricSpec) -> None:
        self.spec = spec
        self.clock = MonotonicClock()
        self.parts: dict[str, tuple] = {}  # name -> (switch, grpc server, control server)
        self.loop: FabricLoop | None = None

    def build(self) -> None:
        for s in self.spec.switches:
            memory = {port: link.name for port, link in s.links.items()}
            try:
                self.parts[s.name] = build(s.options, clock=self.clock, memory_ports=memory,
                                           logger=switch_logger(s), grpc_workers=GRPC_WORKERS)
            except TestbedError as error:
                raise TestbedError(f"switch {s.name}: {error}") from None
        self.loop = FabricLoop({name: part[0] for name, part in self.parts.items()}, self.clock)
        for s in self.spec.switches:
            for port, link in s.links.items():
                if (s.name, port) < (link.peer, link.peer_port):  # each cable once
                    self.loop.connect(s.name, port, link.peer, link.peer_port)

    def close(self) -> None:
        parts = list(self.parts.values())
        with ThreadPoolExecutor(max_workers=8) as pool:  # gRPC's grace period, in parallel
            list(pool.map(lambda part: part[1].stop(0.2), parts))
        for switch, _, control in parts:
            control.stop()
            switch.close()
        self.parts.clear()


def main(argv: list[str] | None = None, prog: str = "testbed fabric") -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(f"usage: {prog} SPEC.json\n\nRun many builtin switches in one process with one event loop; "
              "links between them are in memory (see testbed/p4model/fabric/spec.py for the spec).",
              file=sys.stderr if len(argv) != 1 else sys.stdout)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        spec = load_spec(argv[0])
    except TestbedError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    return run(spec, prog)


def run(spec: FabricSpec, prog: str = "testbed fabric") -> int:
    levels = [s.options.log_level for s in spec.switches]
    logs.setup(min(levels, key=lambda name: logs.LEVELS[name]), spec.log_file, console=False)
    fabric = Fabric(spec)
    previous = {}
    try:
        try:
            fabric.build()
        except TestbedError as error:
            print(f"{prog}: {error}", file=sys.stderr)
            return 1
        loop = fabric.loop
        previous = handle_signals(loop.stop, log)
        for name, (switch, grpc_server, _) in fabric.parts.items():
            host = next(s.options.grpc_host for s in spec.switches if s.name == name)
            if not wait_accepting(host, grpc_server.port):
                print(f"{prog}: switch {name}: the P4Runtime server on port {grpc_server.port} does not "
                      "accept connections", file=sys.stderr)
                return 1
        grpc = sorted(part[1].port for part in fabric.parts.values())
        links = sum(len(s.links) for s in spec.switches) // 2
        line = (f"fabric ready: {len(fabric.parts)} switches, {links} links in memory, "
                f"grpc {grpc[0]}..{grpc[-1]}")
        print(line, flush=True)
        log.info(line)
        loop.run()
        log.info("stopped: %s", loop.stats)
        return 0
    finally:
        fabric.close()
        restore(previous)
