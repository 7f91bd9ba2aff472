"""No import circle inside a package of testbed/, no layer importing a higher one, and no module
importing another's private name.

The graph is built statically with `ast` from the source files, nothing is
imported.  Which imports count:

* every `import` and `from ... import` statement of a module, at its top
  level and inside functions, classes, `if` and `try` alike: a deferred
  import is still a dependency, and counting only the top level would let a
  circle pass by hiding one of its edges inside a function;
* except those under `if TYPE_CHECKING:` (they never run);
* `importlib.import_module(...)` with a string is not read.

An edge goes to the module named: `import a.b.c` and `from a.b.c import x`
depend on `a.b.c`, `from a.b import c` on the submodule `a.b.c` when there is
one, else on the package `a.b` (its `__init__.py`).  Parent packages, which
Python executes first, are not edges: otherwise every package whose
`__init__` re-exports its submodules would be in a circle with each of them.

A private name is one with a leading underscore (not a dunder).  A module
imports another's private name when it writes `from a.b import _x` (with
`_x` not a submodule of `a.b`), or reads `m._x` off a module `m` it imported
by name (`import a.b as m`, `from a import b`).  Inside its own module a
private name is free.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import testbed.p4model

PACKAGE = "testbed.p4model"
ROOT = Path(testbed.p4model.__file__).parent


def _modules(root: Path, package: str) -> dict[str, Path]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((package,) + parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import statement below `tree`, skipping `if TYPE_CHECKING:` bodies."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]))
        else:
            yield from _imports(node)


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> nx.DiGraph:
    """module -> module it imports (inside `package`); edge attribute `line`: 'path:lineno'."""
    modules = _modules(root, package)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                if target != package and not target.startswith(package + "."):
                    continue
                module = owner(target)
                if module is not None and module != name and not graph.has_edge(name, module):
                    graph.add_edge(name, module, line=f"{path.relative_to(root.parents[package.count('.')])}:{node.lineno}")
    return graph


def describe_cycle(graph: nx.DiGraph, cycle: list[str]) -> str:
    steps = [f"{a} -> {b}  ({graph.edges[a, b]['line']})" for a, b in zip(cycle, cycle[1:] + cycle[:1])]
    return "\n    ".join(steps)


def cycles_of(graph: nx.DiGraph, most: int = 20) -> list[list[str]]:
    found = []
    for cycle in nx.simple_cycles(graph):
        found.append(cycle)
        if len(found) == most:
            break
    return sorted(found, key=len)


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert "testbed.p4model.pipeline" in graph
    assert graph.has_edge("testbed.p4model.pipeline", "testbed.p4model.v1model")


def test_no_import_cycle_inside_p4model():
    graph = import_graph()
    cycles = cycles_of(graph)
    assert not cycles, "import circles inside testbed/p4model/ (move the code to the module that owns it):\n  " + (
        "\n  ".join(describe_cycle(graph, c) for c in cycles))


def test_a_cycle_is_found(tmp_path):
    """The check itself: a circle through a function-level import fails, TYPE_CHECKING does not."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from pkg.sub import b\n")
    (package / "a.py").write_text("import pkg.sub.b\n")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import a\n"
        "def f():\n    from .. import c\n")
    (package / "c.py").write_text("from .a import x\n")
    graph = import_graph(package, "pkg")
    assert graph.has_edge("pkg.a", "pkg.sub.b") and not graph.has_edge("pkg.a", "pkg.sub")
    cycles = cycles_of(graph)
    assert [set(c) for c in cycles] == [{"pkg.a", "pkg.sub.b", "pkg.c"}]
    assert "pkg/sub/b.py:5" in describe_cycle(graph, cycles[0])


def package_of(module: str, modules: dict[str, Path]) -> str:
    """The package a module belongs to: itself for a package's __init__, else its parent."""
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def package_cycles(graph: nx.DiGraph, modules: dict[str, Path], skip: str) -> list[tuple[str, list[str]]]:
    """(package, circle) for each import circle among the modules of one package, sub-packages
    apart; the packages at or below `skip` are left out (they have their own test)."""
    by_package: dict[str, list[str]] = {}
    for module in graph:
        package = package_of(module, modules)
        if package != skip and not package.startswith(skip + "."):
            by_package.setdefault(package, []).append(module)
    return [(package, cycle) for package, members in sorted(by_package.items())
            for cycle in cycles_of(graph.subgraph(members))]


def test_no_import_cycle_inside_a_package_outside_p4model():
    modules = _modules(TESTBED_ROOT, "testbed")
    graph = import_graph(TESTBED_ROOT, "testbed")
    found = package_cycles(graph, modules, PACKAGE)
    assert not found, "import circles between modules of one package (move the shared piece down, " \
        "to the lower module or a small new one):\n  " + "\n  ".join(
            f"{package}: {describe_cycle(graph, cycle)}" for package, cycle in found)


