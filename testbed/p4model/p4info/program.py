"""What of a program the control plane sees, in the order p4c lists it.

p4c builds P4Info after its front end, which (a) removes tables that are
never applied and actions nothing refers to, (b) inlines sub-controls into
their caller at the place of the instance declaration, and (c) copies every
global action a control uses (NoAction) to the front of that control's
declarations.  It then visits the program's blocks breadth-first: the six
V1Switch blocks (actions, value sets, digests), then their tables and extern
instances in declaration order.  This module reproduces that view from our
IR, which keeps declarations as written.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator, Optional

from testbed.p4model.runtime import tableinfo
from testbed.p4model.frontend import ir

_STOP = (ir.Type, ir.ActionDecl, ir.TableDecl, ir.Instance, ir.FunctionDecl, ir.ExternDecl,
         ir.ExternFunctionDecl, ir.ExternMethod, ir.Var, ir.Param, ir.ValueSetDecl,
         ir.ControlDecl, ir.ParserDecl, ir.ConstDecl, ir.Loc, ir.Annotation)


def walk(node, live: bool = False) -> Iterator[object]:
    """Every statement/expression node under `node` (itself included),
    not descending into declarations it refers to.  live: skip the branch
    of an `if` on a constant that never runs (p4c's front end folds
    `if (true)` / `if (false)` before P4Info is built, so what only that
    branch refers to is not in P4Info)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None or isinstance(n, (str, int, bool, float, bytes)):
            continue
        if isinstance(n, (list, tuple)):
            stack.extend(reversed(n))
            continue
        if isinstance(n, dict):
            stack.extend(reversed(list(n.values())))
            continue
        if isinstance(n, _STOP) or not dataclasses.is_dataclass(n):
            continue
        yield n
        if live and isinstance(n, ir.If) and isinstance(n.cond, ir.Const) \
                and isinstance(n.cond.value, bool):
            stack.append(n.then if n.cond.value else n.otherwise)
            continue
        children = [getattr(n, f.name) for f in dataclasses.fields(n)
                    if f.name not in ("type", "loc")]
        stack.extend(reversed(children))


@dataclass
class ControlView:
    """One V1Switch control block after p4c's front end: its actions (as
    listed in P4Info), its tables and extern instances (in declaration
    order, sub-controls inlined), and the bodies whose extern-function calls
    P4Info looks at."""

    instance: ir.Instance
    actions: list[ir.ActionDecl] = field(default_factory=list)
    children: list = field(default_factory=list)       # TableDecl | Instance(ExternT)
    bodies: list = field(default_factory=list)         # apply bodies, inlined sub-controls included
    called_only: set = field(default_factory=set)      # ids of actions no table lists, only called


@dataclass
class ParserView:
    instance: ir.Instance
    value_sets: list[ir.ValueSetDecl] = field(default_factory=list)
    children: list = field(default_factory=list)       # Instance(ExternT)


def _function_closure(nodes, seen: set) -> list:
    """Bodies of P4 functions called (transitively) from `nodes`: p4c
    inlines functions before generating P4Info."""
    out = []
    for n in walk(nodes):
        if isinstance(n, ir.FunctionCall) and id(n.function) not in seen:
            seen.add(id(n.function))
            out.append(n.function.body)
            out.extend(_function_closure(n.function.body, seen))
    return out


def _flatten_control(decl: ir.ControlDecl, locals_out: list, bodies_out: list,
                     done: set | None = None) -> None:
    """Inline used sub-control instances into one declaration list.

    A local control instance is used when the body applies it or when it is
    passed as a constructor argument to a used instance (p4c's issue1566:
    `C1() c1; C2(c1) c2;` applies c1 from c2's body).  Instances applied
    here but declared elsewhere (an implicit instance of a direct
    application `E.apply()`, an anonymous `C2(C1())` argument) are inlined
    where they are applied.  `done` keeps a shared instance from being
    inlined twice."""
    done = set() if done is None else done
    bodies = [decl.apply, *decl.local_inits]
    bodies += _function_closure(bodies, set())
    bodies_out.extend(bodies)
    applied = [n.instance for n in walk(bodies, live=True) if isinstance(n, ir.SubApply)]
    used = {id(i) for i in applied}
    for local in reversed(decl.locals):
        if isinstance(local, ir.Instance) and id(local) in used:
            used.update(id(a) for a in local.args if isinstance(a, ir.Instance))
    local_ids = {id(d) for d in decl.locals}

    def inline(instance: ir.Instance) -> None:
        if id(instance) not in done:
            done.add(id(instance))
            for a in instance.args:
                if isinstance(a, ir.Instance) and isinstance(a.type, ir.ControlT) and id(a) not in local_ids:
                    inline(a)
            _flatten_control(instance.type.decl, locals_out, bodies_out, done)

    for local in decl.locals:
        if isinstance(local, ir.Instance) and isinstance(local.type, ir.ControlT):
            if id(local) in used:
                inline(local)
            continue
        locals_out.append(local)
    for instance in applied:
        if isinstance(instance.type, ir.ControlT) and id(instance) not in local_ids:
            inline(instance)


