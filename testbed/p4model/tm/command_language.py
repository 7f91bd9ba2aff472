"""Traffic-manager commands as text lines, without any socket.

One parser/executor serves three callers: the TCP control server (one line
in, one JSON-able reply out), the switch's start-up configuration (argv or a
file, where an error must stop the switch with the line that caused it), and
tests.  Command names and argument orders are bmv2 simple_switch_CLI's where
bmv2 has the command (`set_queue_rate <pps> [port [prio]]`,
`set_queue_depth <packets> [port [prio]]`); the link commands are ours.

Reply shape: {"ok": true, "command": NAME, "result": ...} or
{"ok": false, "command": NAME or null, "error": "one sentence"}.
Blank lines and lines starting with '#' are not commands (execute() returns
None for them), so configuration files may carry comments.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from testbed.errors import TestbedError
from testbed.p4model.tm.model import MAX_PORT, TMConfigError, TrafficManager


class TMCommandError(TestbedError):
    """A control command that could not be parsed or applied."""


@dataclass(frozen=True)
class _Arg:
    name: str
    kind: str  # "int", "number", "port", "prio"
    optional: bool = False


@dataclass(frozen=True)
class _Command:
    name: str
    args: tuple[_Arg, ...]
    help: str
    run: Callable[..., Any]

    @property
    def usage(self) -> str:
        parts = [self.name]
        depth = 0
        for arg in self.args:
            if arg.optional:
                parts.append(f"[<{arg.name}>")
                depth += 1
            else:
                parts.append(f"<{arg.name}>")
        return " ".join(parts) + "]" * depth


def _scope(port: int | None, prio: int | None) -> str:
    if port is None:
        return "all ports"
    return f"port {port}" + ("" if prio is None else f" priority {prio}")


class TMCommands:
    """Parses and executes command lines against one TrafficManager."""

    def __init__(self, tm: TrafficManager) -> None:
        self.tm = tm
        tm_ = tm
        rate, depth, port, prio = (_Arg("rate_pps", "number"), _Arg("nb_pkts", "int"),
                                   _Arg("egress_port", "port", True), _Arg("priority", "prio", True))
        commands = [
            _Command("set_queue_rate", (rate, port, prio),
                     "Set the rate of one / all egress queue(s) in packets/s (0 = unlimited); "
                     "with a port but no priority, every priority queue of that port.",
                     lambda v, p=None, q=None: {"rate_pps": v, "queues": tm_.set_queue_rate(v, p, q),
                                                "scope": _scope(p, q)}),
            _Command("set_queue_depth", (depth, port, prio),
                     "Set the depth of one / all egress queue(s) in packets (tail drop beyond).",
                     lambda v, p=None, q=None: {"depth_packets": v, "queues": tm_.set_queue_depth(v, p, q),
                                                "scope": _scope(p, q)}),
            _Command("set_queue_depth_bytes", (_Arg("nb_bytes", "int"), port, prio),
                     "Set an extra byte limit on one / all egress queue(s) (0 = none).",
                     lambda v, p=None, q=None: {"depth_bytes": v, "queues": tm_.set_queue_depth_bytes(v, p, q),
                                                "scope": _scope(p, q)}),
            _Command("set_queue_weight", (_Arg("quantum_bytes", "int"), port, prio),
                     "Serve one / all egress queue(s) by deficit round robin with this quantum in bytes, "
                     "when no strict-priority queue is eligible (0 = strict priority, the default).",
                     lambda v, p=None, q=None: {"quantum_bytes": v, "queues": tm_.set_queue_weight(v, p, q),
                                                "scope": _scope(p, q)}),
            _Command("set_port_rate_bps", (_Arg("rate_bps", "int"), _Arg("egress_port", "port", True)),
                     "Set the link rate of one / all port(s) in bits/s (0 = unlimited).",
                     lambda v, p=None: {"rate_bps": v, "ports": tm_.set_port_rate_bps(v, p),
                                        "scope": _scope(p, None)}),
            _Command("set_port_delay_us", (_Arg("delay_us", "number"), _Arg("egress_port", "port", True)),
                     "Set the propagation delay of one / all port(s) in microseconds.",
                     lambda v, p=None: {"delay_us": v, "ports": tm_.set_port_delay_us(v, p),
                                        "scope": _scope(p, None)}),
            _Command("set_port_loss", (_Arg("probability", "number"), _Arg("egress_port", "port", True)),
                     "Set the probability that a packet is lost on one / all port(s)' link (0 = none).",
                     lambda v, p=None: {"loss": v, "ports": tm_.set_port_loss(v, p), "scope": _scope(p, None)}),
            _Command("set_pfc", (_Arg("xoff_packets", "int"), _Arg("xon_packets", "int"),
                                 _Arg("priority", "prio", True), _Arg("pool_packets", "int", True)),
                     "Lossless priority (PFC, default 0): pause the port a packet came in on at XOFF of its "
                     "packets queued here, resume at XON; that priority's queues share a pool of packets "
                     "(default: every port's queue limit summed). XOFF 0 turns it off.",
                     lambda x, y, q=0, pool=None: tm_.set_pfc(x, y, q, pool)),
            _Command("queue_stats", (_Arg("egress_port", "port", True),),
                     "Per-queue depth, bytes, limits and counters (all ports or one).",
                     lambda p=None: tm_.queue_stats(p)),
            _Command("tm_stats", (),
                     "Totals, per-port link settings and drops, and the fidelity (lag) measure.",
                     lambda: _tm_summary(tm_)),
            _Command("help", (_Arg("command", "name", True),),
                     "List the commands, or show one command's usage.",
                     self._help),
        ]
        self.commands = {c.name: c for c in commands}

    def register(self, name: str, help_text: str, run: Callable[[], Any]) -> None:
        """A command without arguments from the switch that owns this TM (e.g. its ports' counters)."""
        self.commands[name] = _Command(name, (), help_text, run)

    def _help(self, name: str | None = None) -> Any:
        if name is None:
            return {c.name: c.usage for c in self.commands.values()}
        command = self.commands.get(name)
        if command is None:
            raise TMCommandError(f"help: unknown command {name!r}; known: {', '.join(self.commands)}")
        return {"usage": command.usage, "help": command.help}

    def execute(self, line: str) -> dict | None:
        """Run one line; always returns a reply (errors included), None for blank/comment lines."""
        try:
            words = shlex.split(line, comments=True)
        except ValueError as error:
            return {"ok": False, "command": None, "error": f"cannot split the line {line.strip()!r}: {error}"}
        if not words:
            return None
        name = words[0]
        try:
            return {"ok": True, "command": name, "result": self._run(name, words[1:])}
        except (TMCommandError, TMConfigError) as error:
            return {"ok": False, "command": name, "error": str(error)}

    def _run(self, name: str, words: list[str]) -> Any:
        command = self.commands.get(name)
        if command is None:
            raise TMCommandError(f"unknown command {name!r}; known: {', '.join(self.commands)}")
        required = sum(1 for a in command.args if not a.optional)
        if not required <= len(words) <= len(command.args):
            raise TMCommandError(
                f"{name}: expected {required}..{len(command.args)} argument(s), got {len(words)}; "
                f"usage: {command.usage}"
            )
        values = [self._convert(name, arg, word) for arg, word in zip(command.args, words)]
        try:
            return command.run(*values)
        except TMConfigError as error:
            raise TMCommandError(f"{name}: {error}") from None

    def _convert(self, command: str, arg: _Arg, word: str) -> Any:
        def bad(what: str) -> TMCommandError:
            return TMCommandError(f"{command}: argument <{arg.name}> must be {what}, got {word!r}")

        if arg.kind == "name":
            return word
        if arg.kind == "number":
            try:
                value = int(word)
            except ValueError:
                try:
                    value = float(word)
                except ValueError:
                    raise bad("a number") from None
            if not 0 <= value < float("inf"):
                raise bad("a finite number >= 0")
            return value
        try:
            value = int(word)
        except ValueError:
            raise bad("an integer") from None
        if arg.kind == "port" and not 0 <= value <= MAX_PORT:
            raise bad(f"a port number in 0..{MAX_PORT}")
        if arg.kind == "prio" and not 0 <= value < self.tm.priority_queues:
            raise bad(f"a priority in 0..{self.tm.priority_queues - 1} (this switch has "
                      f"{self.tm.priority_queues} priority queue(s))")
        if value < 0:
            raise bad("an integer >= 0")
        return value

    def apply_all(self, lines: Iterable[str], source: str = "configuration") -> int:
        """Start-up use: run every line, stop at the first error naming its source and line."""
        applied = 0
        for number, line in enumerate(lines, start=1):
            reply = self.execute(line)
            if reply is None:
                continue
            if not reply["ok"]:
                raise TMCommandError(f"{source}:{number}: {reply['error']}")
            applied += 1
        return applied


def _tm_summary(tm: TrafficManager) -> dict:
    stats = tm.stats()
    del stats["queues"]
    return stats
