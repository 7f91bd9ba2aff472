"""`testbed switch-cli`: the builtin switch's simple_switch_CLI equivalent.

`testbed switch-cli --switch HOST:PORT set_queue_rate 1000 1` sends one
command and prints its result as JSON; without a command it reads commands
from stdin (interactive with a prompt on a terminal), printing each reply
and going on after errors, as simple_switch_CLI does.
"""

from __future__ import annotations

import argparse
import json
import sys

from testbed.p4model.tm.control import (
    DEFAULT_CONTROL_PORT,
    SwitchControlClient,
    SwitchControlError,
    parse_address,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "switch-cli",
        help="configure and read a builtin switch's queues (set_queue_rate, set_queue_depth, ...)",
        description=(
            "Send traffic-manager commands to a running builtin switch's control port. "
            "Commands: set_queue_rate <pps> [port [prio]], set_queue_depth <packets> [port [prio]], "
            "set_queue_depth_bytes <bytes> [port [prio]], set_port_rate_bps <bps> [port], "
            "set_port_delay_us <us> [port], queue_stats [port], tm_stats, help. "
            "Without a command, read commands from stdin."
        ),
    )
    parser.add_argument("--switch", default=f"127.0.0.1:{DEFAULT_CONTROL_PORT}", metavar="HOST:PORT",
                        help=f"the switch's control port (default 127.0.0.1:{DEFAULT_CONTROL_PORT})")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="how long to wait for the switch (default 10 s)")
    parser.add_argument("words", nargs=argparse.REMAINDER, metavar="COMMAND [ARGS...]")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    host, port = parse_address(args.switch)
    with SwitchControlClient(host, port, timeout_s=args.timeout) as client:
        if args.words:
            reply = client.request(" ".join(args.words))
            if not reply.get("ok"):
                raise SwitchControlError(f"switch {host}:{port}: {reply.get('error')}")
            print(json.dumps(reply.get("result"), indent=2))
            return 0
        return _interactive(client)


def _interactive(client: SwitchControlClient) -> int:
    tty = sys.stdin.isatty()
    failures = 0
    while True:
        try:
            line = input("switch-cli> ") if tty else sys.stdin.readline()
        except EOFError:
            break
        if not tty and not line:
            break
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line in ("quit", "exit", "EOF"):
            break
        reply = client.request(line)
        if reply.get("ok"):
            print(json.dumps(reply.get("result"), indent=2))
        else:
            failures += 1
            print(f"error: {reply.get('error')}", file=sys.stderr if not tty else sys.stdout)
    return 1 if failures and not tty else 0
