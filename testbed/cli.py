"""The `testbed` command.

Each subcommand lives in its own module exposing `register(subparsers)`;
the module sets `func` on its parser.  Adding a command is one line in
COMMAND_MODULES, so layers stay independent of each other.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys

from testbed import __version__
from testbed.errors import TestbedError

COMMAND_MODULES = [
    "testbed.p4model.commands",
    "testbed.p4model.tm.switch_cli",
    "testbed.p4model.switch.commands",
    "testbed.p4model.fabric.commands",
    "testbed.scenario.commands",
    "testbed.host.commands",
    "testbed.emulation.commands",
    "testbed.telemetry.commands",
    "testbed.simulation.commands",
    "testbed.diagnose.commands",
    "testbed.claims.commands",
    "testbed.plan.commands",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="testbed",
        description=(
            "Network research testbed for AI-training fabrics: P4 switches "
            "(builtin or bmv2), cell spraying vs ECMP, credit-based and ECN-based "
            "transports, fat-tree fabrics in Mininet, YAML scenarios and reports."
        ),
    )
    parser.add_argument("--version", action="version", version=f"testbed {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        check_finite(args)
        return int(args.func(args) or 0)
    except TestbedError as error:
        print(f"testbed: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `testbed show X | head`: the reader left, nothing is wrong
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def check_finite(args: argparse.Namespace) -> None:
    """Every number given on the command line is finite: argparse's float()
    takes `nan` and `inf`, which no option of ours means."""
    for key, value in vars(args).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise TestbedError(f"--{key.replace('_', '-')} {value}: not a finite number")


if __name__ == "__main__":
    sys.exit(main())
