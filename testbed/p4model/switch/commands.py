"""`testbed switch`: run the builtin P4 switch (bmv2 simple_switch_grpc argv).

argparse cannot split at `--` the way bmv2 does, so the subcommand takes
everything after `switch` verbatim and hands it to the switch's own parser
(testbed/p4model/switch/options.py); `testbed switch --help` shows that
parser's help.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "switch", add_help=False, prefix_chars="\x00",
        help="run the builtin P4 switch (same options as simple_switch_grpc; see 'testbed switch --help')",
        description="Run the builtin P4-16 switch.")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from testbed.p4model.switch.main import main

    return main(list(args.argv), prog="testbed switch")
