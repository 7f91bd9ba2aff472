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
from pathlib import Path

from testbed.errors import TestbedError
from testbed.p4model.clock import MonotonicClock
from testbed.p4model.fabric.loop import FabricLoop
from testbed.p4model.fabric.spec import FabricSpec, FabricSwitch, load_spec
from testbed.p4model.switch import logs
from testbed.p4model.switch.main import build, wait_accepting
from testbed.p4model.switch.signals import handle_signals, restore

log = logging.getLogger("testbed.p4model.fabric")

GRPC_WORKERS = 8  # per switch; a fabric process serves many
CONTROL_POLL_S = 0.5  # each switch's TM control thread wakes this often (40 switches: 80 wake-ups/s)


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
        self.loop = None  # a FabricLoop, or an EngineLoop when the native engine moves the packets

    def build(self) -> None:
        backends = {s.options.backend for s in self.spec.switches}
        if len(backends) > 1:
            raise TestbedError(f"the switches of one fabric process must share one --backend, got "
                               f"{', '.join(sorted(backends))}")
        for s in self.spec.switches:
            memory = {port: link.name for port, link in s.links.items()}
            try:
                self.parts[s.name] = build(s.options, clock=self.clock, memory_ports=memory,
                                           logger=switch_logger(s), grpc_workers=GRPC_WORKERS,
                                           control_poll_s=CONTROL_POLL_S)
            except TestbedError as error:
                raise TestbedError(f"switch {s.name}: {error}") from None
        switches = {name: part[0] for name, part in self.parts.items()}
        paths = {sw.backend: name for name, sw in switches.items()}
        if len(paths) > 1:   # engine ports and the Python loop's ports cannot share one loop
            raise TestbedError(f"switch {paths['python']} runs the Python packet path and switch "
                               f"{paths['native']} the native engine: one fabric process runs one (see "
                               "the switches' logs for why)")
        if set(paths) == {"native"}:
            from testbed.p4model.engine.realtime import EngineLoop

            try:
                self.loop = EngineLoop(switches, self.clock)
            except OSError as error:
                raise TestbedError(f"the native engine: {error}") from None
        else:
            self.loop = FabricLoop(switches, self.clock)
        for s in self.spec.switches:
            for port, link in s.links.items():
                if (s.name, port) < (link.peer, link.peer_port):  # each cable once
                    self.loop.connect(s.name, port, link.peer, link.peer_port)

    def close(self) -> None:
        """Every switch's servers stopped at once (gRPC's grace, the control thread's poll), then
        its ports and pcaps closed."""
        parts = list(self.parts.values())
        with ThreadPoolExecutor(max_workers=max(1, min(64, 2 * len(parts)))) as pool:
            stops = [lambda server=part[1]: server.stop(0.2) for part in parts] + [part[2].stop for part in parts]
            list(pool.map(lambda stop: stop(), stops))
        for switch, _, _ in parts:
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
    sampler = None
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
        backend = next(iter(fabric.parts.values()))[0].backend if fabric.parts else "python"
        line = (f"fabric ready: {len(fabric.parts)} switches, {links} links in memory, "
                f"grpc {grpc[0]}..{grpc[-1]}, {backend} packet path")
        print(line, flush=True)
        log.info(line)
        if spec.telemetry_file:  # t_s in wall-clock seconds: the run subtracts its epoch
            from testbed.p4model.telemetry import PortSampler, loop_reader

            switches = {name: part[0] for name, part in fabric.parts.items()}
            try:
                sampler = PortSampler(loop_reader(switches, loop), Path(spec.telemetry_file), 0.0,
                                      spec.telemetry_interval_s).start()
            except OSError as error:
                print(f"{prog}: telemetry_file {spec.telemetry_file}: {error.strerror}", file=sys.stderr)
                return 1
        loop.run()
        log.info("stopped: %s", loop.stats)
        return 0
    finally:
        if sampler is not None:
            sampler.stop()
        fabric.close()
        restore(previous)
