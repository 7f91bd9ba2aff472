"""Command line of the builtin switch, shaped like bmv2's simple_switch_grpc.

Why the same shape: one Mininet node class starts either target by
swapping the binary, so every option simple_switch_grpc users pass must mean
the same thing here.  bmv2 splits its argv at `--`: generic options before
it (`-i PORT@IFACE`, `--device-id`, `--thrift-port`, logging, `--pcap`,
`--no-p4`, the program), target options after it (`--grpc-server-addr`,
`--cpu-port`, `--priority-queues`, `--drop-port`).  We accept the target
options on either side of `--` (so a hand-typed command line need not
remember the split) and reject unknown ones with a one-line message.

Differences from bmv2, all additive: the program is P4-16 source (.p4), not
p4c's JSON; `--thrift-port` is the traffic manager's text control port
(tm.control), also spelled `--control-port`; `--tm CMD` (repeatable) and
`--tm-file FILE` configure queues, link rates and delays at start-up with
the switch-cli command language.

Who may program the switch (bmv2's flags where it has them): `--grpc-server-ssl`
with `--grpc-server-cert`/`--grpc-server-key` serves P4Runtime over TLS, and
`--grpc-server-with-client-auth` with `--grpc-server-cacert` takes only clients
whose certificate that CA signed; the TM control port then uses the same TLS
files.  `--p4rt-role-config FILE` gives the P4Runtime server its roles
(p4model/p4runtime/roles.py).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path

from testbed.errors import TestbedError
from testbed.p4model.tls import ServerTls

LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
DEFAULT_GRPC_ADDR = "0.0.0.0:9559"
DEFAULT_THRIFT_PORT = 9090
DEFAULT_DROP_PORT = 511
MAX_PORT = 510
_IFACE = re.compile(r"^[^\s/:]{1,15}$")  # Linux IFNAMSIZ - 1, no slash


class OptionsError(TestbedError):
    """A switch command line that cannot be used (one sentence, the bad value)."""


@dataclass
class SwitchOptions:
    interfaces: dict[int, str] = field(default_factory=dict)  # port -> interface name
    device_id: int = 0
    thrift_port: int = DEFAULT_THRIFT_PORT
    log_file: str | None = None
    log_level: str = "warn"
    log_console: bool = False
    pcap_dir: str | None = None
    no_p4: bool = False
    program: str | None = None
    grpc_host: str = "0.0.0.0"
    grpc_port: int = 9559
    cpu_port: int | None = None
    priority_queues: int = 1
    drop_port: int = DEFAULT_DROP_PORT
    tm_commands: list[str] = field(default_factory=list)
    tm_file: str | None = None
    include_dirs: list[str] = field(default_factory=list)
    backend: str = "auto"  # auto, native or python: see testbed/p4model/switch/backend.py
    telemetry_file: str | None = None  # every port sampled into it (testbed/p4model/telemetry.py)
    telemetry_interval_s: float = 0.1
    tls: ServerTls | None = None  # both control ports over TLS (p4model/tls.py)
    role_config: str | None = None  # the P4Runtime server's roles (p4model/p4runtime/roles.py)

    @property
    def grpc_addr(self) -> str:
        return f"{self.grpc_host}:{self.grpc_port}"


def build_parser(prog: str = "testbed switch") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "The builtin P4-16 switch: a v1model program on raw-socket ports with a traffic "
            "manager and a P4Runtime server. Same argv shape as bmv2's simple_switch_grpc: "
            "common options, an optional program, then `--` and target options."),
        epilog="Example: testbed switch -i 1@veth0 -i 2@veth1 prog.p4 -- --grpc-server-addr 127.0.0.1:9559",
    )
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                        help="attach network interface IFACE as switch port PORT (repeatable)")
    parser.add_argument("--device-id", type=int, default=0, metavar="N",
                        help="P4Runtime device id (default 0, as bmv2)")
    parser.add_argument("--thrift-port", "--control-port", dest="thrift_port", type=int,
                        default=DEFAULT_THRIFT_PORT, metavar="N",
                        help="TCP port of the traffic-manager control interface (testbed switch-cli); "
                             f"default {DEFAULT_THRIFT_PORT}; 0 picks a free port")
    parser.add_argument("--log-file", metavar="PATH", help="write the log to PATH")
    parser.add_argument("-L", "--log-level", choices=LOG_LEVELS, default=None,
                        help="log level (default warn; debug logs one line per packet)")
    parser.add_argument("--log-console", action="store_true", help="log to standard error")
    parser.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR",
                        help="write <iface>_in.pcap and <iface>_out.pcap per port into DIR (default .)")
    parser.add_argument("--no-p4", action="store_true",
                        help="start without a program and wait for SetForwardingPipelineConfig")
    parser.add_argument("program", nargs="?", help="P4-16 source (.p4) to load at start")
    # target options (bmv2 takes these after `--`; we accept them anywhere)
    parser.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDR, metavar="HOST:PORT",
                        help=f"P4Runtime gRPC address (default {DEFAULT_GRPC_ADDR}; port 0 picks a free port)")
    parser.add_argument("--cpu-port", type=int, default=None, metavar="N",
                        help="port whose packets are PacketIn/PacketOut on the P4Runtime stream")
    parser.add_argument("--priority-queues", type=int, default=1, metavar="N",
                        help="egress queues per port, 1..8 (default 1)")
    parser.add_argument("--drop-port", type=int, default=DEFAULT_DROP_PORT, metavar="N",
                        help=f"egress_spec value that drops (default {DEFAULT_DROP_PORT})")
    parser.add_argument("--tm", action="append", default=[], metavar="CMD",
                        help="traffic-manager command at start-up, e.g. 'set_queue_rate 1000 1' (repeatable)")
    parser.add_argument("--tm-file", metavar="FILE", help="traffic-manager commands, one per line")
    parser.add_argument("--backend", choices=("auto", "native", "python"), default="auto",
                        help="packet path: native (the program compiled to C and the native engine: "
                             "needs a C compiler and a program the native back end supports), python "
                             "(the reference pipeline and loop), or auto (native when the program given "
                             "at start lowers to C and the log level is not debug or trace, else python; "
                             "default)")
    parser.add_argument("--telemetry-file", metavar="PATH",
                        help="append every port's counters, drops, ECN marks and queue peak as JSON lines "
                             "to PATH every --telemetry-interval seconds (testbed's telemetry.jsonl format, "
                             "t_s in wall-clock seconds)")
    parser.add_argument("--telemetry-interval", type=float, default=0.1, metavar="S",
                        help="seconds between telemetry samples (default 0.1)")
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                        help="extra #include directory for the program")
    parser.add_argument("--grpc-server-ssl", action="store_true",
                        help="serve P4Runtime (and the TM control port) over TLS; needs --grpc-server-cert "
                             "and --grpc-server-key")
    parser.add_argument("--grpc-server-cert", metavar="PEM", help="the switch's TLS certificate")
    parser.add_argument("--grpc-server-key", metavar="PEM", help="the switch's TLS private key")
    parser.add_argument("--grpc-server-cacert", metavar="PEM",
                        help="the CA certificate whose client certificates the switch takes")
    parser.add_argument("--grpc-server-with-client-auth", action="store_true",
                        help="refuse any client without a certificate that --grpc-server-cacert signed")
    parser.add_argument("--p4rt-role-config", metavar="FILE",
                        help="P4Runtime roles (YAML or JSON): read-only and table-limited roles")


def _port(value: int, what: str) -> int:
    if not 0 <= value <= MAX_PORT:
        raise OptionsError(f"{what} {value} is outside 0..{MAX_PORT}")
    return value


def parse_interface(text: str) -> tuple[int, str]:
    """'1@veth0' -> (1, 'veth0')."""
    port_text, sep, iface = text.partition("@")
    if not sep or not port_text.strip().isdigit() or not _IFACE.match(iface):
        raise OptionsError(f"-i {text!r}: expected PORT@IFACE, e.g. 1@s1-eth1")
    return _port(int(port_text), f"-i {text!r}: port"), iface


def parse_grpc_addr(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise OptionsError(f"--grpc-server-addr {text!r}: expected HOST:PORT with a port in 0..65535")
    return host, int(port)


def from_namespace(ns: argparse.Namespace) -> SwitchOptions:
    """Validate parsed arguments into SwitchOptions (raises OptionsError)."""
    opts = SwitchOptions()
    seen_ifaces: dict[str, int] = {}
    for text in ns.interface:
        port, iface = parse_interface(text)
        if port in opts.interfaces:
            raise OptionsError(f"port {port} is given twice (-i {port}@{opts.interfaces[port]} and -i {text})")
        if iface in seen_ifaces:
            raise OptionsError(f"interface {iface} is given twice (ports {seen_ifaces[iface]} and {port})")
        opts.interfaces[port] = iface
        seen_ifaces[iface] = port
    if ns.device_id < 0 or ns.device_id >= 1 << 64:
        raise OptionsError(f"--device-id {ns.device_id} must be in 0..2^64-1")
    opts.device_id = ns.device_id
    if not 0 <= ns.thrift_port < 65536:
        raise OptionsError(f"--thrift-port {ns.thrift_port} must be in 0..65535")
    opts.thrift_port = ns.thrift_port
    opts.log_file = ns.log_file
    opts.log_console = ns.log_console
    opts.log_level = ns.log_level or ("info" if ns.log_file or ns.log_console else "warn")
    opts.pcap_dir = ns.pcap
    opts.no_p4 = ns.no_p4
    if ns.no_p4 and ns.program:
        raise OptionsError(f"--no-p4 and a program ({ns.program}) were both given; choose one")
    opts.program = ns.program
    opts.grpc_host, opts.grpc_port = parse_grpc_addr(ns.grpc_server_addr)
    if ns.cpu_port is not None:
        opts.cpu_port = _port(ns.cpu_port, "--cpu-port")
        if opts.cpu_port in opts.interfaces:
            raise OptionsError(f"--cpu-port {opts.cpu_port} is also an interface port "
                               f"(-i {opts.cpu_port}@{opts.interfaces[opts.cpu_port]})")
    if not 1 <= ns.priority_queues <= 8:
        raise OptionsError(f"--priority-queues {ns.priority_queues} must be in 1..8")
    opts.priority_queues = ns.priority_queues
    if not 0 <= ns.drop_port <= 511:
        raise OptionsError(f"--drop-port {ns.drop_port} must be in 0..511")
    opts.drop_port = ns.drop_port
    if opts.drop_port in opts.interfaces:
        raise OptionsError(f"--drop-port {opts.drop_port} is also an interface port")
    opts.tm_commands = list(ns.tm)
    opts.tm_file = ns.tm_file
    opts.include_dirs = list(ns.include)
    opts.backend = ns.backend
    if not ns.telemetry_interval > 0:
        raise OptionsError(f"--telemetry-interval {ns.telemetry_interval:g} must be above 0 seconds")
    opts.telemetry_file, opts.telemetry_interval_s = ns.telemetry_file, ns.telemetry_interval
    opts.tls = _tls(ns)
    opts.role_config = ns.p4rt_role_config
    return opts


def _tls(ns: argparse.Namespace) -> ServerTls | None:
    files = (ns.grpc_server_cert, ns.grpc_server_key, ns.grpc_server_cacert)
    if not ns.grpc_server_ssl:
        if any(files) or ns.grpc_server_with_client_auth:
            raise OptionsError("--grpc-server-cert, --grpc-server-key, --grpc-server-cacert and "
                               "--grpc-server-with-client-auth need --grpc-server-ssl")
        return None
    if not ns.grpc_server_cert or not ns.grpc_server_key:
        raise OptionsError("--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key")
    if ns.grpc_server_with_client_auth and not ns.grpc_server_cacert:
        raise OptionsError("--grpc-server-with-client-auth needs --grpc-server-cacert (the CA of the clients)")
    return ServerTls(Path(ns.grpc_server_cert), Path(ns.grpc_server_key),
                     Path(ns.grpc_server_cacert) if ns.grpc_server_cacert else None,
                     require_client_auth=ns.grpc_server_with_client_auth)


def parse_args(argv: list[str], prog: str = "testbed switch") -> SwitchOptions:
    """bmv2-shaped argv -> SwitchOptions; exits with usage (code 2) on syntax errors,
    raises OptionsError for values that parse but cannot be used."""
    argv = list(argv)
    if "--" in argv:  # bmv2's split; target options are accepted on both sides
        cut = argv.index("--")
        argv = argv[:cut] + argv[cut + 1:]
    return from_namespace(build_parser(prog).parse_args(argv))