def test_a_cycle_inside_a_package_is_found(tmp_path):
    """The check itself: a circle inside a package through a function-level import fails; one
    inside the skipped package does not count; a circle needs its modules in one package."""
    package = tmp_path / "pkg"
    for sub in ("tel", "model"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "tel" / "report.py").write_text("from pkg.tel.summary import figures\n")
    (package / "tel" / "summary.py").write_text("def figures():\n    from pkg.tel import report\n")
    (package / "model" / "a.py").write_text("from pkg.model import b\n")
    (package / "model" / "b.py").write_text("from pkg.model import a\n")
    modules = _modules(package, "pkg")
    graph = import_graph(package, "pkg")
    [(where, cycle)] = package_cycles(graph, modules, "pkg.model")
    assert where == "pkg.tel" and set(cycle) == {"pkg.tel.report", "pkg.tel.summary"}
    assert "pkg/tel/summary.py:2" in describe_cycle(graph, cycle)
    assert {w for w, _ in package_cycles(graph, modules, "pkg.none")} == {"pkg.model", "pkg.tel"}


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    base = node.module or ""
    if node.level:
        anchor = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            anchor = anchor.rpartition(".")[0]
        base = f"{anchor}.{base}" if base else anchor
    return base


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(root: Path, package: str) -> list[str]:
    """Every place a module of `package` takes another module's private name, as
    'file:line: a imports _x from b'."""
    modules = _modules(root, package)
    top = root.parents[package.count(".")]
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        imported: dict[str, str] = {}      # a name bound in this module -> the module it is
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        imported[alias.asname] = alias.name
                    elif not alias.asname:
                        head = alias.name.split(".")[0]
                        if head in modules:
                            imported[head] = head
                continue
            base = _absolute(name, is_package, node)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in modules:
                    imported[alias.asname or alias.name] = full
                elif _private(alias.name) and base in modules and base != name:
                    found.append(f"{path.relative_to(top)}:{node.lineno}: {name} imports {alias.name} from {base}")
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in imported:
                owner = ".".join([imported[value.id]] + chain[::-1])
                if owner in modules and owner != name:
                    found.append(f"{path.relative_to(top)}:{node.lineno}: {name} reads {node.attr} of {owner}")
    return sorted(found)


def test_no_module_imports_another_modules_private_name():
    found = private_imports(TESTBED_ROOT, "testbed")
    assert not found, ("private names taken from another module (make the name public where it is "
                       "defined, or move the code to the module that uses it):\n  " + "\n  ".join(found))


