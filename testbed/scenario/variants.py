"""The variant matrix: `variants: {load_balancing: [ecmp, spray]}` becomes
one fresh run per combination.

Each value is substituted into the raw document and the whole document is
validated and resolved again, so a variant value is checked exactly like
the field it replaces and derived defaults (BDP-relative buffers, the ECN
mode that follows `cc`) follow it.  Errors point at the variant's line.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

from testbed.scenario.errors import ScenarioError
from testbed.scenario.feasibility import duplicate_variant_values
from testbed.scenario.messages import schema_errors
from testbed.scenario.model import Scenario, Variant, VariantAxis
from testbed.scenario.resolve import resolve
from testbed.scenario.source import DataPath, SourceMap

SHORT_NAMES: dict[str, DataPath] = {
    "load_balancing": ("fabric", "load_balancing"),
    "cc": ("transport", "cc"),
    "pfc": ("fabric", "pfc", "enabled"),
    "credit_order": ("transport", "tita", "credit_order"),
    "overcommit": ("transport", "tita", "overcommit"),
    "target": ("switch", "target"),
    "cell_size": ("fabric", "cell_size"),
    "seed": ("seed",),
}
MAX_VARIANTS = 256
_NOT_VARIABLE = ("name", "variants")


def axes(data: dict, smap: SourceMap) -> tuple[VariantAxis, ...]:
    """The variant axes of a schema-valid document, with their target paths checked."""
    out: list[VariantAxis] = []
    duplicate_variant_values(data, smap)
    for key, values in data.get("variants", {}).items():
        path = SHORT_NAMES.get(key) or tuple(int(p) if p.isdigit() else p for p in key.split("."))
        if path[0] in _NOT_VARIABLE:
            raise smap.error(("variants", key), f"'{path[0]}' cannot vary between runs", key=True)
        for other in out:
            shorter = min(len(other.path), len(path))
            if other.path[:shorter] == path[:shorter]:
                raise smap.error(("variants", key), f"sets the same field as '{other.key}'",
                                 key=True)
        out.append(VariantAxis(key, path, tuple(values)))
    total = 1
    for axis in out:
        total *= len(axis.values)
    if total > MAX_VARIANTS:
        raise smap.error(("variants",), f"expands to {total} runs; at most {MAX_VARIANTS} "
                         "are allowed per scenario", key=True)
    return tuple(out)


def value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def build_variants(data: dict, smap: SourceMap, matrix: tuple[VariantAxis, ...]) -> list[Variant]:
    """Resolve every combination; raise the first error at its variant's line."""
    if not matrix:
        return []
    indexed = [list(enumerate(axis.values)) for axis in matrix]
    variants = []
    for combo in itertools.product(*indexed):
        assignments = tuple((axis.key, value) for axis, (_, value) in zip(matrix, combo))
        name = ",".join(f"{k}={value_text(v)}" for k, v in assignments)
        doc = copy.deepcopy(data)
        doc.pop("variants", None)
        overrides = {}
        for axis, (i, value) in zip(matrix, combo):
            _assign(doc, axis, value, smap)
            overrides[axis.path] = (smap.line(("variants", axis.key, i)),
                                    f"variants.{axis.key}[{i}]")
        vmap = smap.with_overrides(overrides)
        errors = schema_errors(doc, vmap)
        try:
            if errors:
                raise errors[0]
            scenario = resolve(doc, vmap, (), assignments)
        except ScenarioError as error:
            if error.message.startswith("variants."):
                raise
            raise ScenarioError(error.file, error.line,
                                f"{error.message} (in variant {name})") from None
        variants.append(Variant(name, assignments, scenario))
    return variants


def _assign(doc: dict, axis: VariantAxis, value: Any, smap: SourceMap) -> None:
    node: Any = doc
    for depth, part in enumerate(axis.path[:-1]):
        nxt = axis.path[depth + 1]
        if isinstance(node, list):
            if not isinstance(part, int) or part >= len(node):
                raise smap.error(("variants", axis.key), f"{'.'.join(map(str, axis.path[:depth]))} "
                                 f"has no item {part} (it has {len(node)})", key=True)
            node = node[part]
            continue
        if not isinstance(node, dict) or isinstance(part, int):
            raise smap.error(("variants", axis.key), f"'{part}' does not name a field here",
                             key=True)
        if part not in node:
            node[part] = [] if isinstance(nxt, int) else {}
        node = node[part]
    last = axis.path[-1]
    if isinstance(node, list):
        if not isinstance(last, int) or last >= len(node):
            raise smap.error(("variants", axis.key), f"the list has no item {last}", key=True)
    elif isinstance(last, int) or not isinstance(node, dict):
        raise smap.error(("variants", axis.key), f"'{last}' does not name a field here", key=True)
    node[last] = copy.deepcopy(value)


def expand_variants(scenario: Scenario) -> list[Variant]:
    """One `Variant` per combination of the matrix; a single 'base' variant without one."""
    origin = scenario._origin
    if origin is not None and origin.variants:
        return list(origin.variants)
    if scenario.variants:
        raise ScenarioError(scenario.file, None,
                            "this scenario was not loaded with load_scenario; cannot expand it")
    return [Variant("base", (), scenario)]
