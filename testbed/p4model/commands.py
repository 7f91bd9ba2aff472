"""`testbed` subcommands of the builtin P4 target's programs: p4info, stf, p4check.

The three take a P4 program with the same -I/-D options and drive the whole
target (front end, compiler, pipeline; P4Info; the STF runner), so they are
registered here, in p4model, rather than one in each package: importing
p4info/ or stf/ to register a subcommand would load protobuf, the P4Info
builder and the control plane into every `testbed` process, host agents
included (0.18 s each, measured here).  Implementations live in their packages
(p4info.main, stf.main, pipeline.load) and are imported only when the
command runs.  The other subcommands of the target sit in the packages they
drive: tm/switch_cli.py (switch-cli) and switch/commands.py (switch).
"""

from __future__ import annotations

import argparse
import sys

from testbed.errors import TestbedError


def _add_program_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                        help="extra directory for #include lookups")
    parser.add_argument("-D", "--define", action="append", default=[], metavar="NAME[=VALUE]",
                        help="preprocessor definition, as for p4c")


def _queues(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 8:
        raise argparse.ArgumentTypeError(f"{value} is not in 1..8")
    return value


def _run_p4info(args) -> int:
    from testbed.p4model.p4info import main

    return main(args)


def _run_stf(args) -> int:
    from testbed.p4model.stf import main

    return main(args)


def _run_check(args) -> int:
    from testbed.p4model.frontend.preprocess import parse_defines
    from testbed.p4model.pipeline import load

    failed = 0
    for program in args.programs:  # each program: a bad one is one line and the next is still checked
        try:
            load(program, include_dirs=args.include, defines=parse_defines(args.define))
        except TestbedError as error:
            print(f"testbed: {error}", file=sys.stderr)
            failed += 1
            continue
        except OSError as error:
            print(f"testbed: {getattr(error, 'filename', None) or program}: {error.strerror or error}",
                  file=sys.stderr)
            failed += 1
            continue
        print(f"{program}: ok")
    return 1 if failed else 0


def register(sub) -> None:
    p4info = sub.add_parser(
        "p4info", help="write the P4Runtime P4Info of a P4 program (p4c-compatible names and ids)",
        description="Generate the P4Info of a v1model program as p4c would, in text protobuf.")
    p4info.add_argument("program", help="P4-16 source file")
    p4info.add_argument("-o", "--output", help="write here instead of standard output (.txtpb, .json or .bin)")
    _add_program_options(p4info)
    p4info.set_defaults(func=_run_p4info)

    stf = sub.add_parser(
        "stf", help="run p4c/bmv2-format STF tests on the builtin target, on bmv2, or on both",
        description="Load PROGRAM on the target and run each STF file against it; prints "
                    "expected-vs-received diffs and ends with 'N passed, N failed'. "
                    "--target both runs each file on both targets and also prints where "
                    "their outputs differ (exit status 1 on any failure or difference).")
    stf.add_argument("program", help="P4-16 source file")
    stf.add_argument("tests", nargs="+", help="STF test files")
    stf.add_argument("-v", "--verbose", action="store_true", help="print every packet in and out")
    stf.add_argument("--target", choices=("builtin", "bmv2", "both"), default="builtin",
                     help="builtin (default), bmv2 (p4c-bm2-ss and simple_switch on PATH), or both")
    stf.add_argument("--priority-queues", type=_queues, default=None, metavar="N",
                     help="egress priority queues per port, as simple_switch's option (default: what each "
                          "file's '# priority-queues: N' line asks for, else 1; a packet whose priority is "
                          ">= N is dropped)")
    stf.add_argument("--backend", choices=("auto", "native", "python"), default="auto",
                     help="builtin target's pipeline: native (C, compiled and cached), python "
                          "(the reference), or auto (default: native when a C compiler is "
                          "present and the program lowers, else python, saying why in one line)")
    _add_program_options(stf)
    stf.set_defaults(func=_run_stf)

    check = sub.add_parser(
        "p4check", help="load P4 programs on the builtin target and report each one's first error",
        description="Parse, type-check and compile each program; print 'ok' or one error line for each "
                    "(exit 1 when any failed). A program with no main instance is an error here: a switch "
                    "cannot run it (testbed p4info only warns, as p4c does).")
    check.add_argument("programs", nargs="+", help="P4-16 source files")
    _add_program_options(check)
    check.set_defaults(func=_run_check)
