"""Python source writer for the code generator.

Keeps indentation, unique identifiers, and the map from generated line
numbers to P4 source locations (written as `# file:line:col` comments and
kept in `locs` so a run-time exception can be reported at its P4 source).
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"[^0-9A-Za-z_]")


def py_ident(name: str) -> str:
    """A Python identifier made of a P4 name (dots and the like removed)."""
    ident = _IDENT.sub("_", name)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    return ident


class Names:
    """Allocates program-unique Python names with a readable stem."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def new(self, stem: str) -> str:
        stem = py_ident(stem)
        name = stem
        n = 1
        while name in self._used:
            n += 1
            name = f"{stem}_{n}"
        self._used.add(name)
        return name


class Source:
    """Lines of generated Python with indentation and location comments."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.locs: dict[int, object] = {}   # 1-based line -> ir.Loc
        self.level = 0
        self._last_loc = None

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    def loc(self, loc) -> None:
        """Record that the following lines come from `loc`."""
        if loc is None or getattr(loc, "line", 0) == 0:
            return
        self.line(f"# {loc}")
        self.locs[len(self.lines) + 1] = loc

    def indent(self) -> None:
        self.level += 1

    def dedent(self) -> None:
        self.level -= 1

    def blank(self) -> None:
        self.lines.append("")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def loc_for_line(self, lineno: int):
        """The P4 location of generated line `lineno` (the nearest loc
        comment at or above it)."""
        best = None
        for line, loc in self.locs.items():
            if line <= lineno and (best is None or line > best[0]):
                best = (line, loc)
        return best[1] if best else None
