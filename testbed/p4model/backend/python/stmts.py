"""Statements and the calling convention of actions, functions and
sub-blocks.

Calling convention (copy-in/copy-out, P4-16 section 6.8):
* `in` scalars are passed by value; `in` composites as a copy;
* `inout`/`out` composites by reference (the callee works on the caller's
  object; `out` ones are reset to zero/invalid at entry), except for an
  action that also reaches the control's variables directly: it gets a
  copy, copied back after the call (or its exit);
* `exit` in a callee with scalar `out`/`inout` params raises ExitControl
  carrying their values, which the caller copies out before passing it on;
* `inout`/`out` scalars are passed in (out: as zero) and the callee
  returns their final values, which the caller assigns back;
* a function's return value comes first in the returned tuple; one
  returned value is returned bare.
Actions additionally receive the enclosing control's composite params
first (`FuncCtx.ctl_args`); a control's scalar params and its locals live
in one per-instance frame object, shared by its apply body and actions.
"""

from __future__ import annotations

from testbed.p4model.backend.python.effects import has_effects, sees_outer_state
from testbed.p4model.backend.python.types import LIST_TYPES, is_composite, scalar_type
from testbed.p4model.errors import P4Unsupported
from testbed.p4model.frontend import ir


class FuncCtx:
    """What the generator needs to know about the Python function it is
    writing: variable bindings, the control's pass-through args, how
    `return` is spelled."""

    def __init__(self, env: dict, ctl_args: list[str] = (), outs: list[str] = (),
                 returns_value: bool = False, kind: str = "action") -> None:
        self.env = dict(env)
        self.ctl_args = list(ctl_args)
        self.outs = list(outs)             # python names of scalar out/inout params
        self.returns_value = returns_value
        self.kind = kind                   # 'action' | 'function' | 'control' | 'parser' | 'toplevel'
        self._n = 0

    def tmp(self, stem: str) -> str:
        self._n += 1
        return f"_{stem}{self._n}"

    def local(self, var, stem: str) -> str:
        self._n += 1
        name = f"v{self._n}_{stem}"
        self.env[id(var)] = name
        return name

    def return_code(self, value: str | None) -> str:
        parts = ([value if value is not None else "None"] if self.returns_value else []) + self.outs
        if not parts:
            return "return"
        if len(parts) == 1:
            return f"return {parts[0]}"
        return "return (" + ", ".join(parts) + ")"


def param_convention(params: list[ir.Param]):
    """Split params: names of scalar params that are returned (out/inout)."""
    return [p for p in params if p.direction in ("out", "inout") and not is_composite(p.type)]


