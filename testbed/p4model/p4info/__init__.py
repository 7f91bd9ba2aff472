"""P4Runtime P4Info of a v1model program, with p4c's names and ids.

`generate(program)` builds the message from the front end's IR;
`main(args)` is the `testbed p4info` command; `write`/`read` convert
between the message and its files (.txtpb/.txt text, .json, .bin).
"""

from __future__ import annotations

import sys
from pathlib import Path

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from testbed.errors import TestbedError
from testbed.p4model.errors import P4NoMain
from testbed.p4model.frontend.preprocess import parse_defines
from testbed.p4model.p4info.builder import generate

__all__ = ["generate", "main", "render", "parse", "write", "read", "format_for"]

_TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"


def format_for(path: str | Path | None) -> str:
    """'text' | 'json' | 'binary' from a file name (text when unknown)."""
    suffix = Path(path).suffix.lower() if path else ""
    if suffix == ".json":
        return "json"
    if suffix == ".bin":
        return "binary"
    return "text"


def render(info: p4info_pb2.P4Info, fmt: str = "text") -> bytes:
    if fmt == "json":
        return (json_format.MessageToJson(info, preserving_proto_field_name=False) + "\n").encode()
    if fmt == "binary":
        return info.SerializeToString()
    return (_TEXT_HEADER + text_format.MessageToString(info)).encode()


def parse(data: bytes, fmt: str = "text") -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    if fmt == "json":
        json_format.Parse(data.decode(), info)
    elif fmt == "binary":
        info.ParseFromString(data)
    else:
        text_format.Parse(data.decode(), info)
    return info


def write(info: p4info_pb2.P4Info, path: str | Path) -> None:
    Path(path).write_bytes(render(info, format_for(path)))


def read(path: str | Path) -> p4info_pb2.P4Info:
    return parse(Path(path).read_bytes(), format_for(path))


def generate_file(program_path: str | Path, include_dirs=(), defines=None) -> p4info_pb2.P4Info:
    """Load a program with the front end and generate its P4Info."""
    try:
        from testbed.p4model.frontend import load_program
    except ImportError as e:
        raise TestbedError(f"{program_path}: the P4 front end is not available ({e})") from None

    try:
        program = load_program(program_path, include_dirs=list(include_dirs), defines=defines)
    except P4NoMain as e:
        # p4c warns and writes an empty P4Info for a program without main
        print(f"warning: {e}; the P4Info is empty, as p4c writes it (testbed p4check refuses such a program: "
              "no switch can run it)", file=sys.stderr)
        return p4info_pb2.P4Info()
    try:
        return generate(program)
    except TestbedError:
        raise
    except Exception as e:  # noqa: BLE001 - a generator bug is one line at its P4 construct
        from testbed.p4model.guard import internal_error
        raise internal_error(e, str(program_path)) from e


def main(args) -> int:
    """`testbed p4info PROGRAM.p4 [-o FILE]`: errors are one line on stderr."""
    try:
        info = generate_file(args.program, include_dirs=getattr(args, "include", []) or [],
                             defines=parse_defines(getattr(args, "define", []) or []))
        output = getattr(args, "output", None)
        if output:
            write(info, output)
        else:
            sys.stdout.buffer.write(render(info, "text"))
            sys.stdout.flush()
    except TestbedError as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{getattr(e, 'filename', None) or args.program}: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0
