"""Annotations: raw bodies -> ir.Annotation, and the @name rules.

P4 annotation bodies are unparsed token lists; we keep the raw text and,
when the body is a plain list of literals/names (the common case:
`@name("x")`, `@id(3)`, `@field_list(1, 2)`), the parsed values, because
P4Info and the compiler need them.
"""

from __future__ import annotations

import ast
import re

from testbed.p4model.frontend import ir

_TOKEN = re.compile(r'\s*(?:("(?:\\.|[^"\\])*")|([0-9][0-9A-Za-z_]*)|([A-Za-z_.][A-Za-z0-9_.]*)|(,)|(=))')


def _literal(tok: str):
    from testbed.p4model.frontend.types import parse_int_literal

    try:
        return parse_int_literal(tok, None).value
    except Exception:  # noqa: BLE001 - a body that is not a literal stays raw
        return None


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def parse_values(body: str):
    """`"a", 3, x` -> ["a", 3, "x"]; None when the body is anything else."""
    if not body.strip():
        return []
    values = []
    pos = 0
    expect_value = True
    while pos < len(body):
        if not body[pos:].strip():
            break
        m = _TOKEN.match(body, pos)
        if not m:
            return None
        s, num, ident, comma, eq = m.groups()
        pos = m.end()
        if comma:
            if expect_value:
                return None
            expect_value = True
            continue
        if eq or not expect_value:
            return None
        if s is not None:
            values.append(_unescape(s))
        elif num is not None:
            v = _literal(num)
            if v is None:
                return None
            values.append(v)
        else:
            values.append(ident)
        expect_value = False
    if expect_value and values:
        return None
    return values


def parse_kv(body: str, evaluate: bool = False):
    """`k = v, k2 = "s"` -> {"k": v, "k2": "s"}; None if not key=value pairs.
    evaluate: values may be constant expressions (structured annotations)."""
    result = {}
    for part in _split_commas(body):
        k, eq, v = part.partition("=")
        k = k.strip()
        if not eq or v.startswith("=") or not re.fullmatch(r"[A-Za-z_]\w*", k):
            return None
        if evaluate:
            value = _constant(v)
            vals = [value] if value is not None else parse_values(v)
        else:
            vals = parse_values(v)
        if vals is None or len(vals) != 1:
            return None
        result[k] = vals[0]
    return result


def _evaluated_list(body: str):
    """A structured annotation's expression list, each a constant."""
    values = []
    for part in _split_commas(body):
        value = _constant(part)
        if value is None:
            return parse_values(body)
        values.append(value)
    return values


def _constant(text: str):
    """The value of a constant expression of literals (int, "string",
    true/false) with + - * == != < <= > >= && || ! and parentheses; None for
    anything else."""
    # P4's spellings -> Python's, outside string literals only
    parts = re.split(r'("(?:\\.|[^"\\])*")', text.strip())
    for k in range(0, len(parts), 2):
        code = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", parts[k]))
        code = code.replace("&&", " and ").replace("||", " or ")
        parts[k] = re.sub(r"!(?!=)", " not ", code)
    src = "".join(parts).strip()
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, str, bool)):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.Not)):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else not v
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = ev(n.left), ev(n.right)
            if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, int) and isinstance(b, int)):
                raise ValueError
            return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}[type(n.op)]
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            a, b = ev(n.left), ev(n.comparators[0])
            ops = {ast.Eq: a == b, ast.NotEq: a != b}
            if type(n.ops[0]) in ops:
                return ops[type(n.ops[0])]
            if isinstance(a, int) and isinstance(b, int):
                return {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b}[type(n.ops[0])]
        if isinstance(n, ast.BoolOp):
            vals = [ev(x) for x in n.values]
            return all(vals) if isinstance(n.op, ast.And) else any(vals)
        raise ValueError

    try:
        return ev(tree.body)
    except (ValueError, KeyError, TypeError):
        return None


def _split_commas(body: str):
    parts, cur, in_str = [], [], False
    i = 0
    while i < len(body):
        c = body[i]
        if c == '"':
            in_str = not in_str
        elif c == "\\" and in_str:
            cur.append(body[i:i + 2])
            i += 2
            continue
        if c == "," and not in_str:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def make_annotation(name: str, body: str | None, structured: bool, loc) -> ir.Annotation:
    if body is None:
        return ir.Annotation(name, "", [], None, loc)
    if structured:
        kv = parse_kv(body, evaluate=True)
        args = None if kv is not None else _evaluated_list(body)
        return ir.Annotation(name, body, args, kv, loc, structured=True)
    return ir.Annotation(name, body, parse_values(body), None, loc)


def name_annotation(annotations: list[ir.Annotation]) -> str | None:
    a = ir.find_annotation(annotations, "name")
    if a is not None and a.args and isinstance(a.args[0], str):
        return a.args[0]
    return None


def control_plane_name(annotations: list[ir.Annotation], local: str, prefix: str) -> str:
    """p4c's rule: `@name(".x")` is global (`x`), `@name("x")` replaces the
    local name under the enclosing prefix, else prefix + local name."""
    given = name_annotation(annotations)
    if given is not None:
        if given.startswith("."):
            return given[1:]
        return prefix + given
    return prefix + local
