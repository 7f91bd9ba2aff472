"""Rules of the house that hold over the whole repository; each check is also run on a
deliberate violation, so it cannot pass by finding nothing.

* Module docstrings state the model and the rule: no module under testbed/ has a
  docstring over MAX_DOCSTRING_LINES lines.  Detail goes to docs/ or to the
  functions' docstrings.
* Nothing cites a document outside the repository (the founders' two shared
  Markdown files, matched by name) or an issue number ("issue", optionally
  "#", then a digit, any case) in code, tests, docs, scenarios or p4src/.
* Measurement history is kept out of code and tests (every .py and .sh file
  under testbed/, tests/, benchmarks/ and scripts/, the scenarios, and
  docs/architecture.md): no calendar date (ISO, or a month's name with a day
  and a year), and no line that names CI (the word, upper case) next to a
  number.  Dated figures belong in docs/measurements.md and commit messages.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_DOCSTRING_LINES = 40

# Spelled so that this file does not match them itself.
FOREIGN_DOCUMENT = re.compile(r"\b(?:REFERENCE|ARCHITECTURE)\.md\b")
ISSUE_NUMBER = re.compile(r"\bissues?(?:\s+#?|#)\d", re.IGNORECASE)   # not p4c's sample names (issue1566.p4)
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
DATE = re.compile(
    r"\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"
    rf"|\b{_MONTH} \d{{1,2}},? (?:19|20)\d\d\b"
    rf"|\b\d{{1,2}} {_MONTH} (?:19|20)\d\d\b")
CI_WITH_FIGURE = re.compile(r"(?=.*\bCI\b)(?=.*\d)")

CITING_PLACES = ("testbed", "tests", "benchmarks", "scripts", "docs", "scenarios", "p4src",
                 "README.md", "Makefile", "pyproject.toml")
CODE_PLACES = ("testbed", "tests", "benchmarks", "scripts", "scenarios", "docs/architecture.md")
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".p4", ".stf", ".txt", ".cfg", ""}
CODE_SUFFIXES = {".py", ".sh", ".yaml", ".yml", ".md"}


def module_docstring_lines(path: Path) -> int:
    """How many lines the module docstring of `path` spans (0 without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text(), str(path)), clean=False)
    return len(doc.splitlines()) if doc else 0


def long_docstrings(root: Path, most: int = MAX_DOCSTRING_LINES) -> list[str]:
    """'path: N lines' for every module under `root` whose docstring is longer than `most`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        n = module_docstring_lines(path)
        if n > most:
            found.append(f"{path.relative_to(root.parent)}: {n} lines")
    return found


def _files(repo: Path, places, suffixes) -> list[Path]:
    out = []
    for place in places:
        path = repo / place
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out.extend(p for p in sorted(path.rglob("*"))
                       if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts)
    return out


def matching_lines(repo: Path, places, suffixes, *patterns: re.Pattern) -> list[str]:
    """'path:line: text' for each line of the files under `places` matching any pattern."""
    found = []
    for path in _files(repo, places, suffixes):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in patterns):
                found.append(f"{path.relative_to(repo)}:{number}: {line.strip()[:120]}")
    return found


def citations(repo: Path = REPO) -> list[str]:
    return matching_lines(repo, CITING_PLACES, TEXT_SUFFIXES, FOREIGN_DOCUMENT, ISSUE_NUMBER)


def history(repo: Path = REPO) -> list[str]:
    return matching_lines(repo, CODE_PLACES, CODE_SUFFIXES, DATE, CI_WITH_FIGURE)


def test_no_module_docstring_is_over_the_limit():
    found = long_docstrings(REPO / "testbed")
    assert not found, (f"module docstrings over {MAX_DOCSTRING_LINES} lines (state the model and "
                       f"the rule; move detail to docs/ or the functions):\n  " + "\n  ".join(found))


def test_nothing_cites_outside_documents_or_issue_numbers():
    found = citations()
    assert not found, ("references to documents outside the repository or to issue numbers "
                       "(say the fact itself):\n  " + "\n  ".join(found))


def test_no_dated_figures_or_ci_incidents_in_code_and_tests():
    found = history()
    assert not found, ("measurement history in code, tests or docs/architecture.md (move it to "
                       "docs/measurements.md and the commit message):\n  " + "\n  ".join(found))


def test_the_checks_find_deliberate_violations(tmp_path):
    package = tmp_path / "testbed"
    package.mkdir()
    (package / "fits.py").write_text('"""' + "line\n" * 40 + '"""\n')
    (package / "too_long.py").write_text('"""' + "line\n" * 41 + '"""\nx = 1\n')
    assert module_docstring_lines(package / "fits.py") == 40
    assert long_docstrings(package) == ["testbed/too_long.py: 41 lines"]

    (package / "cites.py").write_text(
        "# see /work/shared/" + "REFERENCE" + ".md\n"
        "x = 1  # as in " + "ARCHITECTURE" + ".md\n"
        "# fixed for " + "Issue #" + "13\n"
        "# tissue 4 and issues of 2 kinds are words, not numbers\n")
    found = citations(tmp_path)
    assert [f.split(":")[1] for f in found] == ["1", "2", "3"], found

    (package / "dated.py").write_text(
        "# measured on " + "2026-" + "12-01: 0.98\n"
        "# on Dec 1, " + "2026 the run took 3 s\n"
        "# (1 December " + "2026)\n"
        "# failed in C" + "I at 0.93 of the link\n"
        "# CIDR 10.0.0.0/8 and 2026 hosts are no history\n"
        "# a C" + "I run without a figure is none either\n")
    found = history(tmp_path)
    assert [f.split(":")[1] for f in found if f.startswith("testbed/dated.py")] == \
        ["1", "2", "3", "4"], found
