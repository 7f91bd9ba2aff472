"""`testbed fabric SPEC.json`: many builtin switches in one process (see main.py)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fabric", help="run many builtin switches in one process, links between them in memory",
        description="Run the switches of a fabric spec (JSON; testbed/p4model/fabric/spec.py) in one "
                    "process with one event loop. The emulation writes the spec; `testbed run` starts it.")
    parser.add_argument("spec", metavar="SPEC.json")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from testbed.p4model.fabric.main import main

    return main([args.spec], prog="testbed fabric")
