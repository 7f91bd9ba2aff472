"""Regenerate (or check) the committed P4Info files of the project's programs.

    python -m testbed.p4model.tools.regen_p4info p4src [--check]

Every top-level program `DIR/NAME.p4` (one that instantiates `main`) gets
`DIR/NAME.p4info.txtpb` beside it, so controllers and reviewers can read the
ids without running anything.  With --check nothing is written: the command
exits 1 and names every file that is missing or differs from what the
program generates now (CI runs this so a stale file cannot land).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from testbed.errors import TestbedError

_MAIN = re.compile(r"\)\s*main\s*;")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def is_top_level(path: Path) -> bool:
    """A program that instantiates the `main` package (not an include)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(_MAIN.search(_COMMENTS.sub(" ", text)))


def programs(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.p4") if is_top_level(p))


def p4info_path(program: Path) -> Path:
    return program.with_name(program.stem + ".p4info.txtpb")


def expected(program: Path) -> bytes:
    from testbed.p4model.p4info import generate_file, render

    return render(generate_file(program, include_dirs=[str(program.parent)]), "text")


def run(directory: Path, check: bool, out=sys.stdout, err=sys.stderr) -> int:
    if not directory.is_dir():
        print(f"{directory}: not a directory", file=err)
        return 2
    stale: list[Path] = []
    failed = False
    for program in programs(directory):
        target = p4info_path(program)
        try:
            text = expected(program)
        except TestbedError as e:
            print(f"{program}: {e}", file=err)
            failed = True
            continue
        current = target.read_bytes() if target.exists() else None
        if current == text:
            continue
        if check:
            stale.append(target)
        else:
            target.write_bytes(text)
            print(f"wrote {target}", file=out)
    if stale:
        for target in stale:
            print(f"{target}: stale or missing; run `make p4info`", file=err)
        return 1
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="regen_p4info", description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="folder of P4 programs (e.g. p4src)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming the files that are stale")
    args = parser.parse_args(argv)
    return run(args.directory, args.check)


if __name__ == "__main__":
    sys.exit(main())
