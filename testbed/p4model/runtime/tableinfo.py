"""A table as p4c's front end leaves it, for every consumer of the IR.

Our IR keeps a table as written; p4c's front end rewrites two things the
control plane sees, and the P4Info generator, the compiled pipeline and so
the control plane must agree on them:

* a table without `default_action` gets `NoAction` as its default, and
  `NoAction` joins the actions list annotated `@defaultonly` when the
  program did not list it (so P4Info shows a DEFAULT_ONLY action ref and an
  initial default action, and a P4Runtime read of the default entry returns
  NoAction);
* a key `h.isValid()` without `@name` is named `h.$valid$` (the name bmv2
  gives the validity bit).

Both functions are pure and cheap; callers use them once at load time.
"""

from __future__ import annotations

from testbed.p4model.frontend import ir

_VALID_CALL = ".isValid()"
_VALID_NAME = ".$valid$"


def action_refs(table: ir.TableDecl) -> list[ir.ActionRef]:
    """The table's actions list after p4c's front end: as written, plus
    `NoAction @defaultonly` at the end when the default is the implicit
    NoAction and the list does not hold it."""
    refs = list(table.actions)
    default = table.default_action
    if getattr(table, "default_is_implicit", False) and default is not None:
        if not any(r.action is default.action for r in refs):
            refs.append(ir.ActionRef(default.action, [],
                                     [ir.Annotation("defaultonly", loc=default.loc)],
                                     default.loc))
    return refs


def key_name(key: ir.KeyElement) -> str:
    """The P4Info match-field name of a key: `@name` wins; a validity test
    `h.isValid()` is `h.$valid$`; otherwise the front end's name (the
    expression as written, whitespace removed)."""
    name = key.name
    if ir.find_annotation(key.annotations, "name") is not None:
        return name
    if (name.endswith(_VALID_CALL) and isinstance(key.expr, ir.BuiltinCall)
            and key.expr.name == "isValid"):
        return name[: -len(_VALID_CALL)] + _VALID_NAME
    return name
