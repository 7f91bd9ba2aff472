"""P4 annotations as P4Info carries them: strings, documentation, @id.

p4c prints an annotation back with its ToP4 pretty-printer: a parsed body
(the annotations p4c knows, e.g. @name, @noWarn, @max_group_size) as its
expressions separated by ", ", an unparsed body as its tokens separated by
single spaces.  @name, @id, @brief and @description never appear as strings
(they become the name, the id and `doc`).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from testbed.p4model.frontend import ir

# Annotations whose bodies p4c parses as an expression list (ParseAnnotations
# and the P4Runtime serializer's own list).  Others stay token lists.
_PARSED = {
    "name", "deprecated", "noWarn", "length", "priority", "match", "synchronous",
    "controller_header", "id", "brief", "description", "max_group_size",
    "max_member_weight", "selector_size_semantics", "p4runtime_translation",
    "field_list",
}
_NOT_STRINGS = {"name", "id", "brief", "description"}

_TOKEN = re.compile(
    r'"(?:\\.|[^"\\])*"'                      # string literal
    r"|[0-9]+[wsWS][0-9A-Za-z_]+"             # width-prefixed literal 8w0x1F
    r"|0[xXbBoOdD][0-9A-Fa-f_]+"              # based literal
    r"|[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9_]*"   # identifier / decimal
    r"|&&&|\.\.|<<|>>|<=|>=|==|!=|&&|\|\||\|\+\||\|-\||\+\+"
    r"|\S"                                    # any other single character
)


def tokens(body: str) -> list[str]:
    """Split an annotation body into P4 tokens (whitespace dropped)."""
    return _TOKEN.findall(body)


def _split_args(toks: list[str]) -> list[list[str]]:
    args: list[list[str]] = [[]]
    depth = 0
    for t in toks:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == "," and depth == 0:
            args.append([])
        else:
            args[-1].append(t)
    return args


def render(annotation: ir.Annotation) -> str:
    """The annotation as p4c's P4Info `annotations` string."""
    text = "@" + annotation.name
    body = (annotation.body or "").strip()
    if annotation.kv is not None and annotation.kv:
        items = ", ".join(f"{k}={_value(v)}" for k, v in annotation.kv.items())
        return f"{text}[{items}]"
    if not body:
        return text
    toks = tokens(body)
    if annotation.name in _PARSED:
        return text + "(" + ", ".join(" ".join(a) for a in _split_args(toks)) + ")"
    return text + "(" + " ".join(toks) + ")"


def _value(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def strings(annotations: Iterable[ir.Annotation], skip: Iterable[str] = ()) -> list[str]:
    """Every annotation except @name/@id/@brief/@description and `skip`."""
    skipped = set(skip) | _NOT_STRINGS
    return [render(a) for a in annotations
            if a.name not in skipped and not a.kv and not a.structured]


def fill_structured(message, annotations: Iterable[ir.Annotation]) -> None:
    """Structured annotations (`@a[...]`) as P4Info StructuredAnnotation
    messages: an expression list or key/value pairs of constants."""
    for a in annotations:
        if not a.structured:
            continue
        sa = message.structured_annotations.add()
        sa.name = a.name
        if a.kv:
            for key, value in a.kv.items():
                kv = sa.kv_pair_list.kv_pairs.add()
                kv.key = key
                _set_expression(kv.value, value)
        elif a.args is not None:
            sa.expression_list.SetInParent()
            for value in a.args:
                _set_expression(sa.expression_list.expressions.add(), value)


def _set_expression(expr, value) -> None:
    if isinstance(value, bool):
        expr.bool_value = value
    elif isinstance(value, int):
        expr.int64_value = value
    else:
        expr.string_value = str(value)


def string_arg(annotation: ir.Annotation) -> Optional[str]:
    """The single string argument of an annotation like @brief("...")."""
    if annotation.args and isinstance(annotation.args[0], str):
        return annotation.args[0]
    toks = tokens(annotation.body or "")
    if len(toks) == 1 and toks[0].startswith('"'):
        return bytes(toks[0][1:-1], "utf-8").decode("unicode_escape")
    return None


def int_arg(annotation: ir.Annotation) -> Optional[int]:
    """The single integer argument of an annotation like @id(5)."""
    if annotation.args and isinstance(annotation.args[0], int) and not isinstance(annotation.args[0], bool):
        return annotation.args[0]
    toks = tokens(annotation.body or "")
    if len(toks) == 1:
        return parse_int(toks[0])
    return None


def parse_int(text: str) -> Optional[int]:
    """A P4 integer literal (8w0x1F, 0b101, 42) as a Python int, or None."""
    m = re.fullmatch(r"(?:([0-9]+)([wsWS]))?(0[xX][0-9A-Fa-f_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)", text)
    if not m:
        return None
    digits = m.group(3).replace("_", "")
    base = {"x": 16, "b": 2, "o": 8, "d": 10}.get(digits[1:2].lower(), 10) if len(digits) > 1 and digits[0] == "0" and digits[1].isalpha() else 10
    return int(digits[2:] if base != 10 or digits[1:2].lower() == "d" else digits, base)


def find(annotations: Iterable[ir.Annotation], name: str) -> Optional[ir.Annotation]:
    for a in annotations:
        if a.name == name:
            return a
    return None


def user_id(annotations: Iterable[ir.Annotation]) -> Optional[int]:
    a = find(annotations, "id")
    return int_arg(a) if a is not None else None


def set_doc(message, annotations: Iterable[ir.Annotation]) -> None:
    """Fill `message.doc` from @brief/@description, only when one exists."""
    brief = description = None
    for a in annotations:
        if a.name == "brief":
            brief = string_arg(a)
        elif a.name == "description":
            description = string_arg(a)
    if brief is None and description is None:
        return
    if brief is not None:
        message.doc.brief = brief
    if description is not None:
        message.doc.description = description


def fill(message, annotations: Iterable[ir.Annotation], skip: Iterable[str] = ()) -> None:
    """Annotations strings and doc of a message that has both fields."""
    annotations = list(annotations)
    message.annotations.extend(strings(annotations, skip))
    if "structured_annotations" in message.DESCRIPTOR.fields_by_name:
        fill_structured(message, annotations)
    set_doc(message, annotations)
