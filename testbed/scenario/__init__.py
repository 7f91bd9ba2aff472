"""Scenario files: YAML -> typed, validated, frozen `Scenario` objects, and
the variant matrix expanded into one resolved scenario per run.

A bad file raises `ScenarioError`, whose text is ``file:line: message``.
The fields and their defaults are documented in scenarios/README.md.
"""

from testbed.scenario.errors import ScenarioError
from testbed.scenario.load import load_scenario, parse_scenario
from testbed.scenario.model import (
    Credits, Dcqcn, Derived, Ecn, Fabric, Fault, LinkParams, Links, Phase, Scenario, Switch,
    Tita, Transport, Variant, VariantAxis,
)
from testbed.scenario.variants import expand_variants

__all__ = [
    "Credits", "Dcqcn", "Derived", "Ecn", "Fabric", "Fault", "LinkParams", "Links", "Phase",
    "Scenario", "ScenarioError", "Switch", "Tita", "Transport", "Variant", "VariantAxis",
    "expand_variants", "load_scenario", "parse_scenario",
]