def _table_action_refs(table: ir.TableDecl) -> list[ir.ActionRef]:
    refs = tableinfo.action_refs(table)
    if table.default_action is not None:
        refs.append(table.default_action)
    refs.extend(e.action for e in table.entries)
    return refs


def _applied_tables(bodies) -> set[int]:
    """ids of the tables the bodies apply, and of the tables applied in
    those tables' key expressions (`key = { t2.apply().hit : exact; }`)."""
    applied: set[int] = set()
    todo = [n.table for n in walk(bodies, live=True) if isinstance(n, ir.TableApply)]
    while todo:
        t = todo.pop()
        if id(t) not in applied:
            applied.add(id(t))
            todo.extend(n.table for n in walk([k.expr for k in t.keys]) if isinstance(n, ir.TableApply))
    return applied


def control_view(instance: ir.Instance) -> ControlView:
    view = ControlView(instance)
    flat: list = []
    _flatten_control(instance.type.decl, flat, view.bodies)
    local_ids = {id(d) for d in flat if isinstance(d, ir.ActionDecl)}

    applied = _applied_tables(view.bodies)
    tables = [d for d in flat if isinstance(d, ir.TableDecl) and id(d) in applied]

    # Actions referenced, in the order p4c's LocalizeAllActions meets them:
    # declarations first (tables' properties), then the apply body.
    referenced: list[ir.ActionDecl] = []
    seen: set = set()

    def note(action: ir.ActionDecl) -> None:
        if id(action) not in seen:
            seen.add(id(action))
            referenced.append(action)

    for table in tables:
        for ref in _table_action_refs(table):
            note(ref.action)
    in_tables = set(seen)
    for n in walk(view.bodies, live=True):
        if isinstance(n, ir.ActionCall):
            note(n.action)
    # p4c's RemoveActionParameters binds the arguments of a direct call, so
    # an action that is only called (no table lists it) has no parameters
    view.called_only = set(seen) - in_tables
    globals_used = [a for a in referenced if id(a) not in local_ids]

    # Actions survive when a table or an apply body refers to them.  Calls
    # from one action to another do not count: p4c's front end inlines them
    # (InlineActions) and drops what is left unused before P4Info is built
    # (p4c's crc32-bmv2: send_back, called only from the table's actions, is
    # not in its P4Info).
    used = {id(a) for a in referenced}
    view.actions = globals_used + [d for d in flat if isinstance(d, ir.ActionDecl) and id(d) in used]
    view.children = [d for d in flat
                     if (isinstance(d, ir.TableDecl) and id(d) in applied)
                     or (isinstance(d, ir.Instance) and isinstance(d.type, ir.ExternT))]
    return view


def parser_view(instance: ir.Instance) -> ParserView:
    view = ParserView(instance)

    def visit(decl: ir.ParserDecl) -> None:
        for local in decl.locals:
            if isinstance(local, ir.ValueSetDecl):
                view.value_sets.append(local)
            elif isinstance(local, ir.Instance) and isinstance(local.type, ir.ExternT):
                view.children.append(local)
            elif isinstance(local, ir.Instance) and isinstance(local.type, ir.ParserT):
                visit(local.type.decl)

    visit(instance.type.decl)
    return view


def extern_calls(nodes) -> Iterator[ir.ExternFunctionCall]:
    for n in walk(nodes):
        if isinstance(n, ir.ExternFunctionCall):
            yield n


def blocks(program: ir.Program) -> list:
    """Views of the V1Switch blocks in parameter order."""
    out = []
    for _role, instance in program.blocks:
        if isinstance(instance.type, ir.ControlT):
            out.append(control_view(instance))
        elif isinstance(instance.type, ir.ParserT):
            out.append(parser_view(instance))
    return out


def global_externs(program: ir.Program) -> list[ir.Instance]:
    return [d for d in program.declarations
            if isinstance(d, ir.Instance) and d is not program.main
            and isinstance(d.type, ir.ExternT) and isinstance(d.type.decl, ir.ExternDecl)]


def controller_headers(program: ir.Program) -> list[ir.HeaderT]:
    out = []
    for d in program.declarations:
        t = getattr(d, "type", None) if isinstance(d, ir.TypeDeclRef) and not d.is_typedef else None
        if isinstance(t, ir.HeaderT) and any(a.name == "controller_header" for a in t.annotations):
            out.append(t)
    return out


def ctor_arg(instance: ir.Instance, name: str, position: int) -> Optional[object]:
    """A constructor argument by parameter name (via the extern's
    constructor matching the argument count), else by position."""
    decl = instance.type.decl if isinstance(instance.type, ir.ExternT) else None
    if decl is not None:
        for ctor in decl.constructors():
            if len(ctor.params) == len(instance.args):
                for p, a in zip(ctor.params, instance.args):
                    if p.name == name:
                        return a
    if 0 <= position < len(instance.args):
        return instance.args[position]
    return None
