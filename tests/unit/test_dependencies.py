"""Every third-party package the code imports is declared in pyproject.toml, pinned.

The rule, checked statically (nothing is imported but what a name resolves to):

* every `import` of testbed/ and benchmarks/, at any depth (deferred imports
  and `try: import` included), whose top-level name is neither the standard
  library (sys.stdlib_module_names) nor the repository's own code, comes from
  an installed distribution that [project].dependencies names; tests/ may also
  use [project.optional-dependencies].dev;
* a namespace package (`google`) is resolved by its second name
  (`google.protobuf` -> protobuf, `google.rpc` -> googleapis-common-protos);
* every dependency is pinned `name==version`, the version installed here;
* the one exception is Mininet, which PyPI does not carry with its mnexec:
  it comes from the distribution (apt), and pyproject.toml must say so.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FROM_THE_DISTRIBUTION = {"mininet"}     # apt install mininet; pyproject.toml's comment says why


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_names(root: Path) -> dict[str, str]:
    """Dotted name of every absolute import below `root` -> 'file:line' of its first use."""
    names: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found = [node.module]
            else:
                continue
            for name in found:
                names.setdefault(name, f"{path.relative_to(root.parent)}:{node.lineno}")
    return names


def local_names(*roots: Path) -> set[str]:
    """Top-level names the repository's own files provide (packages, and the test helpers that
    pytest puts on the path)."""
    names = {"testbed", "benchmarks", "tests"}
    for root in roots:
        names |= {p.stem for p in root.rglob("*.py")}
    return names


def distributions_of(name: str, index: dict[str, list[str]]) -> set[str]:
    """The installed distributions a dotted import name comes from (empty: none)."""
    parts = name.split(".")
    candidates = index.get(parts[0], [])
    if len(candidates) > 1 and len(parts) > 1:
        prefix = f"{parts[0]}/{parts[1]}"
        narrowed = [d for d in candidates
                    if any(str(f) == prefix + ".py" or str(f).startswith(prefix + "/")
                           for f in (metadata.distribution(d).files or ()))]
        candidates = narrowed or candidates
    return {normalise(d) for d in candidates}


def pins(requirements: list[str]) -> tuple[dict[str, str], list[str]]:
    """{normalised name: pinned version} and the requirements that are not `name==version`."""
    pinned, loose = {}, []
    for requirement in requirements:
        m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][^;\s]*)\s*", requirement)
        if m:
            pinned[normalise(m.group(1))] = m.group(2)
        else:
            loose.append(requirement)
    return pinned, loose


def undeclared(names: dict[str, str], declared: set[str], local: set[str],
               index: dict[str, list[str]]) -> list[str]:
    """One line per imported third-party name no declared distribution provides."""
    problems = []
    for name, where in sorted(names.items()):
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top == "__future__" or top in local \
                or top in FROM_THE_DISTRIBUTION:
            continue
        dists = distributions_of(name, index)
        if not dists:
            problems.append(f"{where}: imports {name}, which no installed distribution provides")
        elif not dists & declared:
            problems.append(f"{where}: imports {name} (from {', '.join(sorted(dists))}), "
                            f"not declared in pyproject.toml")
    return problems


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_every_dependency_is_pinned_to_the_installed_version():
    pinned, loose = pins(_project()["dependencies"] + _project()["optional-dependencies"]["dev"])
    assert not loose, f"pyproject.toml requirements not pinned as name==version: {loose}"
    wrong = {name: (version, metadata.version(name)) for name, version in pinned.items()
             if metadata.version(name) != version}
    assert not wrong, f"pinned version != installed version (pinned, installed): {wrong}"


def test_every_imported_package_is_declared():
    index = metadata.packages_distributions()
    project = _project()
    runtime, _ = pins(project["dependencies"])
    dev, _ = pins(project["optional-dependencies"]["dev"])
    local = local_names(REPO / "testbed", REPO / "benchmarks", REPO / "tests")
    problems = []
    for place in ("testbed", "benchmarks"):
        problems += undeclared(imported_names(REPO / place), set(runtime), local, index)
    problems += undeclared(imported_names(REPO / "tests"), set(runtime) | set(dev), local, index)
    assert not problems, "\n  ".join(["imports pyproject.toml does not declare:"] + problems)


def test_mininet_is_said_to_come_from_the_distribution():
    text = (REPO / "pyproject.toml").read_text()
    assert "apt install mininet" in text
    assert normalise("mininet") not in pins(_project()["dependencies"])[0]


def test_the_check_finds_an_undeclared_import_and_a_loose_pin(tmp_path):
    code = tmp_path / "testbed"
    code.mkdir()
    (code / "a.py").write_text("import json\nimport yaml\n\ndef f():\n    import pytest\n"
                               "    from google.protobuf import text_format\n"
                               "    import no_such_module_anywhere\n")
    index = metadata.packages_distributions()
    problems = undeclared(imported_names(code), {"pyyaml", "protobuf"}, {"testbed"}, index)
    assert [p.split(": ", 1)[0] for p in problems] == ["testbed/a.py:7", "testbed/a.py:5"]
    assert "no_such_module_anywhere, which no installed distribution" in problems[0]
    assert "(from pytest), not declared" in problems[1]
    assert distributions_of("google.rpc.status_pb2", index) == {"googleapis-common-protos"}
    assert pins(["numpy>=2", "rich==15.0.0", "pandas"]) == ({"rich": "15.0.0"}, ["numpy>=2", "pandas"])
