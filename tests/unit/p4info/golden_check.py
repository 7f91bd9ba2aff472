"""Compare our P4Info with p4c's for a folder of programs (local use).

    P4INFO_GOLDEN_DIR=/tmp/p4golden python -m pytest -q tests/unit/p4info/golden_check.py
    python tests/unit/p4info/golden_check.py /tmp/p4golden

The folder holds `NAME.p4` with p4c's `NAME.p4.p4info.txtpb` beside it (as in
p4c's testdata; public files stay out of the repository).  Outputs written by
older p4c releases are normalised to p4runtime 1.4 fields first
(`initial_default_action_id: N` -> `initial_default_action { action_id: N }`).
The comparison is between protobuf messages; a mismatch prints a unified
diff of the two text forms.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

GOLDEN_DIR = os.environ.get("P4INFO_GOLDEN_DIR")


def golden_pairs(directory: Path) -> list[tuple[Path, Path]]:
    pairs = []
    for program in sorted(directory.glob("*.p4")):
        for candidate in (program.with_name(program.name + ".p4info.txtpb"),
                          program.with_name(program.stem + ".p4info.txtpb")):
            if candidate.exists():
                pairs.append((program, candidate))
                break
    return pairs


def load_golden(path: Path) -> p4info_pb2.P4Info:
    text = path.read_text()
    text = re.sub(r"initial_default_action_id:\s*(\d+)",
                  r"initial_default_action { action_id: \1 }", text)
    return text_format.Parse(text, p4info_pb2.P4Info())


def normalise_release(ours: p4info_pb2.P4Info, theirs: p4info_pb2.P4Info) -> None:
    """Remove what only some p4c releases emit, from both sides: tables'
    initial_default_action (absent before 2024) and core.p4's @corelib."""
    if not any(t.HasField("initial_default_action") for t in theirs.tables):
        for t in ours.tables:
            t.ClearField("initial_default_action")
    for info in (ours, theirs):
        for a in info.actions:
            kept = [x for x in a.preamble.annotations if x != "@corelib"]
            del a.preamble.annotations[:]
            a.preamble.annotations.extend(kept)


def compare(program: Path, golden: Path) -> str | None:
    """None when equal, else a diff (expected = p4c, actual = ours)."""
    from testbed.p4model.p4info import generate_file

    ours = generate_file(program, include_dirs=[str(program.parent)])
    theirs = load_golden(golden)
    normalise_release(ours, theirs)
    if ours == theirs:
        return None
    return "".join(difflib.unified_diff(
        text_format.MessageToString(theirs).splitlines(True),
        text_format.MessageToString(ours).splitlines(True),
        fromfile=f"p4c:{golden.name}", tofile=f"ours:{program.name}"))


def _params():
    if not GOLDEN_DIR:
        return []
    return [pytest.param(p, g, id=p.name) for p, g in golden_pairs(Path(GOLDEN_DIR))]


@pytest.mark.skipif(not GOLDEN_DIR, reason="P4INFO_GOLDEN_DIR not set (local comparison with p4c outputs)")
@pytest.mark.parametrize("program,golden", _params())
def test_matches_p4c(program, golden):
    diff = compare(program, golden)
    assert diff is None, diff


def main(argv: list[str]) -> int:
    directory = Path(argv[0] if argv else GOLDEN_DIR or ".")
    passed = failed = 0
    for program, golden in golden_pairs(directory):
        try:
            diff = compare(program, golden)
        except Exception as e:  # a report tool: show every failure, keep going
            diff = f"{type(e).__name__}: {e}\n"
        if diff is None:
            passed += 1
            print(f"ok   {program.name}")
        else:
            failed += 1
            print(f"FAIL {program.name}\n{diff}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