def test_a_private_import_is_found(tmp_path):
    """The check itself: `from m import _x` and `m._x` off an imported module fail, even deferred;
    a private submodule, a dunder, a private alias of a public name and a module's own names do not."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "_impl.py").write_text("_x = 1\n")
    (package / "sub" / "low.py").write_text("_x = 1\ny = 2\n__all__ = []\n")
    (package / "high.py").write_text(
        "from pkg.sub import _impl, low\n"
        "import pkg.sub.low as lowmod\n"
        "from pkg.sub.low import y as _y, __all__\n"
        "_own = 1\n"
        "def f():\n"
        "    from .sub.low import _x\n"
        "    return low._x, lowmod._x, _impl._x, low.y, _own\n")
    found = private_imports(package, "pkg")
    assert found == sorted(["pkg/high.py:6: pkg.high imports _x from pkg.sub.low",
                            "pkg/high.py:7: pkg.high reads _x of pkg.sub.low",
                            "pkg/high.py:7: pkg.high reads _x of pkg.sub.low",
                            "pkg/high.py:7: pkg.high reads _x of pkg.sub._impl"])


# The layer order across testbed/: docs/architecture.md's "## Layers" block lists
# every top-level module and package of testbed/ from the bottom up; a module
# may import only from its own layer or one listed above it in that block.  A
# sub-package listed there by its path (`telemetry/live/`) is a layer of its own:
# its package (`telemetry`) is below it, so the rest of the package never imports it.

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
TESTBED_ROOT = ROOT.parent


def documented_layers(text: str) -> list[str]:
    """The layers (`cells`, `errors`, `telemetry.live`, ...) in the order the Layers block lists them."""
    section = text.split("## Layers", 1)[1]
    block = section.split("```", 2)[1]
    names = []
    for line in block.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line.strip():
            entry = line.split()[0]
            if entry.endswith("/") or entry.endswith(".py"):
                names.append(entry.rstrip("/").removesuffix(".py").replace("/", "."))
    return names


def layer_of(module: str, package: str = "testbed", layers=()) -> str:
    """testbed.cells.wire -> cells; testbed.telemetry.live.collector -> telemetry.live when that
    sub-package is one of `layers`; the package's own __init__ is the bottom ('', ranked with the
    first layer: it runs before every module, so it may import that layer and no other)."""
    if module == package:
        return ""
    name = module[len(package) + 1:]
    nested = [layer for layer in layers if "." in layer and (name + ".").startswith(layer + ".")]
    return max(nested, key=len) if nested else name.split(".", 1)[0]


def upward_imports(graph: nx.DiGraph, order: list[str], package: str = "testbed") -> list[str]:
    """Every edge from a layer to one listed after it (higher), as 'a -> b  (file:line)'."""
    rank = {name: i for i, name in enumerate(order)}
    rank[""] = 0  # the package's __init__: with the bottom layer (testbed/compiled/, the loader)
    found = []
    for a, b, data in graph.edges(data=True):
        la, lb = layer_of(a, package, order), layer_of(b, package, order)
        if la != lb and rank[lb] > rank[la]:
            found.append(f"{a} ({la}) -> {b} ({lb})  ({data['line']})")
    return sorted(found)


def test_every_top_level_module_is_in_the_documented_order():
    layers = documented_layers(ARCHITECTURE.read_text())
    order = [name for name in layers if "." not in name]
    for sub in set(layers) - set(order):
        assert (TESTBED_ROOT / sub.replace(".", "/") / "__init__.py").exists(), (
            f"docs/architecture.md's Layers block lists {sub.replace('.', '/')}/, not a package")
        assert layers.index(sub) > layers.index(sub.split(".")[0]), (
            f"{sub.replace('.', '/')}/ must be listed above its package {sub.split('.')[0]}/")
    present = {p.stem if p.suffix == ".py" else p.name for p in TESTBED_ROOT.iterdir()
               if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()}
    assert len(order) == len(set(order)), f"a layer listed twice in docs/architecture.md: {order}"
    assert set(order) == present, (
        f"docs/architecture.md's Layers block and testbed/ differ: missing from the doc "
        f"{sorted(present - set(order))}, not in testbed/ {sorted(set(order) - present)}")


def test_no_layer_imports_a_higher_one():
    order = documented_layers(ARCHITECTURE.read_text())
    graph = import_graph(TESTBED_ROOT, "testbed")
    upward = upward_imports(graph, order)
    assert not upward, ("imports against the layer order of docs/architecture.md (lower never imports "
                        "higher; move the code down or the layer up):\n  " + "\n  ".join(upward))


def test_a_reversed_import_is_found(tmp_path):
    """The check itself: a deferred import from a lower layer to a higher one fails."""
    package = tmp_path / "pkg"
    for sub in ("low", "high"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "high" / "a.py").write_text("from pkg.low import b\n")
    (package / "low" / "b.py").write_text("def f():\n    from pkg.high import a\n")
    graph = import_graph(package, "pkg")
    [up] = upward_imports(graph, ["low", "high"], "pkg")
    assert up.startswith("pkg.low.b (low) -> pkg.high.a (high)") and up.endswith("pkg/low/b.py:2)")
    [down] = upward_imports(graph, ["high", "low"], "pkg")
    assert down.startswith("pkg.high.a (high) -> pkg.low.b (low)") and down.endswith("pkg/high/a.py:1)")
    text = "## Layers\n\n```\ntestbed/\n  low/     the bottom\n             more words/ here\n  high.py  the top\n```\n"
    assert documented_layers(text) == ["low", "high"]


def test_a_sub_layer_is_kept_apart_from_its_package(tmp_path):
    """The check itself: a listed sub-package is above its package, so the package's other
    modules may not import it (the offline analysis never imports live telemetry)."""
    package = tmp_path / "pkg"
    (package / "tel" / "live").mkdir(parents=True)
    for init in (package, package / "tel", package / "tel" / "live"):
        (init / "__init__.py").write_text("")
    (package / "tel" / "live" / "poll.py").write_text("from pkg.tel import summary\n")
    (package / "tel" / "summary.py").write_text("def f():\n    from pkg.tel.live.poll import g\n")
    graph = import_graph(package, "pkg")
    text = "## Layers\n\n```\n  tel/   offline\n  tel/live/  polling\n```\n"
    order = documented_layers(text)
    assert order == ["tel", "tel.live"]
    assert layer_of("pkg.tel.live.poll", "pkg", order) == "tel.live"
    assert layer_of("pkg.tel.summary", "pkg", order) == "tel"
    [up] = upward_imports(graph, order, "pkg")
    assert up.startswith("pkg.tel.summary (tel) -> pkg.tel.live.poll (tel.live)")
    assert up.endswith("pkg/tel/summary.py:2)")
    assert upward_imports(graph, ["tel"], "pkg") == []   # unlisted, it is all one layer
