"""jsonschema errors rewritten as one clear sentence at the right line.

jsonschema reports where in the *data* a check failed; the source map turns
that into a line.  Unknown keys point at the key itself (that is where the
typo is) and suggest the closest allowed name.
"""

from __future__ import annotations

import difflib
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from testbed.scenario.errors import ScenarioError
from testbed.scenario.schema import SCHEMA
from testbed.scenario.source import DataPath, SourceMap

VALIDATOR = Draft202012Validator(SCHEMA)

_TYPE_NAMES = {"integer": "an integer", "number": "a number", "string": "a string",
               "boolean": "true or false", "array": "a list", "object": "a mapping",
               "null": "nothing"}


def show(value: Any) -> str:
    """A value as the user wrote it in YAML."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _type_of(value: Any) -> str:
    for name, kinds in (("true/false", bool), ("an integer", int), ("a number", float),
                        ("a string", str), ("a list", list), ("a mapping", dict)):
        if isinstance(value, kinds):
            return name
    return "nothing" if value is None else type(value).__name__


def schema_errors(data: Any, smap: SourceMap) -> list[ScenarioError]:
    """All schema violations, first line first."""
    found = []
    for error in VALIDATOR.iter_errors(data):
        missing = error.validator == "required"
        found.extend((missing, e) for e in _explain(error, smap))
    # A misspelt key also makes the real key missing: report the typo first.
    found.sort(key=lambda pair: (pair[0], pair[1].line or 0))
    return [e for _, e in found]


def _explain(error: ValidationError, smap: SourceMap) -> list[ScenarioError]:
    path: DataPath = tuple(error.absolute_path)
    value = error.instance
    check = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    if "propertyNames" in error.relative_schema_path:
        key = value
        return [smap.error(path + (key,), f"{show(key)} {schema.get('x-message', 'is not allowed')}",
                           key=True)]
    if check == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        out = []
        for key in [k for k in value if k not in schema.get("properties", {})]:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"allowed: {', '.join(allowed)}"
            where = smap.label(path)
            kind = f" ({value['kind']})" if isinstance(value.get("kind"), str) else ""
            err = smap.error(path + (key,), "x", key=True)
            out.append(ScenarioError(err.file, err.line,
                                     f"unknown key '{key}' in {where}{kind}; {hint}"))
        return out
    if check == "required":
        missing = [k for k in error.validator_value if k not in value]
        return [smap.error(path, f"missing required key '{k}'", key=True) for k in missing[:1]]
    if "x-message" in schema and check in ("type", "pattern", "multipleOf"):
        return [smap.error(path, f"{show(value)} {schema['x-message']}")]
    if check == "enum":
        options = ", ".join(str(o) for o in error.validator_value)
        return [smap.error(path, f"{show(value)} is not one of: {options}")]
    if check == "type":
        wanted = error.validator_value
        wanted = [wanted] if isinstance(wanted, str) else wanted
        names = " or ".join(_TYPE_NAMES.get(w, w) for w in wanted)
        return [smap.error(path, f"expected {names}, got {_type_of(value)} {show(value)}")]
    limits = {
        "minimum": "is below the minimum {}",
        "maximum": "is above the maximum {}",
        "exclusiveMinimum": "must be greater than {}",
        "exclusiveMaximum": "must be less than {}",
        "multipleOf": "must be a multiple of {}",
        "minItems": "needs at least {} item(s)",
        "maxItems": "allows at most {} item(s)",
        "minLength": "must not be empty",
    }
    if check in limits:
        shown = show(value) if not isinstance(value, (list, dict)) else "the list"
        return [smap.error(path, f"{shown} {limits[check].format(error.validator_value)}")]
    if check == "uniqueItems":
        return [smap.error(path, "has repeated items; each must appear once")]
    return [smap.error(path, error.message)]
