"""The fabric process's spec: which switches it runs and which of their links are in memory.

A JSON file, written by the emulation (or by hand):

    {"log_file": "logs/fabric0.log",                  (optional: the process's own log)
     "telemetry_file": "telemetry/fabric0.jsonl",     (optional: every port sampled into it,
     "telemetry_interval_s": 0.1,                       testbed/p4model/telemetry.py)
     "switches": [
       {"name": "edge1",
        "argv": ["-i", "1@edge1-eth1", "--device-id", "3", "--thrift-port", "9093", "--no-p4",
                 "--", "--grpc-server-addr", "127.0.0.1:50003", "--priority-queues", "2"],
        "links": {"3": {"peer": "agg1", "peer_port": 1, "name": "edge1-eth3"}}},
       ...]}

`argv` is exactly what `testbed switch` (and bmv2's simple_switch_grpc) takes, so one
switch's options mean the same in both processes; `links` are its ports whose far end is a
port of another switch of the same spec (`name` is what that port's pcap files are called).
Every problem is one sentence naming the switch and the field.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field

from testbed.p4model.switch.options import MAX_PORT, OptionsError, SwitchOptions, add_arguments, from_namespace


class SpecError(OptionsError):
    """A fabric spec that cannot be run."""


@dataclass(frozen=True)
class MemoryLink:
    port: int
    peer: str
    peer_port: int
    name: str


@dataclass
class FabricSwitch:
    name: str
    options: SwitchOptions
    links: dict[int, MemoryLink] = field(default_factory=dict)


@dataclass
class FabricSpec:
    switches: list[FabricSwitch]
    log_file: str | None = None
    telemetry_file: str | None = None
    telemetry_interval_s: float = 0.1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one sentence, not a usage dump and exit
        raise OptionsError(message)


def _switch_options(name: str, argv) -> SwitchOptions:
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise SpecError(f"switch {name}: argv must be a list of strings")
    argv = [a for a in argv if a != "--"]  # bmv2's split; the options are accepted on both sides
    parser = _Parser(prog=name, add_help=False)
    add_arguments(parser)
    try:
        return from_namespace(parser.parse_args(argv))
    except OptionsError as error:
        raise SpecError(f"switch {name}: {error}") from None


def _links(name: str, options: SwitchOptions, raw) -> dict[int, MemoryLink]:
    if not isinstance(raw, dict):
        raise SpecError(f"switch {name}: links must be an object of port -> {{peer, peer_port, name}}")
    links = {}
    for key, link in raw.items():
        where = f"switch {name}: link on port {key}"
        if not str(key).isdigit() or not 0 <= int(key) <= MAX_PORT:
            raise SpecError(f"{where}: the port must be a number in 0..{MAX_PORT}")
        port = int(key)
        if port in options.interfaces:
            raise SpecError(f"{where}: the port is also an interface (-i {port}@{options.interfaces[port]})")
        if port in (options.cpu_port, options.drop_port):
            raise SpecError(f"{where}: the port is the switch's {'CPU' if port == options.cpu_port else 'drop'} port")
        if not isinstance(link, dict) or set(link) != {"peer", "peer_port", "name"}:
            raise SpecError(f"{where}: expected exactly the keys peer, peer_port, name")
        if not isinstance(link["peer"], str) or not isinstance(link["name"], str) \
                or not isinstance(link["peer_port"], int) or isinstance(link["peer_port"], bool):
            raise SpecError(f"{where}: peer and name must be strings, peer_port a number")
        links[port] = MemoryLink(port, link["peer"], link["peer_port"], link["name"])
    return links


def parse_spec(data) -> FabricSpec:
    """A decoded JSON spec -> FabricSpec; SpecError naming the first problem."""
    if not isinstance(data, dict) or not isinstance(data.get("switches"), list) or not data["switches"]:
        raise SpecError("the spec must be an object with a non-empty list 'switches'")
    unknown = set(data) - {"switches", "log_file", "telemetry_file", "telemetry_interval_s"}
    if unknown:
        raise SpecError(f"unknown key(s) in the spec: {', '.join(sorted(unknown))}")
    switches: dict[str, FabricSwitch] = {}
    for index, raw in enumerate(data["switches"]):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            raise SpecError(f"switches[{index}] must be an object with a name")
        name = raw["name"]
        if set(raw) - {"name", "argv", "links"}:
            raise SpecError(f"switch {name}: unknown key(s) {', '.join(sorted(set(raw) - {'name', 'argv', 'links'}))}")
        if name in switches:
            raise SpecError(f"switch {name} is given twice")
        options = _switch_options(name, raw.get("argv", []))
        if options.telemetry_file is not None:
            raise SpecError(f"switch {name}: --telemetry-file is the fabric's telemetry_file, not a switch's")
        switches[name] = FabricSwitch(name, options, _links(name, options, raw.get("links", {})))
    _check_shared(switches)
    log_file = data.get("log_file")
    if log_file is not None and not isinstance(log_file, str):
        raise SpecError("log_file must be a path")
    telemetry_file = data.get("telemetry_file")
    if telemetry_file is not None and not isinstance(telemetry_file, str):
        raise SpecError("telemetry_file must be a path")
    interval = data.get("telemetry_interval_s", 0.1)
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval > 0:
        raise SpecError(f"telemetry_interval_s must be a number of seconds above 0, got {interval!r}")
    return FabricSpec(list(switches.values()), log_file, telemetry_file, float(interval))


def _check_shared(switches: dict[str, FabricSwitch]) -> None:
    """What the switches share: no port or interface twice, every link with its other end."""
    taken: dict[tuple[str, int], str] = {}
    interfaces: dict[str, str] = {}
    for s in switches.values():
        o = s.options
        for what, port in (("gRPC port", o.grpc_port), ("control port", o.thrift_port)):
            if port and ("tcp", port) in taken:
                raise SpecError(f"switch {s.name}: {what} {port} is also {taken[('tcp', port)]}")
            taken[("tcp", port)] = f"switch {s.name}'s {what}"
        for iface in o.interfaces.values():
            if iface in interfaces:
                raise SpecError(f"switch {s.name}: interface {iface} is also a port of {interfaces[iface]}")
            interfaces[iface] = s.name
        for link in s.links.values():
            peer = switches.get(link.peer)
            where = f"switch {s.name}: link on port {link.port}"
            if peer is None:
                raise SpecError(f"{where}: its peer {link.peer} is not in this spec")
            back = peer.links.get(link.peer_port)
            if back is None or (back.peer, back.peer_port) != (s.name, link.port):
                raise SpecError(f"{where}: {link.peer} port {link.peer_port} is not linked back to it")


def load_spec(path: str) -> FabricSpec:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as error:
        raise SpecError(f"cannot read the fabric spec {path}: {error.strerror}") from None
    except ValueError as error:
        raise SpecError(f"{path}: not JSON ({error})") from None
    try:
        return parse_spec(data)
    except SpecError as error:
        raise SpecError(f"{path}: {error}") from None
