"""The broken-scenario corpus: each file yields exactly one `file:line: message`.

Every file in broken/ starts with ``# expect: LINE: FRAGMENT``; the error
must name that file and line and contain the fragment, and nothing else may
be printed (no traceback, no second line).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import cli
from testbed.scenario import ScenarioError, load_scenario

BROKEN = sorted((Path(__file__).parent / "broken").glob("*.yaml"))
EXPECT = re.compile(r"^# expect: (\d+): (.+)$")


def expectation(path: Path) -> tuple[int, str]:
    match = EXPECT.match(path.read_text().splitlines()[0])
    assert match, f"{path.name} must start with '# expect: LINE: FRAGMENT'"
    return int(match.group(1)), match.group(2)


def test_corpus_is_substantial():
    assert len(BROKEN) >= 30


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_one_clear_line(path, capsys):
    line, fragment = expectation(path)
    assert cli.main(["validate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{path}:{line}: "), lines[0]
    assert fragment in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("path", BROKEN[:3], ids=lambda p: p.stem)
def test_error_object_carries_file_and_line(path):
    line, _ = expectation(path)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert (caught.value.file, caught.value.line) == (str(path), line)
    assert str(caught.value) == f"{path}:{line}: {caught.value.message}"


def test_whole_corpus_through_the_real_command():
    """One process, every file: one line per file on stderr, exit status 1."""
    proc = subprocess.run([sys.executable, "-m", "testbed.cli", "validate", *map(str, BROKEN)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == len(BROKEN)
    for path, line in zip(BROKEN, lines):
        assert line.startswith(f"{path}:{expectation(path)[0]}: ")
