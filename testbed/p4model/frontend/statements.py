"""Statement lowering (apply blocks, action/function bodies, parser states).

Mixin of lower.Lowerer; statements get their own block scopes, `switch`
on `t.apply().action_run` gets its labels resolved to ActionDecls.
"""

from __future__ import annotations

from lark import Tree

from testbed.p4model.errors import P4Error, P4Unsupported
from testbed.p4model.frontend import ir
from testbed.p4model.frontend import types as T
from testbed.p4model.frontend.expressions import COMPOUND_OPS, is_lvalue, tok_value
from testbed.p4model.frontend.scope import Scope


class StatementLowering:

    def block(self, tree, ctx, new_scope: bool = True) -> ir.Block:
        inner = ctx.child(Scope(ctx.scope)) if new_scope else ctx
        stmts = []
        for ch in tree.children:
            if isinstance(ch, Tree) and ch.data == "annotations":
                continue
            s = self.statement(ch, inner)
            if s is not None:
                stmts.append(s)
        return ir.Block(stmts, loc=self.loc(tree, ctx))

    def statement(self, t, ctx):
        loc = self.loc(t, ctx)
        data = t.data
        if data == "assign":
            lhs = self.lvalue(t.children[0], ctx)
            rhs = self.expr(t.children[1], ctx, lhs.type)
            return ir.Assign(lhs, rhs, loc=loc)
        if data == "compound_assign":
            lhs = self.lvalue(t.children[0], ctx)
            op = COMPOUND_OPS[str(t.children[1])]
            rhs = self.expr(t.children[2], ctx)
            value = self.make_binary(op, lhs, rhs, loc)
            return ir.Assign(lhs, self.coerce(value, lhs.type, loc), loc=loc)
        if data == "call_stmt":
            call = self.call(t.children[0], None, t.children[1], ctx, loc)
            return self.call_statement(call, loc)
        if data == "generic_call_stmt":
            targs = [self.resolve_type(a, ctx) for a in t.children[1].children]
            call = self.call(t.children[0], targs, t.children[2], ctx, loc)
            return self.call_statement(call, loc)
        if data == "direct_application":
            return self.direct_application(t, ctx, loc)
        if data == "conditional":
            cond = self.expr(t.children[0], ctx)
            if not isinstance(cond.type, ir.BoolT):
                raise P4Error(cond.loc, f"if condition must be bool, not {ir.type_str(cond.type)}")
            then = self.sub_statement(t.children[1], ctx)
            other = self.sub_statement(t.children[2], ctx) if len(t.children) > 2 else None
            return ir.If(cond, then, other, loc=loc)
        if data in ("block", "parser_block"):
            return self.block(t, ctx)
        if data == "exit_stmt":
            if ctx.kind in ("parser", "function"):
                raise P4Error(loc, f"exit cannot be used in a {ctx.kind}")
            return ir.Exit(loc=loc)
        if data == "return_stmt":
            return self.return_statement(t, ctx, loc)
        if data == "switch_stmt":
            return self.switch(t, ctx, loc)
        if data == "empty_stmt":
            return ir.EmptyStmt(loc=loc)
        if data == "for_stmt":
            return self.for_statement(t, ctx, loc)
        if data == "for_in_stmt":
            raise P4Unsupported(loc, "for-in loops")
        if data in ("break_stmt", "continue_stmt"):
            word = data[:-5]
            if not ctx.in_loop:
                raise P4Error(loc, f"{word} outside a loop")
            return ir.Break(loc=loc) if word == "break" else ir.Continue(loc=loc)
        if data == "variable_decl":
            return self.local_variable(t, ctx)
        if data == "const_decl":
            self.const_decl(t, ctx)
            return None
        if data in ("instantiation", "instantiation_with_body"):
            raise P4Error(loc, "instantiations are not allowed inside a block")
        raise P4Unsupported(loc, f"statement {data}")

    def for_statement(self, t, ctx, loc):
        """`for (init; cond; update) body`: the init declarations live in a
        scope of their own around the loop (P4 1.2.4, 12.15)."""
        inits, rest = t.children[0], t.children[1:]
        cond_tree = rest[0] if len(rest) == 3 else None
        updates, body_tree = rest[-2], rest[-1]
        lctx = ctx.child(Scope(ctx.scope))
        init = []
        for it in inits.children:
            if it.data == "for_var":
                anns, parts = self.split_annotations(it.children, lctx)
                vtype = self.resolve_type(parts[0], lctx)
                name = tok_value(parts[1])
                vloc = self.loc(it, lctx)
                self.check_storable(vtype, vloc)
                value = self.expr(parts[2], lctx, vtype)
                var = ir.Var(name, vtype, anns, vloc)
                lctx.scope.declare(name, var, vloc)
                init.append(ir.VarDeclStmt(var, value, loc=vloc))
            else:
                init.append(self.statement(it, lctx))
        cond = None
        if cond_tree is not None:
            cond = self.expr(cond_tree, lctx)
            if not isinstance(cond.type, ir.BoolT):
                raise P4Error(cond.loc, f"for condition must be bool, not {ir.type_str(cond.type)}")
        update = [self.statement(u, lctx) for u in updates.children]
        body = self.sub_statement(body_tree, lctx.child(lctx.scope, in_loop=True))
        return ir.For(init, cond, update, body, loc=loc)

    def sub_statement(self, t, ctx):
        """A statement in a branch: a declaration there gets its own scope."""
        s = self.statement(t, ctx.child(Scope(ctx.scope)))
        return s if s is not None else ir.EmptyStmt(loc=self.loc(t, ctx))

    def call_statement(self, call, loc):
        if isinstance(call, ir.BuiltinCall) and call.name in ("isValid", "minSizeInBits", "minSizeInBytes",
                                                              "maxSizeInBits", "maxSizeInBytes"):
            return ir.EmptyStmt(loc=loc)
        if isinstance(call, ir.Const):
            return ir.EmptyStmt(loc=loc)
        return ir.CallStmt(call, loc=loc)

    def return_statement(self, t, ctx, loc):
        value = None
        if ctx.kind == "parser":
            raise P4Error(loc, "return cannot be used in a parser state")
        if t.children:
            if ctx.kind != "function":
                raise P4Error(loc, "only functions return a value")
            value = self.expr(t.children[0], ctx, ctx.return_type)
        elif ctx.kind == "function" and not isinstance(ctx.return_type, ir.VoidT):
            raise P4Error(loc, f"return needs a value of type {ir.type_str(ctx.return_type)}")
        return ir.Return(value, loc=loc)

    def local_variable(self, t, ctx) -> ir.VarDeclStmt:
        anns, rest = self.split_annotations(t.children, ctx)
        vtype = self.resolve_type(rest[0], ctx)
        name = tok_value(rest[1])
        loc = self.loc(t, ctx)
        self.check_storable(vtype, loc)
        init = self.expr(rest[2], ctx, vtype) if len(rest) > 2 else None
        var = ir.Var(name, vtype, anns, loc)
        ctx.scope.declare(name, var, loc)
        return ir.VarDeclStmt(var, init, loc=loc)

    def check_storable(self, vtype, loc):
        st = ir.strip_newtype(vtype)
        if isinstance(st, (ir.ExternT, ir.ParserT, ir.ControlT)):
            raise P4Error(loc, f"cannot declare a variable of type {ir.type_str(vtype)}")
        if isinstance(st, (ir.VoidT, ir.StringT, ir.MatchKindT)):
            raise P4Error(loc, f"cannot declare a variable of type {ir.type_str(vtype)}")

    def switch(self, t, ctx, loc):
        subject = self.expr(t.children[0], ctx)
        cases = []
        is_action_run = isinstance(subject.type, ir.ActionEnumT)
        table = subject.base.table if is_action_run and isinstance(subject, ir.Member) else None
        st = T.value_type(subject.type)
        if not is_action_run and not isinstance(st, (ir.BitT, ir.EnumT, ir.ErrorT)) and \
                not isinstance(ir.strip_newtype(subject.type), ir.EnumT):
            raise P4Unsupported(loc, f"switch on a value of type {ir.type_str(subject.type)}")
        seen = set()
        case_trees = t.children[1:]
        for i, c in enumerate(case_trees):
            label_tree = c.children[0]
            cloc = self.loc(c, ctx)
            if isinstance(label_tree, Tree) and label_tree.data == "label_default":
                label = "default"
                if i != len(case_trees) - 1:
                    raise P4Error(cloc, "the default label must be the last switch case")
            elif is_action_run:
                name = self.text(label_tree)
                scope = ctx.scope
                if name.startswith("."):
                    name, scope = name[1:], ctx.scope.top()
                ent = scope.lookup(name)
                if not isinstance(ent, ir.ActionDecl):
                    raise P4Error(cloc, f"switch label '{name}' is not an action")
                if table is not None and not any(r.action is ent for r in table.actions):
                    raise P4Error(cloc, f"action '{name}' is not an action of table {table.name}")
                label = ent
            else:
                value = self.expr(label_tree, ctx, subject.type)
                if not isinstance(value, ir.Const):
                    raise P4Error(cloc, "switch labels must be compile-time constants")
                label = value
            key = id(label) if isinstance(label, ir.ActionDecl) else (
                label if isinstance(label, str) else ("c", label.value))
            if key in seen:
                raise P4Error(cloc, "duplicate switch label")
            seen.add(key)
            body = self.block(c.children[1], ctx) if c.data == "switch_case" else None
            if body is None and i == len(case_trees) - 1:
                body = ir.Block([], loc=cloc)
            cases.append(ir.SwitchCase([label], body, cloc))
        # merge fall-through labels into the next case with a body
        merged, pending = [], []
        for c in cases:
            pending.extend(c.labels)
            if c.body is not None:
                merged.append(ir.SwitchCase(pending, c.body, c.loc))
                pending = []
        return ir.Switch(subject, merged, loc=loc)

    def direct_application(self, t, ctx, loc):
        """`C.apply(args)`: an implicit instance of C named like the type."""
        type_tree = t.children[0]
        inst = self.instantiate_block_type(type_tree, [], tok_value(type_tree), ctx, loc, implicit=True)
        bound = self.bind_args(inst.type.decl.params, list(t.children[1].children), ctx, loc,
                               f"{inst.name}.apply", {})
        return ir.CallStmt(ir.SubApply(inst, bound, type=ir.VoidT(), loc=loc), loc=loc)

    def writable(self, e) -> bool:
        return is_lvalue(e)
