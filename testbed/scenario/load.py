"""`load_scenario`: read, validate, resolve and pre-expand a scenario file."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.scenario.errors import ScenarioError
from testbed.scenario.messages import schema_errors
from testbed.scenario.model import Scenario, Variant
from testbed.scenario.resolve import resolve
from testbed.scenario.source import SourceMap, load_yaml, parse_yaml
from testbed.scenario.variants import axes, build_variants


@dataclass(frozen=True)
class Origin:
    """Where a scenario came from, kept so variants re-resolve from the raw data."""

    data: dict
    smap: SourceMap
    variants: tuple[Variant, ...]


def load_scenario(path: str) -> Scenario:
    """The resolved base scenario of `path`; every variant is validated too.

    Raises ScenarioError (str: ``file:line: message``) for anything wrong.
    """
    data, smap = load_yaml(str(path))
    return _from_data(data, smap)


def parse_scenario(text: str, file: str = "<string>") -> Scenario:
    """Like load_scenario, from text (tests and tools)."""
    data, smap = parse_yaml(text, file)
    return _from_data(data, smap)


def _from_data(data, smap: SourceMap) -> Scenario:
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise ScenarioError(smap.file, 1, "a scenario is a mapping of fields (topology, "
                            f"workload, ...), but this is {got}")
    errors = schema_errors(data, smap)
    if errors:
        raise errors[0]
    matrix = axes(data, smap)
    base = resolve(data, smap, matrix, ())
    variants = build_variants(data, smap, matrix)
    object.__setattr__(base, "_origin", Origin(data, smap, tuple(variants)))
    return base
