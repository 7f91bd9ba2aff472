"""Reading p4c/bmv2 STF files into commands.

The format is line oriented: one command per line, `#` starts a comment,
keywords are case-insensitive.  This module only splits lines into typed
commands with their line numbers; meaning (names, widths) is given later
against the program's P4Info (see build.py), so a syntax error and a
semantic error both reach the user as `file.stf:line: message`.

Command forms (p4c's tools/stf grammar plus the simple_switch_CLI
pass-through commands of backends/bmv2/bmv2stf.py):

    add <table> [<priority>] <key>:<value> ... <action>(<param>:<value>, ...) [= <id>]
    setdefault <table> <action>(<param>:<value>, ...)
    packet <port> <hex bytes>
    expect <port> [<hex with * nibbles>][$]
    mirroring_add <session> <port> | mirroring_add_mc <session> <group>
    mirroring_delete <session> | mirroring_get <session>
    mc_mgrp_create <group> | mc_mgrp_destroy <group>
    mc_node_create <rid> <port>... | mc_node_update <node> <port>... | mc_node_destroy <node>
    mc_node_associate <group> <node> | mc_node_dissociate <group> <node>
    counter_read <name> <index> | counter_write <name> <index> <packets> <bytes>
    register_read <name> <index> | register_write <name> <index> <value> | register_reset <name>
    meter_get_rates <name> <index>
    meter_set_rates <name> <index> <rate>:<burst> <rate>:<burst>
    meter_array_set_rates <name> <rate>:<burst> <rate>:<burst>
    wait | remove ... | check_counter ... | no_packet   (ignored, as the reference harness does)

A port is v1model's: 9 bits (0..511, standard_metadata's bit<9>); a larger
one is refused at its line. One comment is read as a setting:
`# priority-queues: N` (1..8) gives the egress priority queues per port the
file needs, as simple_switch's `--priority-queues N` (testbed stf takes it
unless its own --priority-queues is given; file_priority_queues).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from testbed.errors import TestbedError


class StfError(TestbedError):
    """A problem in an STF file, reported as `file.stf:line: message`."""

    def __init__(self, file: str, line: int, message: str) -> None:
        self.file, self.line, self.message = file, line, message
        super().__init__(f"{file}:{line}: {message}")


@dataclass
class ActionText:
    name: str
    args: list          # [(param name, value text)]


@dataclass
class Command:
    """One STF line.  `kind` is the lower-cased keyword; the other fields
    are filled according to it."""

    kind: str
    line: int
    words: list = field(default_factory=list)     # plain arguments (numbers, names)
    table: str = ""
    priority: int | None = None
    keys: list = field(default_factory=list)      # [(key name, value text)]
    action: ActionText | None = None
    port: int = 0
    data: str = ""                                # packet / expectation nibbles
    exact: bool = False                           # expectation ended with '$'


IGNORED = {"wait", "remove", "check_counter", "no_packet"}
_WORD_COMMANDS = {
    # keyword: (minimum, maximum) number of arguments; None = unbounded
    "mirroring_add": (2, 2), "mirroring_add_mc": (2, 2), "mirroring_delete": (1, 1),
    "mirroring_get": (1, 1), "mc_mgrp_create": (1, 1), "mc_mgrp_destroy": (1, 1),
    "mc_node_create": (1, None), "mc_node_update": (1, None), "mc_node_destroy": (1, 1),
    "mc_node_associate": (2, 2), "mc_node_dissociate": (2, 2),
    "counter_read": (2, 2), "counter_write": (4, 4), "counter_reset": (1, 1),
    "register_read": (2, 2), "register_write": (3, 3), "register_reset": (1, 1),
    "meter_get_rates": (2, 2), "meter_set_rates": (3, None), "meter_array_set_rates": (2, None),
}
_NAME = re.compile(r'^"[^"]+"$|^[A-Za-z_$][\w$.\[\]]*$')
_DECIMAL = re.compile(r"^[0-9]+$")


PORT_BITS = 9
PORT_MAX = (1 << PORT_BITS) - 1
_QUEUES = re.compile(r"^\s*#\s*priority-queues:\s*(\S+)\s*$", re.IGNORECASE)


def priority_queues_of(text: str, file: str = "<stf>") -> int | None:
    """The `# priority-queues: N` setting of an STF text, None when it has none."""
    for number, raw in enumerate(text.splitlines(), start=1):
        match = _QUEUES.match(raw)
        if match:
            value = match.group(1)
            if not value.isdigit() or not 1 <= int(value) <= 8:
                raise StfError(file, number, f"priority-queues must be 1..8, not {value!r}")
            return int(value)
    return None


def file_priority_queues(path) -> int | None:
    """The `# priority-queues: N` setting of an STF file (one line if it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return priority_queues_of(handle.read(), str(path))
    except OSError as error:
        raise TestbedError(f"{path}: cannot read the STF file: {error.strerror}") from None


def parse_text(text: str, file: str = "<stf>") -> list:
    """All commands of an STF text, in order."""
    commands = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        keyword, _, rest = line.partition(" ")
        if "\t" in keyword:
            keyword, _, more = keyword.partition("\t")
            rest = more + " " + rest
        commands.append(_parse_line(keyword.lower(), rest.strip(), number, file))
    return commands


def parse_file(path) -> list:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError as exc:
        raise StfError(str(path), 0, f"cannot read: {exc.strerror}") from None
    return parse_text(text, str(path))


def _parse_line(keyword: str, rest: str, line: int, file: str) -> Command:
    def fail(message: str):
        return StfError(file, line, message)

    if keyword in IGNORED:
        return Command(keyword, line, words=rest.split())
    if keyword == "add":
        return _parse_add(rest, line, fail)
    if keyword == "setdefault":
        table, _, call = rest.partition(" ")
        if not table or not call.strip():
            raise fail("setdefault needs a table and an action: setdefault <table> <action>(...)")
        _check_name(table, "table", fail)
        action, tail = _parse_action(call.strip(), fail)
        if tail:
            raise fail(f"unexpected text after the action: {tail!r}")
        return Command("setdefault", line, table=_unquote(table), action=action)
    if keyword in ("packet", "expect"):
        return _parse_packet(keyword, rest, line, fail)
    if keyword in _WORD_COMMANDS:
        words = rest.split()
        low, high = _WORD_COMMANDS[keyword]
        if len(words) < low or (high is not None and len(words) > high):
            wanted = str(low) if low == high else (f"at least {low}" if high is None
                                                   else f"{low} to {high}")
            raise fail(f"{keyword} takes {wanted} arguments, got {len(words)}")
        return Command(keyword, line, words=words)
    raise fail(f"unknown command {keyword!r}")


def _parse_packet(keyword: str, rest: str, line: int, fail) -> Command:
    port_text, _, data = rest.partition(" ")
    if not _DECIMAL.match(port_text or ""):
        raise fail(f"{keyword} needs a decimal port number first, got {port_text!r}")
    data = "".join(data.split())
    exact = data.endswith("$")
    if exact:
        data = data[:-1]
    allowed = "0123456789abcdefABCDEF" + ("*" if keyword == "expect" else "")
    bad = next((c for c in data if c not in allowed), None)
    if bad is not None:
        raise fail(f"invalid {keyword} data: character {bad!r} is not a hex digit"
                   + (" or '*'" if keyword == "expect" else ""))
    if int(port_text) > PORT_MAX:
        raise fail(f"{keyword} port {port_text} is out of range: v1model ports are {PORT_BITS} bits (0..{PORT_MAX})")
    if keyword == "packet":
        if exact:
            raise fail("'$' is only meaningful at the end of an expect line")
        if not data:
            raise fail("packet needs data")
        if len(data) % 2:
            raise fail(f"packet data has an odd number of hex digits ({len(data)})")
    return Command(keyword, line, port=int(port_text), data=data.upper(), exact=exact)


def _parse_add(rest: str, line: int, fail) -> Command:
    paren = rest.find("(")
    if paren < 0:
        raise fail("add needs an action call: add <table> [priority] <key>:<value>... "
                   "<action>(...)")
    head = rest[:paren].split()
    if len(head) < 2:
        raise fail("add needs a table name, then key:value pairs, then the action")
    action_name = head.pop()
    table = head.pop(0)
    _check_name(table, "table", fail)
    priority = None
    if head and _DECIMAL.match(head[0]):
        priority = int(head.pop(0))
    keys = []
    for word in head:
        name, sep, value = word.partition(":")
        if not sep or not name or not value:
            raise fail(f"expected <key>:<value>, got {word!r}")
        keys.append((_unquote(name), value))
    action, tail = _parse_action(action_name + rest[paren:], fail)
    if tail and not re.match(r"^=\s*\S+$", tail):
        raise fail(f"unexpected text after the action: {tail!r}")
    return Command("add", line, table=_unquote(table), priority=priority, keys=keys,
                   action=action)


def _parse_action(text: str, fail):
    """`name(p:v, ...)` at the start of text -> (ActionText, the rest)."""
    name, paren, rest = text.partition("(")
    name = name.strip()
    if not paren or not name:
        raise fail(f"expected an action call name(...), got {text!r}")
    _check_name(name, "action", fail)
    body, close, tail = rest.partition(")")
    if not close:
        raise fail(f"missing ')' after the arguments of {name}")
    args = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        param, sep, value = item.partition(":")
        if not sep or not param.strip() or not value.strip():
            raise fail(f"expected <param>:<value> in the arguments of {name}, got {item!r}")
        args.append((param.strip(), value.strip()))
    if not body.strip() == "" and not args:
        raise fail(f"bad arguments for {name}: {body!r}")
    return ActionText(_unquote(name), args), tail.strip()


def _check_name(name: str, what: str, fail) -> None:
    if not _NAME.match(name):
        raise fail(f"invalid {what} name {name!r}")


def _unquote(name: str) -> str:
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else name
