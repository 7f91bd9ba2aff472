"""IR invariants consumers rely on (ir.py module docstring): every
expression typed, no typedef names left, no unresolved names, locations
everywhere.  Checked by walking whole programs."""

import dataclasses
from pathlib import Path

import pytest

from testbed.p4model.frontend import ir, load_program
from testbed.p4model.frontend.expressions import _Named

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


def walk(node, seen, out):
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, (list, tuple)):
        for x in node:
            walk(x, seen, out)
        return
    if isinstance(node, dict):
        for x in node.values():
            walk(x, seen, out)
        return
    if isinstance(node, ir.Type) and not isinstance(node, (ir.ParserT, ir.ControlT)):
        return
    if not dataclasses.is_dataclass(node):
        return
    out.append(node)
    for f in dataclasses.fields(node):
        walk(getattr(node, f.name), seen, out)


@pytest.mark.parametrize("name", ["basic_ipv4.p4", "fe_kitchen_sink.p4"])
def test_every_expression_is_typed_and_located(name):
    program = load_program(PROGRAMS / name)
    nodes = []
    walk([program.declarations, program.main, [i for _, i in program.blocks]], set(), nodes)
    exprs = [n for n in nodes if isinstance(n, ir.Expr)]
    assert len(exprs) > 50
    for e in exprs:
        assert not isinstance(e, _Named), f"internal name node leaked: {e}"
        assert isinstance(e.type, ir.Type), f"untyped {type(e).__name__} at {e.loc}"
        assert e.loc is not ir.NO_LOC or isinstance(e, ir.Const), f"{type(e).__name__} without a location"
        assert not isinstance(e.type, ir.TypeParamT), f"unbound type parameter in {type(e).__name__} at {e.loc}"
    for n in nodes:
        if isinstance(n, ir.Stmt):
            assert n.loc is not ir.NO_LOC, f"{type(n).__name__} without a location"
        if isinstance(n, ir.VarRef):
            assert isinstance(n.target, (ir.Var, ir.Param))
        if isinstance(n, (ir.ExternMethodCall, ir.ExternFunctionCall)):
            assert len(n.args) == len((n.method if isinstance(n, ir.ExternMethodCall) else n.decl).params)
            assert all(not isinstance(t, ir.TypeParamT) for t in n.type_args)
