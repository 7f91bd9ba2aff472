"""YAML loading that remembers where every key and value came from.

PyYAML's `compose` keeps a start mark on every node; walking the node tree
ourselves (instead of `safe_load`) lets us map a data path such as
``("fabric", "ecn", "mode")`` back to its line, and reject duplicate keys,
which `safe_load` silently collapses to the last one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from testbed.scenario.errors import ScenarioError

DataPath = tuple[str | int, ...]


@dataclass
class SourceMap:
    """Lines (1-based) of the values and keys of one YAML document.

    `overrides` re-points whole subtrees at another line and label: a
    variant value substituted into the document reports errors at the
    variant's line, under the variant's name.
    """

    file: str
    value_lines: dict[DataPath, int] = field(default_factory=dict)
    key_lines: dict[DataPath, int] = field(default_factory=dict)
    overrides: dict[DataPath, tuple[int, str]] = field(default_factory=dict)

    def with_overrides(self, overrides: dict[DataPath, tuple[int, str]]) -> "SourceMap":
        return SourceMap(self.file, self.value_lines, self.key_lines, dict(overrides))

    def _override(self, path: DataPath) -> tuple[DataPath, int, str] | None:
        for n in range(len(path), 0, -1):
            if path[:n] in self.overrides:
                line, label = self.overrides[path[:n]]
                return path[:n], line, label
        return None

    def line(self, path: DataPath) -> int:
        """Line of the value at `path`, or of its nearest existing ancestor."""
        hit = self._override(path)
        if hit:
            return hit[1]
        for n in range(len(path), -1, -1):
            if path[:n] in self.value_lines:
                return self.value_lines[path[:n]]
        return 1

    def key_line(self, path: DataPath) -> int:
        """Line of the key naming `path` (where the user typed it)."""
        hit = self._override(path)
        if hit:
            return hit[1]
        if path in self.key_lines:
            return self.key_lines[path]
        return self.line(path)

    def label(self, path: DataPath) -> str:
        """A readable name for `path`: ``fabric.ecn.mode``, ``workload[1].kind``."""
        hit = self._override(path)
        if hit:
            base, _, text = hit
            return text + dotted(path[len(base):], leading=True)
        return dotted(path) or "the scenario"

    def error(self, path: DataPath, message: str, key: bool = False) -> ScenarioError:
        line = self.key_line(path) if key else self.line(path)
        return ScenarioError(self.file, line, f"{self.label(path)}: {message}")


def dotted(path: DataPath, leading: bool = False) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out or leading else part)
    return out


def load_yaml(file: str) -> tuple[Any, SourceMap]:
    """Read `file`; return its data and source map, or raise ScenarioError."""
    try:
        with open(file, encoding="utf-8") as stream:
            text = stream.read()
    except OSError as error:
        raise ScenarioError(file, None, f"cannot read the scenario: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise ScenarioError(file, None, f"not UTF-8 text ({error.reason})") from None
    return parse_yaml(text, file)


def parse_yaml(text: str, file: str) -> tuple[Any, SourceMap]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        problem = error.problem or "malformed document"
        if error.context:
            problem += f" ({error.context})"
        raise ScenarioError(file, line, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise ScenarioError(file, None, f"invalid YAML: {error}") from None
    smap = SourceMap(file)
    if root is None:
        return None, smap
    return _Walker(smap).walk(root, ()), smap


class _Walker:
    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.constructor = SafeConstructor()
        self.active: set[int] = set()

    def walk(self, node: Node, path: DataPath) -> Any:
        self.smap.value_lines[path] = node.start_mark.line + 1
        if id(node) in self.active:
            raise ScenarioError(self.smap.file, node.start_mark.line + 1,
                                "a YAML alias refers to itself")
        self.active.add(id(node))
        try:
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                return [self.walk(item, path + (i,)) for i, item in enumerate(node.value)]
            return self._scalar(node)
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: ScalarNode) -> Any:
        try:
            value = self.constructor.construct_object(node, deep=True)
        except yaml.YAMLError as error:
            raise ScenarioError(self.smap.file, node.start_mark.line + 1,
                                f"invalid YAML value: {getattr(error, 'problem', error)}") from None
        if isinstance(value, float) and math.isnan(value):
            # NaN compares false with every bound, so range checks would pass it
            raise ScenarioError(self.smap.file, node.start_mark.line + 1,
                                f"'{node.value}' is not a number that can be used")
        return value

    def _mapping(self, node: MappingNode, path: DataPath) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self._scalar(key_node)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise ScenarioError(self.smap.file, line,
                                        f"duplicate key '{key}' (first at line {seen[key]})")
                seen[key] = line
        try:
            self.constructor.flatten_mapping(node)  # resolve `<<: *anchor` merges
        except yaml.MarkedYAMLError as error:
            raise ScenarioError(self.smap.file, node.start_mark.line + 1,
                                f"invalid YAML merge: {error.problem}") from None
        out: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise ScenarioError(self.smap.file, key_node.start_mark.line + 1,
                                    "mapping keys must be plain words, not lists or mappings")
            key = self._scalar(key_node)
            if not isinstance(key, str):
                key = str(key).lower() if isinstance(key, bool) else str(key)
            self.smap.key_lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = self.walk(value_node, path + (key,))
        return out
