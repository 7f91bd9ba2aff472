"""The semantic guard: a bug of ours met while loading a program (front
end, compiler, generated code, P4Info generator) reaches the user as one
line `internal error at file:line:col (construct): ...`, never a
traceback.  The bugs are injected; the program is a valid one."""

import re
from pathlib import Path

import pytest

from testbed.p4model.backend.python import exprs as compile_exprs
from testbed.p4model.backend.python import program as compile_program
from testbed.p4model.errors import P4Error, P4InternalError
from testbed.p4model import frontend
from testbed.p4model.frontend import expressions as fe_expressions
from testbed.p4model.frontend import load_program
from testbed.p4model.p4info import generate_file
from testbed.p4model.pipeline import load

PROGRAM = Path(__file__).resolve().parents[2] / "p4programs" / "basic_ipv4.p4"
ONE_LINE = re.compile(r"^internal error at (?P<file>\S+):(?P<line>\d+):\d+ \((?P<construct>[^)]+)\): \S.*$")


def check(exc, construct_pattern):
    text = str(exc)
    m = ONE_LINE.match(text)
    assert m, f"not one located line: {text!r}"
    assert m.group("file") == str(PROGRAM)
    assert int(m.group("line")) > 0
    assert re.search(construct_pattern, m.group("construct")), text
    assert isinstance(exc, P4Error)


def test_compiler_bug_is_one_line_at_the_construct(monkeypatch):
    def broken(t):
        raise ValueError("injected")
    monkeypatch.setattr(compile_program, "width_of", broken)
    with pytest.raises(P4InternalError) as info:
        load(PROGRAM)
    check(info.value, r"^TableDecl ")
    assert str(info.value).endswith("ValueError: injected")


def test_generated_code_that_is_not_python_is_one_line(monkeypatch):
    original = compile_exprs.ExprMixin.ex_Const
    monkeypatch.setattr(compile_exprs.ExprMixin, "ex_Const",
                        lambda self, e: original(self, e) + " +")
    with pytest.raises(P4InternalError) as info:
        load(PROGRAM)
    check(info.value, r"^generated code$")
    assert "SyntaxError" in str(info.value)


def test_front_end_bug_is_one_line_at_the_construct(monkeypatch):
    def broken(self, *args, **kwargs):
        raise KeyError("injected")
    monkeypatch.setattr(fe_expressions.ExprLowering, "make_binary", broken)
    monkeypatch.setattr(frontend, "LOADED", {})  # lowered again, not the IR an earlier test loaded
    with pytest.raises(P4InternalError) as info:
        load_program(PROGRAM)
    check(info.value, r".")


def test_p4info_generator_bug_is_one_line(monkeypatch):
    def broken(*args, **kwargs):
        raise IndexError("injected")
    monkeypatch.setattr("testbed.p4model.p4info.generate", broken)
    with pytest.raises(P4Error) as info:
        generate_file(PROGRAM)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("internal error in ")
