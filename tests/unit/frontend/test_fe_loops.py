"""P4 1.2.4 for loops: lowering to ir.For/Break/Continue, their scoping and
errors.  Execution is covered by tests/p4programs/fe_loops.{p4,stf}."""

from __future__ import annotations

import pytest

from testbed.p4model.errors import P4Error, P4Unsupported
from testbed.p4model.frontend import ir

from fe_util import apply_stmts


def test_three_clause_for_lowers_to_ir_for():
    (loop,) = apply_stmts("""
        for (bit<8> i = 0, bit<8> j = 1; i < meta.x; i = i + 1, j += 2) {
            if (i == 3) { continue; }
            meta.y = meta.y + (bit<16>)j;
            if (j > 9) { break; }
        }
    """)
    assert isinstance(loop, ir.For)
    assert [s.var.name for s in loop.init] == ["i", "j"]
    assert isinstance(loop.cond, ir.Binary) and loop.cond.type == ir.BoolT()
    assert [type(s) for s in loop.update] == [ir.Assign, ir.Assign]
    body = loop.body.stmts
    assert isinstance(body[0].then.stmts[0], ir.Continue)
    assert isinstance(body[2].then.stmts[0], ir.Break)


def test_empty_clauses_allowed():
    (loop,) = apply_stmts("for (; ; ) { break; }")
    assert loop.init == [] and loop.cond is None and loop.update == []


def test_loop_variable_scope_ends_with_the_loop():
    with pytest.raises(P4Error, match="unknown|undeclared|not declared"):
        apply_stmts("for (bit<8> i = 0; i < 2; i = i + 1) { } meta.x = i;")


def test_condition_must_be_bool():
    with pytest.raises(P4Error, match=r"for condition must be bool, not bit<8>"):
        apply_stmts("for (bit<8> i = 0; i; i = i + 1) { }")


def test_continue_outside_a_loop_is_an_error():
    with pytest.raises(P4Error, match="continue outside a loop"):
        apply_stmts("continue;")


def test_for_in_is_reported_unsupported():
    with pytest.raises(P4Unsupported, match="for-in loops"):
        apply_stmts("for (bit<8> v in hdr.stack) { }")
