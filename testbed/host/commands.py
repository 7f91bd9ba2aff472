"""`testbed host`: run the cell-transport agent inside one (Mininet) host."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed.cells.wire import CELL_UDP_PORT
from testbed.host.options import add_host_options, build_agent, wait_for_epoch


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "host", help="run the host agent (cell transport + workload) in this host",
        description=f"Send this host's part of a workload over UDP/{CELL_UDP_PORT} cells and write records.",
    )
    add_host_options(p)
    p.set_defaults(func=run)
    g = subparsers.add_parser(
        "hosts", help="run the host agents of many hosts in one process (one loop for all)",
        description="Run a group of host agents in one process: each member as `testbed host` with its "
                    "own options, all served by one select loop (testbed.host.group).",
    )
    g.add_argument("--group-file", required=True, type=Path,
                   help='JSON: {"name": N, "realtime_priority": P, "members": [{"netns": PATH or null, '
                        '"argv": [testbed host options]}, ...]}')
    g.set_defaults(func=run_group)


def run(args: argparse.Namespace) -> int:
    from testbed.host.agent import install_sigterm

    agent = build_agent(args)
    agent.prepare()  # the payloads, before 'agent ready': the run sets its epoch after that
    install_sigterm(agent)
    if agent.commands is not None:  # before 'agent ready': a run may signal it from then on
        agent.commands.install()
    if args.epoch_file is not None:
        epoch = wait_for_epoch(args.epoch_file, args.timeout_s, stopped=lambda: agent.stop)
        if epoch is None:  # SIGTERM while waiting (the run ended or `testbed clean`)
            return 0
        agent.epoch = epoch
    result = agent.run()
    if result.exit_code:
        print(f"testbed host {args.name}: stopped by {result.reason} after {args.timeout_s} s with "
              f"{result.acked} messages acknowledged, {result.delivered} delivered; see "
              f"{args.records / (args.name + '.stats.json')}", file=sys.stderr)
    return result.exit_code


def run_group(args: argparse.Namespace) -> int:
    from testbed.host.group import run_group_file

    return run_group_file(args.group_file)