class StmtMixin:
    """Statement generation; relies on ExprMixin and the call methods."""

    def block(self, stmts) -> None:
        """Emit statements; an empty block gets `pass`."""
        before = len(self.src.lines)
        for st in stmts:
            self.stmt(st)
        if all(line.strip().startswith("#") for line in self.src.lines[before:]):
            self.emit("pass")

    def stmt(self, st: ir.Stmt) -> None:
        method = getattr(self, "st_" + type(st).__name__, None)
        if method is None:
            raise P4Unsupported(st.loc, f"statement {type(st).__name__}")
        self.src.loc(st.loc)
        method(st)

    def st_Block(self, st: ir.Block) -> None:
        for s in st.stmts:
            self.stmt(s)

    def st_EmptyStmt(self, st) -> None:
        pass

    def st_Assign(self, st: ir.Assign) -> None:
        pins = self._pin_indices(st.lhs, st.rhs)
        try:
            self._assign_stmt(st)
        finally:
            for key in pins:
                del self._pinned[key]

    def _pin_indices(self, lhs: ir.Expr, rhs: ir.Expr) -> list[int]:
        """P4 evaluates the left-hand side (its run-time indices) once and
        before the right-hand side: when the right-hand side has side
        effects, or an index does (a compound assignment repeats the
        l-value in its value), each run-time index is computed into a
        temporary first and stands for that index expression wherever it
        occurs in the statement."""
        pinned = self.__dict__.setdefault("_pinned", {})
        keys = []
        rhs_effects = has_effects(rhs)
        n = lhs
        chain = []
        while isinstance(n, (ir.Member, ir.Slice, ir.Index)):
            chain.append(n)
            n = n.base
        for n in reversed(chain):      # outermost base first: P4's order
            if isinstance(n, ir.Index) and not isinstance(n.index, ir.Const) \
                    and (rhs_effects or has_effects(n.index)) and id(n.index) not in pinned:
                t = self.tmp("i")
                self.emit(f"{t} = {self.ex(n.index)}")
                pinned[id(n.index)] = t
                keys.append(id(n.index))
        return keys

    def _assign_stmt(self, st: ir.Assign) -> None:
        rhs = st.rhs
        if isinstance(rhs, (ir.StructExpr, ir.ListExpr)) and is_composite(st.lhs.type) \
                and not isinstance(ir.strip_newtype(st.lhs.type), LIST_TYPES):
            # build then copy in place (the target keeps its identity)
            self.assign(st.lhs, self.ex(rhs), rhs.type)
            return
        self.assign(st.lhs, self.ex(rhs), rhs.type)

    def st_CallStmt(self, st: ir.CallStmt) -> None:
        call = st.call
        if isinstance(call, ir.BuiltinCall):
            self.stmt_builtin(call)
        elif isinstance(call, (ir.ExternMethodCall, ir.ExternFunctionCall)):
            method = self.call_extern_method if isinstance(call, ir.ExternMethodCall) \
                else self.call_extern_function
            code = method(call, want=False)
            if code and code != "None":
                # a call whose value is unused still runs (a lookahead
                # past the end of the packet is a parser error)
                self.emit(code)
        elif isinstance(call, ir.ActionCall):
            self.call_action(call, want=False)
        elif isinstance(call, ir.FunctionCall):
            self.call_function(call, want=False)
        elif isinstance(call, ir.TableApply):
            self.emit(self.call_table(call))
        elif isinstance(call, ir.SubApply):
            self.call_sub(call, want=False)
        elif isinstance(call, ir.Member) and isinstance(call.base, ir.TableApply):
            self.emit(self.call_table(call.base))
        else:
            raise P4Unsupported(st.loc, f"call statement {type(call).__name__}")

    def st_VarDeclStmt(self, st: ir.VarDeclStmt) -> None:
        var = st.var
        name = self.fc.env.get(id(var))
        if name is None:
            name = self.fc.local(var, var.name)
            if is_composite(var.type) and not isinstance(ir.strip_newtype(var.type), LIST_TYPES):
                self.emit(f"{name} = {self.types.zero(var.type)}")
                if st.init is not None:
                    self.emit(f"{name}._set({self.ex(st.init)})")
                return
            if st.init is None:
                self.emit(f"{name} = {self.types.zero(var.type)}")
            else:
                init = self.ex(st.init)
                if isinstance(ir.strip_newtype(var.type), LIST_TYPES):
                    init = f"_copy_list({init})"
                self.emit(f"{name} = {init}")
            return
        # a frame-held local (control/parser level): re-initialise in place
        if st.init is None:
            if is_composite(var.type) and not isinstance(ir.strip_newtype(var.type), LIST_TYPES):
                self.emit(f"{name}._reset()")
            else:
                self.emit(f"{name} = {self.types.zero(var.type)}")
        else:
            self.assign(ir.VarRef(var, type=var.type, loc=st.loc), self.ex(st.init), st.init.type)

    def st_If(self, st: ir.If) -> None:
        self.emit(f"if {self.ex(st.cond)}:")
        self.src.indent()
        self.block([st.then])
        self.src.dedent()
        if st.otherwise is not None:
            self.emit("else:")
            self.src.indent()
            self.block([st.otherwise])
            self.src.dedent()

    def st_Switch(self, st: ir.Switch) -> None:
        expr = st.expr
        on_action = isinstance(expr, ir.Member) and isinstance(expr.base, ir.TableApply) \
            and expr.name == "action_run"
        v = self.tmp("sw")
        self.emit(f"{v} = {self.ex(expr)}")
        pending: list = []
        first = True
        default_body = None
        for case in st.cases:
            pending.extend(case.labels)
            if case.body is None:
                continue
            labels, pending = pending, []
            if "default" in labels:
                if len(labels) == 1 or True:
                    # default (possibly with fall-through labels into it) runs last
                    default_body = case.body
                    extra = [lab for lab in labels if lab != "default"]
                    if not extra:
                        continue
                    labels = extra
            conds = []
            for lab in labels:
                if on_action:
                    conds.append(f"{v} == {lab.cp_name!r}" if isinstance(lab, ir.ActionDecl)
                                 else f"{v} == {self.ex(lab)}")
                else:
                    conds.append(f"{v} == {self.ex(lab)}")
            self.emit(("if " if first else "elif ") + " or ".join(conds) + ":")
            first = False
            self.src.indent()
            self.block(case.body.stmts)
            self.src.dedent()
        if default_body is not None:
            if first:
                self.block(default_body.stmts)
            else:
                self.emit("else:")
                self.src.indent()
                self.block(default_body.stmts)
                self.src.dedent()

    def st_For(self, st: ir.For) -> None:
        """`while True` with the condition tested first; the update is
        emitted at the end of the body and before every `continue`."""
        for s in st.init:
            self.stmt(s)
        loops = self.__dict__.setdefault("_loop_updates", [])
        self.emit("while True:")
        self.src.indent()
        if st.cond is not None:
            self.emit(f"if not ({self.ex(st.cond)}):")
            self.src.indent()
            self.emit("break")
            self.src.dedent()
        loops.append(st.update)
        try:
            self.block([st.body])
        finally:
            loops.pop()
        for s in st.update:
            self.stmt(s)
        self.src.dedent()

    def st_Break(self, st) -> None:
        self.emit("break")

    def st_Continue(self, st) -> None:
        for s in self.__dict__["_loop_updates"][-1]:
            self.stmt(s)
        self.emit("continue")

    def st_Exit(self, st) -> None:
        self.emit("raise ExitControl")

    def st_Return(self, st: ir.Return) -> None:
        value = self.ex(st.value) if st.value is not None else None
        if value is not None and st.value is not None and is_composite(st.value.type):
            value = self.types.copy(st.value.type, value)
        self.emit(self.fc.return_code(value))

    # ---------------------------------------------------------------- calls

    def gen_call(self, fn: str, params: list[ir.Param], args: list[ir.Expr],
                 prefix: list[str], returns_value: bool, want: bool,
                 may_exit: bool = False, copy_composites: bool = False) -> str:
        """Emit a call with copy-in/copy-out; returns the value's code.

        Arguments are evaluated left to right (an argument followed by one
        with side effects is saved first).  may_exit: the callee can end in
        `exit`, which still copies out (the callee raises ExitControl with
        its out values).  copy_composites: the callee can see the caller's
        objects by another path, so inout/out composites are copied in and
        out instead of passed by reference."""
        codes = list(prefix)
        outs = []          # scalar (arg, type): assigned from the returned values
        backs = []         # composite (arg code, temp): copied back after the call
        for i, (p, a) in enumerate(zip(params, args)):
            composite = is_composite(p.type)
            later_effects = any(has_effects(x) for x in args[i + 1:])
            if p.direction in ("out", "inout"):
                if composite:
                    if isinstance(a, ir.DontCare):
                        codes.append(self.types.zero(p.type))
                    elif copy_composites and not isinstance(ir.strip_newtype(p.type), LIST_TYPES):
                        ref = self.ex(a)
                        t = self.tmp("k")
                        self.emit(f"{t} = {ref}._copy()" if p.direction == "inout"
                                  else f"{t} = {self.types.zero(p.type)}")
                        codes.append(t)
                        backs.append((a, t))
                    else:
                        codes.append(self.ex(a))
                else:
                    if p.direction == "inout" and not isinstance(a, ir.DontCare):
                        codes.append(self._in_order_value(a, later_effects))
                    else:
                        codes.append(self.types.zero(p.type))
                    outs.append((a, p.type))
            else:
                code = self._in_order_value(a, later_effects)
                codes.append(self.types.copy(a.type, code) if composite and not later_effects else code)
        call = f"{fn}({', '.join(codes)})"
        n = int(returns_value) + len(outs)
        if may_exit and (outs or backs):
            t = self.tmp("r")
            self.emit("try:")
            self.src.indent()
            self.emit(f"{t} = {call}")
            self.src.dedent()
            self.emit("except ExitControl as _x:")
            self.src.indent()
            self._copy_out(f"_x.args[0]", outs, backs, returns_value=False)
            self.emit("raise")
            self.src.dedent()
            self._copy_out(t, outs, backs, returns_value)
            return f"{t}[0]" if returns_value and outs else (t if returns_value else "None")
        if not outs:
            if backs:
                t = self.tmp("r")
                self.emit(f"{t} = {call}")
                self._copy_out(t, outs, backs, returns_value)
                return t if returns_value else "None"
            if want:
                return call
            self.emit(call)
            return "None"
        t = self.tmp("r")
        self.emit(f"{t} = {call}")
        self._copy_out(t, outs, backs, returns_value)
        return f"{t}[0]" if returns_value else "None"

    def _in_order_value(self, a: ir.Expr, later_effects: bool) -> str:
        """An argument's value, saved (as a copy) when a later argument has
        side effects."""
        code = self.ex(a)
        if not later_effects or isinstance(a, ir.Const):
            return code
        t = self.tmp("o")
        self.emit(f"{t} = {self.types.copy(a.type, code)}")
        return t

    def _copy_out(self, result: str, outs, backs, returns_value: bool) -> None:
        """Assign a call's out values (`result`: the callee's return value)."""
        for a, t in backs:
            self.emit(f"{self.ex(a)}._set({t})")
        if not outs:
            return
        n = int(returns_value) + len(outs)
        if n == 1:
            self.assign(outs[0][0], result, outs[0][1])
            return
        base = int(returns_value)
        for i, (a, ptype) in enumerate(outs):
            self.assign(a, f"{result}[{base + i}]", ptype)

    def call_action(self, e: ir.ActionCall, want: bool) -> str:
        fn = self.action_fn(e.action, e.loc)
        prefix = self.ctl_args_for(e.action)
        return self.gen_call(fn, e.action.params, e.args, prefix, False, want,
                             may_exit=self.exits.action(e.action),
                             copy_composites=sees_outer_state(e.action))

    def exit_copy_out(self, body_stmts) -> None:
        """Write a callee's body so that `exit` still copies its scalar
        out/inout values out: ExitControl carries them to the caller."""
        outs = self.fc.outs
        self.emit("try:")
        self.src.indent()
        self.block(body_stmts)
        self.src.dedent()
        self.emit("except ExitControl:")
        self.src.indent()
        self.emit(f"raise ExitControl({outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ')'})")
        self.src.dedent()

    def call_function(self, e: ir.FunctionCall, want: bool) -> str:
        fn = self.function_fn(e.function)
        returns = not isinstance(e.function.return_type, ir.VoidT)
        return self.gen_call(fn, e.function.params, e.args, [], returns, want)

    def call_sub(self, e: ir.SubApply, want: bool) -> str:
        fn, params = self.sub_block_fn(e.instance, e.loc)
        prefix = ["pk"] if self.fc.kind == "parser" and isinstance(e.instance.type, ir.ParserT) else []
        # the packet_in param of a sub-parser is passed as our cursor
        if prefix:
            params = [p for p in params if not self._is_packet_param(p)]
            args = [a for p, a in zip(e.instance.type.decl.params, e.args) if not self._is_packet_param(p)]
        else:
            args = e.args
        return self.gen_call(fn, params, args, prefix, False, want,
                             may_exit=self.exits.control(e.instance.type.decl))

    @staticmethod
    def _is_packet_param(p: ir.Param) -> bool:
        t = ir.strip_newtype(p.type)
        return isinstance(t, ir.ExternT) and t.decl.name in ("packet_in", "packet_out")

    def scalar_value_type(self, t):
        return scalar_type(t)
