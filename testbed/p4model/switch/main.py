"""Start the builtin switch: options -> ports, program, servers -> event loop.

Start-up order (each failure is one sentence on stderr, exit code 1):
logging, TM configuration (`--tm`, `--tm-file`), the program if given,
ports, the TM control server (`--thrift-port`), the P4Runtime server; then
once a TCP connect to the gRPC port succeeds, one line on stdout (and in
the log):  `switch ready: grpc HOST:PORT, control PORT, N ports, BACKEND packet path`.
SIGTERM/SIGINT stop the loop; pcaps are flushed and closed, servers stopped,
exit code 0.
"""

from __future__ import annotations

import logging
import socket
import sys
import time
from pathlib import Path

from testbed.errors import TestbedError
from testbed.p4model.backend.native import NativeBuildError, NativeUnsupported, compiler
from testbed.p4model.clock import MonotonicClock
from testbed.p4model.switch import logs
from testbed.p4model.switch.options import OptionsError, SwitchOptions, parse_args
from testbed.p4model.switch.ports import PortError, RawPort
from testbed.p4model.switch.signals import handle_signals, restore
from testbed.targets import PER_PACKET_LOG_LEVELS

log = logging.getLogger("testbed.p4model.switch")


def wait_accepting(host: str, port: int, deadline_s: float = 10.0) -> bool:
    target = "127.0.0.1" if host in ("0.0.0.0", "::", "[::]") else host
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection((target, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def _tm_lines(opts: SwitchOptions) -> list[tuple[str, list[str]]]:
    out = []
    if opts.tm_file:
        try:
            with open(opts.tm_file, encoding="utf-8") as f:
                out.append((opts.tm_file, f.read().splitlines()))
        except OSError as error:
            raise TestbedError(f"--tm-file {opts.tm_file}: {error.strerror}") from None
    if opts.tm_commands:
        out.append(("--tm", opts.tm_commands))
    return out


def _load(opts: SwitchOptions, clock):
    """The program given at start on the back end --backend asks for (auto: native when it lowers)."""
    from testbed.p4model.pipeline import load

    backend = opts.backend
    if backend == "auto" and opts.log_level in PER_PACKET_LOG_LEVELS:
        log.info("--log-level %s logs every packet: the Python packet path", opts.log_level)
        backend = "python"
    if backend != "python" and compiler() is None:
        if backend == "native":
            raise TestbedError("--backend native needs a C compiler (cc or gcc) and this machine has none")
        backend = "python"
    try:
        return load(opts.program, clock=clock, include_dirs=opts.include_dirs, drop_port=opts.drop_port,
                    backend=backend)
    except (NativeUnsupported, NativeBuildError) as error:  # --backend native only: auto falls back
        raise TestbedError(f"--backend native: {error}") from None


def _engine_mode(opts: SwitchOptions, pipeline) -> bool:
    """Whether the native engine moves the packets: the program given at start is native (the
    engine makes its multicast replicas, clones, resubmits and recirculations), or none is given and
    --backend native asks for it (programs sent later must then lower to C)."""
    if pipeline is not None:
        return getattr(pipeline, "backend", "python") == "native"
    if opts.backend == "native":
        if compiler() is None:
            raise TestbedError("--backend native needs a C compiler (cc or gcc) and this machine has none")
        return True
    if opts.backend == "auto":
        log.info("no program at start: the Python loop (--backend native runs the native engine)")
    return False


def build(opts: SwitchOptions, clock=None, memory_ports: dict[int, str] | None = None,
          logger: logging.Logger | None = None, grpc_workers: int = 32, control_poll_s: float = 0.05):
    """Everything but the loop: (switch, grpc server, control server). Raises TestbedError.
    A fabric process passes its shared clock, the ports that are links in memory and the
    switch's own logger."""
    from testbed.p4model.p4runtime import P4RuntimeServer
    from testbed.p4model.p4runtime.roles import load_role_config
    from testbed.p4model.switch.loop import Switch
    from testbed.p4model.tm.control import ControlServer

    clock = clock or MonotonicClock()
    initial = None
    if opts.program:
        from testbed.p4model.p4info import generate
        from testbed.p4model.pipeline import load

        try:
            with open(opts.program, "rb") as f:
                source = f.read()
        except OSError as error:
            raise TestbedError(f"cannot read the program {opts.program}: {error.strerror}") from None
        pipeline = _load(opts, clock)
        initial = (source, pipeline, generate(pipeline.program))
    native = _engine_mode(opts, initial[1] if initial else None)
    ports: dict = {}
    if native:
        from testbed.p4model.engine.realtime import EnginePort

        ports = {number: EnginePort(number, iface) for number, iface in sorted(opts.interfaces.items())}
    else:
        try:
            for number, iface in sorted(opts.interfaces.items()):
                ports[number] = RawPort(number, iface)
        except PortError as error:
            for p in ports.values():
                p.close()
            raise TestbedError(str(error)) from None
        plain = [p.iface for p in ports.values() if not p.rings]
        if plain:  # works, but each frame then costs a recv()/send() syscall
            log.warning("no PACKET_MMAP rings on %s: plain recv()/send() per frame", ", ".join(plain))
    switch = Switch(ports, clock=clock, cpu_port=opts.cpu_port, drop_port=opts.drop_port,
                    priority_queues=opts.priority_queues, pcap_dir=opts.pcap_dir,
                    memory_ports=memory_ports, logger=logger)
    switch.backend = "native" if native else "python"
    control = grpc_server = None
    try:
        for source_name, lines in _tm_lines(opts):
            switch.tm_commands.apply_all(lines, source=source_name)
        grpc_server = P4RuntimeServer(switch, device_id=opts.device_id, include_dirs=opts.include_dirs,
                                      logger=logger and logger.getChild("runtime"),
                                      roles=load_role_config(opts.role_config))
        switch.server = grpc_server
        if initial is not None:
            grpc_server.load_initial(*initial)
        control = ControlServer(switch.command_queue, host="127.0.0.1" if opts.grpc_host in ("0.0.0.0", "::")
                                else opts.grpc_host, port=opts.thrift_port,
                                tls=opts.tls.ssl_context() if opts.tls else None).start(control_poll_s)
        try:
            grpc_server.start(opts.grpc_addr, workers=grpc_workers, tls=opts.tls)
        except TestbedError:
            raise
        except Exception as error:
            raise TestbedError(f"cannot serve P4Runtime on {opts.grpc_addr}: {error}") from None
    except BaseException:
        if control is not None:
            control.stop()
        switch.close()
        raise
    return switch, grpc_server, control


def main(argv: list[str] | None = None, prog: str = "testbed switch") -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv, prog)
    except OptionsError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    return run(opts, prog)


def run(opts: SwitchOptions, prog: str = "testbed switch") -> int:
    logs.setup(opts.log_level, opts.log_file, opts.log_console)
    try:
        switch, grpc_server, control = build(opts)
    except TestbedError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    loop = switch
    if switch.backend == "native":
        from testbed.p4model.engine.realtime import EngineLoop

        try:
            loop = EngineLoop({"switch": switch}, switch.clock)
        except OSError as error:
            print(f"{prog}: {error}", file=sys.stderr)
            grpc_server.stop(0.2)
            control.stop()
            switch.close()
            return 1
    previous = handle_signals(loop.stop, log)
    sampler = None
    try:
        if not wait_accepting(opts.grpc_host, grpc_server.port):
            print(f"{prog}: the P4Runtime server on port {grpc_server.port} does not accept connections",
                  file=sys.stderr)
            return 1
        host = opts.grpc_host
        line = (f"switch ready: grpc {host}:{grpc_server.port}, control {control.address[1]}, "
                f"{len(switch.ports)} ports, {switch.backend} packet path")
        print(line, flush=True)
        log.info(line)
        if opts.telemetry_file:  # t_s in wall-clock seconds: a run subtracts its epoch
            from testbed.p4model.telemetry import PortSampler, loop_reader

            try:
                sampler = PortSampler(loop_reader({"switch": switch}, loop), Path(opts.telemetry_file), 0.0,
                                      opts.telemetry_interval_s).start()
            except OSError as error:
                print(f"{prog}: --telemetry-file {opts.telemetry_file}: {error.strerror}", file=sys.stderr)
                return 1
        loop.run()
        log.info("stopped: %s", dict(switch.stats))
        log.info("ports: %s", list(switch.port_stats().values()))
        return 0
    finally:
        if sampler is not None:
            sampler.stop()
        grpc_server.stop(0.2)
        control.stop()
        switch.close()
        restore(previous)
