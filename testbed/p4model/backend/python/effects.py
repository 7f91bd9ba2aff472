"""What a piece of IR can do besides computing a value.

The generator writes a call with out/inout arguments as statements placed
before the expression that uses its value.  P4 evaluates operands left to
right and the arms of `?:`, `&&`, `||` only when taken, so the generator
must know which sub-expressions have side effects (to evaluate the
operands before them first, and to keep conditional arms conditional),
and which callees can `exit` (their out/inout arguments are still copied
out when they do).
"""

from __future__ import annotations

import dataclasses

from testbed.p4model.frontend import ir

_PURE_BUILTINS = {"isValid", "minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"}
_CALLS = (ir.FunctionCall, ir.ActionCall, ir.SubApply, ir.TableApply,
          ir.ExternMethodCall, ir.ExternFunctionCall)


def nodes(x):
    """Every expression, statement and switch case inside x (x included),
    without entering the declarations they refer to."""
    stack = [x]
    while stack:
        n = stack.pop()
        if isinstance(n, (list, tuple)):
            stack.extend(reversed(n))
            continue
        if isinstance(n, dict):
            stack.extend(n.values())
            continue
        if not isinstance(n, (ir.Expr, ir.Stmt, ir.SwitchCase)):
            continue
        yield n
        for f in dataclasses.fields(n):
            if f.name in ("type", "loc"):
                continue
            v = getattr(n, f.name)
            if isinstance(v, (ir.Expr, ir.Stmt, ir.SwitchCase, list, tuple, dict)):
                stack.append(v)


def has_effects(e) -> bool:
    """True when evaluating e can change state (a call of any kind other
    than the pure built-ins)."""
    if e is None:
        return False
    for n in nodes(e):
        if isinstance(n, _CALLS):
            return True
        if isinstance(n, ir.BuiltinCall) and n.name not in _PURE_BUILTINS:
            return True
    return False


class ExitAnalysis:
    """Which actions and controls can end in `exit` (directly, or through
    an action, table or sub-control they call); memoised per declaration."""

    def __init__(self) -> None:
        self._memo: dict[int, bool] = {}

    def action(self, a: ir.ActionDecl) -> bool:
        return self._decl(a, lambda: a.body)

    def control(self, c) -> bool:
        if not isinstance(c, ir.ControlDecl):
            return False
        return self._decl(c, lambda: c.apply)

    def _decl(self, d, body) -> bool:
        key = id(d)
        if key not in self._memo:
            self._memo[key] = False          # recursion guard (P4 forbids recursion)
            self._memo[key] = self.body(body())
        return self._memo[key]

    def table(self, t: ir.TableDecl) -> bool:
        refs = list(t.actions) + ([t.default_action] if t.default_action else [])
        return any(self.action(r.action) for r in refs)

    def body(self, x) -> bool:
        for n in nodes(x):
            if isinstance(n, ir.Exit):
                return True
            if isinstance(n, ir.ActionCall) and self.action(n.action):
                return True
            if isinstance(n, ir.TableApply) and self.table(n.table):
                return True
            if isinstance(n, ir.SubApply) and self.control(getattr(n.instance.type, "decl", None)):
                return True
        return False


def sees_outer_state(a: ir.ActionDecl) -> bool:
    """True when an action's body reads or writes variables other than its
    own parameters and locals (the enclosing control's), directly or
    through another action: then an argument passed by reference could
    be changed behind the parameter's back."""
    own = {id(p) for p in a.params}
    own.update(id(n.var) for n in nodes(a.body) if isinstance(n, ir.VarDeclStmt))
    for n in nodes(a.body):
        if isinstance(n, ir.VarRef) and id(n.target) not in own:
            return True
        if isinstance(n, ir.ActionCall):
            return True
    return False
