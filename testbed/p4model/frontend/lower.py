"""Declarations -> ir.Program: types, externs, actions, tables, parsers,
controls (specialised per instance), the `main` package.

Why per-instance specialisation: a control instantiated twice has two sets
of tables and externs with distinct control-plane names
(`MyIngress.c1.t`, `MyIngress.c2.t`), and constructor parameters become
constants, so consumers never see an unspecialised body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from lark import Token, Tree

from testbed.p4model.errors import P4Error, P4NoMain, P4Unsupported
from testbed.p4model.frontend import ir
from testbed.p4model.frontend import types as T
from testbed.p4model.frontend.annotations import control_plane_name, make_annotation
from testbed.p4model.frontend.expressions import ExprLowering, tok_value
from testbed.p4model.frontend.preprocess import Source
from testbed.p4model.frontend.scope import BlockTemplate, GenericTypeTemplate, Overloads, Scope
from testbed.p4model.frontend.statements import StatementLowering
from testbed.p4model.frontend.tables import TableLowering

V1SWITCH_ROLES = ["parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser"]
UNSUPPORTED_PACKAGES = {"PSA_Switch": "architecture psa", "Switch": "architecture tna",
                        "ebpfFilter": "architecture ebpf_model", "XdpSwitch": "architecture xdp",
                        "SimpleSwitch": "architecture"}


@dataclass
class Ctx:
    """Where lowering happens: scope, kind of body, control-plane prefix."""

    scope: Scope
    kind: str = "top"            # top | parser | control | action | function | extern
    prefix: str = ""             # cp_name prefix, e.g. 'MyIngress.'
    return_type: ir.Type | None = None
    applied_tables: dict | None = None   # table -> loc of its apply() (once per pass)
    last_loc: ir.Loc = ir.NO_LOC
    in_loop: bool = False        # break/continue allowed

    def child(self, scope: Scope, **changes) -> "Ctx":
        return replace(self, scope=scope, **changes)


class Lowerer(ExprLowering, StatementLowering, TableLowering):
    def __init__(self, source: Source) -> None:
        self.source = source
        self.error_type = ir.ErrorT([])
        self.match_kind_type = ir.MatchKindT([])
        self.top = Scope(kind="top")
        self.declarations: list = []
        self.main: ir.Instance | None = None

    # ---------------------------------------------------------- locations

    def loc(self, node, ctx=None) -> ir.Loc:
        if isinstance(node, Token):
            if node.line is not None:
                return self.source.loc(node.line, node.column)
        elif isinstance(node, Tree):
            meta = node.meta
            if not meta.empty:
                return self.source.loc(meta.line, meta.column)
            for ch in node.children:
                if isinstance(ch, (Tree, Token)):
                    l = self.loc(ch, None)
                    if l is not ir.NO_LOC:
                        return l
        return ctx.last_loc if ctx is not None else ir.NO_LOC

    def text(self, tree) -> str:
        """Source text of a tree with whitespace removed (p4c key names)."""
        if isinstance(tree, Token):
            return str(tree.value)
        meta = tree.meta
        if meta.empty:
            return "".join(self.text(c) for c in tree.children)
        return "".join(self.source.text[meta.start_pos:meta.end_pos].split())

    def split_annotations(self, children, ctx):
        if children and isinstance(children[0], Tree) and children[0].data == "annotations":
            return self.annotations(children[0], ctx), list(children[1:])
        return [], list(children)

    def annotations(self, tree, ctx) -> list[ir.Annotation]:
        result = []
        for a in tree.children:
            name_tok = a.children[0]
            body = str(a.children[1]) if len(a.children) > 1 else None
            result.append(make_annotation(str(name_tok), body, a.data == "struct_annotation", self.loc(name_tok, ctx)))
        return result

    # ------------------------------------------------------------ program

    def program(self, tree) -> ir.Program:
        ctx = Ctx(self.top)
        for decl in tree.children:
            self.declaration(decl, ctx)
        if self.main is None:
            raise P4NoMain(self.source.loc(max(1, len(self.source.origins)), 1),
                           "the program has no 'main' package instance")
        main = self.main
        if not isinstance(main.type, ir.PackageT):
            raise P4Error(main.loc, "'main' must be a package instance")
        pkg = main.type.decl
        if pkg.name != "V1Switch":
            raise P4Unsupported(main.loc, UNSUPPORTED_PACKAGES.get(pkg.name, f"package {pkg.name} (only V1Switch)"))
        blocks = [(role, inst) for role, inst in zip(V1SWITCH_ROLES, main.args)]
        return ir.Program(self.declarations, main, blocks, self.error_type, self.match_kind_type,
                          "v1model", list(self.source.files))

    def declaration(self, t, ctx):
        loc = self.loc(t, ctx)
        ctx.last_loc = loc
        data = t.data
        handler = getattr(self, "_d_" + data, None)
        if handler is None:
            raise P4Unsupported(loc, f"declaration {data}")
        handler(t, ctx, loc)

    def _d_empty_decl(self, t, ctx, loc):
        pass

    # ----------------------------------------------------------- types

    def resolve_type(self, t, ctx) -> ir.Type:
        loc = self.loc(t, ctx)
        data = t.data if isinstance(t, Tree) else "token"
        if data == "t_bool":
            return ir.BoolT()
        if data == "t_error":
            return self.error_type
        if data == "t_match_kind":
            return self.match_kind_type
        if data == "t_string":
            return ir.StringT()
        if data == "t_int_infinite":
            return ir.IntLitT()
        if data == "t_bit1":
            return ir.BitT(1)
        if data in ("t_bit", "t_signed", "t_varbit"):
            w = self.width(t.children[0], ctx, loc)
            if data == "t_varbit":
                return ir.VarbitT(w)
            if data == "t_signed" and w < 1:
                raise P4Error(loc, "int<W> needs W >= 1")
            return ir.BitT(w, data == "t_signed")
        if data in ("type_name", "dot_type_name"):
            return self.named_type(t, ctx, loc, [])
        if data == "specialized_type":
            args = [self.type_arg(a, ctx) for a in t.children[1].children]
            return self.named_type(t.children[0], ctx, loc, args)
        if data == "header_stack_type":
            elem = self.resolve_type(t.children[0], ctx)
            size = self.expr(t.children[1], ctx)
            if not isinstance(size, ir.Const) or not isinstance(size.value, int) or size.value <= 0:
                raise P4Error(loc, "header stack size must be a positive constant")
            se = ir.strip_newtype(elem)
            if isinstance(se, (ir.HeaderT, ir.UnionT)):
                return ir.StackT(elem, size.value)
            return self.array_of(elem, size, loc)
        if data == "array_type":
            return self.array_of(self.resolve_type(t.children[0], ctx), self.expr(t.children[1], ctx), loc)
        if data in ("tuple_type", "list_type"):
            return ir.TupleT(tuple(self.type_arg(a, ctx) for a in t.children[0].children))
        if data == "void_type":
            return ir.VoidT()
        if data == "type_arg":
            return self.type_arg(t, ctx)
        raise P4Error(loc, f"not a type: {self.text(t)}")

    def array_of(self, elem, size, loc) -> ir.ArrayT:
        """`T[N]` of a type other than a header: an array of N values (N a positive constant)."""
        if not isinstance(size, ir.Const) or not isinstance(size.value, int) or size.value <= 0:
            raise P4Error(loc, "array size must be a positive constant")
        se = ir.strip_newtype(elem)
        if isinstance(se, (ir.ExternT, ir.ParserT, ir.ControlT, ir.IntLitT, ir.VoidT, ir.StringT)):
            raise P4Error(loc, f"array elements cannot have type {ir.type_str(elem)}")
        return ir.ArrayT(elem, size.value)

    def type_arg(self, t, ctx):
        if t.data == "dontcare_type":
            return ir.DontCareT()
        if t.data == "void_type":
            return ir.VoidT()
        if t.data == "type_arg":
            return self.type_arg(t.children[0], ctx)
        return self.resolve_type(t, ctx)

    def width(self, w, ctx, loc) -> int:
        child = w.children[0]
        if isinstance(child, Token) and child.type == "INTEGER":
            c = T.parse_int_literal(str(child), loc)
        else:
            c = self.expr(child, ctx)
        if not isinstance(c, ir.Const) or isinstance(c.value, bool) or not isinstance(c.value, int):
            raise P4Error(loc, "a width must be a compile-time constant")
        if c.value < 0 or c.value > 2048:
            raise P4Error(loc, f"invalid width {c.value}")
        return c.value

    def named_type(self, t, ctx, loc, args) -> ir.Type:
        name = tok_value(t)
        scope = ctx.scope.top() if t.data == "dot_type_name" else ctx.scope
        ent = scope.lookup(name)
        if ent is None:
            raise P4Error(loc, f"unknown type '{name}'")
        if isinstance(ent, ir.ExternDecl):
            if args and len(args) != len(ent.type_params):
                raise P4Error(loc, f"extern {name} takes {len(ent.type_params)} type arguments, got {len(args)}")
            return ir.ExternT(ent, args or [ir.TypeParamT(p) for p in ent.type_params])
        if isinstance(ent, BlockTemplate):
            return ent          # resolved further by instantiation / parameter code
        if isinstance(ent, ir.PackageDecl):
            return ir.PackageT(ent)
        if isinstance(ent, GenericTypeTemplate):
            if not args:
                raise P4Error(loc, f"generic type {name} needs type arguments: {name}<...>")
            return ent.specialise(args, loc)
        if isinstance(ent, ir.Type):
            if args:
                raise P4Unsupported(loc, f"generic type {name}<...>")
            return ent
        raise P4Error(loc, f"'{name}' is not a type")

    # ---------------------------------------------------- type declarations

    def declare_type(self, name, ty, ctx, loc, is_typedef=False):
        ctx.scope.declare(name, ty, loc)
        if ctx.kind == "top":
            self.declarations.append(ir.TypeDeclRef(name, ty, is_typedef, loc))

    def fields(self, children, ctx, header: bool):
        result = []
        names = set()
        for f in children:
            anns, rest = self.split_annotations(f.children, ctx)
            floc = self.loc(f, ctx)
            ftype = self.resolve_type(rest[0], ctx)
            if isinstance(f, Tree) and f.data == "array_field":   # C-style `T name[N]`
                ftype = self.array_of(ftype, self.expr(rest[2], ctx), floc)
            fname = tok_value(rest[1])
            if fname in names:
                raise P4Error(floc, f"duplicate field '{fname}'")
            names.add(fname)
            st = ir.strip_newtype(ftype)
            if header:
                ok = isinstance(st, (ir.BitT, ir.VarbitT, ir.BoolT)) or (
                    isinstance(st, ir.EnumT) and st.underlying is not None)
                ok = ok or _bit_struct(st)   # P4 allows a struct of bit-strings here
                ok = ok or (isinstance(st, ir.ArrayT) and _bit_array(st))   # and an array of them
                ok = ok or isinstance(st, ir.TypeParamT)   # a generic header's parameter, bound later
                if not ok:
                    raise P4Error(floc, f"header field '{fname}' cannot have type {ir.type_str(ftype)}")
            elif isinstance(st, (ir.ExternT, ir.ParserT, ir.ControlT, ir.IntLitT)) or isinstance(ftype, BlockTemplate):
                raise P4Error(floc, f"field '{fname}' cannot have type {ir.type_str(ftype)}")
            result.append(ir.Field(fname, ftype, anns, floc))
        return result

    def _struct_like(self, t, ctx, loc, cls, header):
        anns, rest = self.split_annotations(t.children, ctx)
        name = str(rest[0])
        if len(rest) > 1 and isinstance(rest[1], Tree) and rest[1].data == "type_params":
            params = [tok_value(p.children[0] if isinstance(p, Tree) else p) for p in rest[1].children]
            template = GenericTypeTemplate(cls, name, params, rest[2:], anns, loc)
            template.specialise = lambda args, at: self.specialise_type(template, args, ctx.scope, at)
            ctx.scope.declare(name, template, loc)
            return template
        ty = cls(name, [], anns, loc)
        ctx.scope.declare(name, ty, loc)       # allow self-reference errors to be clear
        ty.fields = self.fields(rest[1:], ctx, header)
        self._check_struct_like(ty, cls, loc)
        if ctx.kind == "top":
            self.declarations.append(ir.TypeDeclRef(name, ty, False, loc))
        return ty

    def specialise_type(self, template: GenericTypeTemplate, args: list, scope: Scope, loc) -> ir.StructLikeT:
        """`S<A, B>` of a generic struct/header S: its fields with the type
        parameters bound, one type per distinct argument list."""
        if len(args) != len(template.type_params):
            raise P4Error(loc, f"{template.name} takes {len(template.type_params)} type arguments, got {len(args)}")
        for known in template.instances:
            if all(T.same_type(a, b) for a, b in zip(known.origin[1], args)):
                return known
        suffix = "_".join(re.sub(r"\W", "", ir.type_str(a)) for a in args)
        ty = template.kind(f"{template.name}_{suffix}", [], template.annotations, template.loc,
                           origin=(template, list(args)))
        template.instances.append(ty)
        inner = Scope(scope)
        for p, a in zip(template.type_params, args):
            inner.declare(p, a, template.loc)
        ty.fields = self.fields(template.field_trees, Ctx(inner), template.kind is ir.HeaderT)
        self._check_struct_like(ty, template.kind, template.loc)
        return ty

    def _check_struct_like(self, ty, cls, loc):
        name = ty.name
        if cls is ir.UnionT:
            for f in ty.fields:
                if not isinstance(ir.strip_newtype(f.type), ir.HeaderT):
                    raise P4Error(f.loc, f"header_union member '{f.name}' must be a header")
        if cls is ir.HeaderT and sum(1 for f in ty.fields if isinstance(f.type, ir.VarbitT)) > 1:
            raise P4Error(loc, f"header {name} has more than one varbit field")

    def _d_header_decl(self, t, ctx, loc):
        return self._struct_like(t, ctx, loc, ir.HeaderT, True)

    def _d_header_union_decl(self, t, ctx, loc):
        return self._struct_like(t, ctx, loc, ir.UnionT, False)

    def _d_struct_decl(self, t, ctx, loc):
        return self._struct_like(t, ctx, loc, ir.StructT, False)

    def _d_enum_decl(self, t, ctx, loc):
        anns, rest = self.split_annotations(t.children, ctx)
        name = str(rest[0])
        members = [tok_value(m) for m in rest[1].children]
        if len(set(members)) != len(members):
            raise P4Error(loc, f"enum {name} has duplicate members")
        ty = ir.EnumT(name, members, None, {}, anns)
        self.declare_type(name, ty, ctx, loc)
        return ty

    def _d_ser_enum_decl(self, t, ctx, loc):
        anns, rest = self.split_annotations(t.children, ctx)
        under = self.resolve_type(rest[0], ctx)
        name = str(rest[1])
        if not isinstance(ir.strip_newtype(under), ir.BitT):
            raise P4Error(loc, f"serializable enum {name} needs a bit<W> or int<W> underlying type")
        under = ir.strip_newtype(under)
        values = {}
        for m in rest[2].children:
            mname = tok_value(m.children[0])
            v = self.expr(m.children[1], ctx, under)
            if not isinstance(v, ir.Const):
                raise P4Error(self.loc(m, ctx), f"enum member {mname} needs a constant value")
            if mname in values:
                raise P4Error(self.loc(m, ctx), f"enum {name} has duplicate member {mname}")
            values[mname] = v.value
        ty = ir.EnumT(name, list(values), under, values, anns)
        self.declare_type(name, ty, ctx, loc)
        return ty

    def _d_error_decl(self, t, ctx, loc):
        for m in t.children[0].children:
            name = tok_value(m)
            if name in self.error_type.members:
                raise P4Error(self.loc(m, ctx), f"duplicate error '{name}'")
            self.error_type.members.append(name)
        if not any(isinstance(d, ir.TypeDeclRef) and d.name == "error" for d in self.declarations):
            self.declarations.append(ir.TypeDeclRef("error", self.error_type, False, loc))

    def _d_match_kind_decl(self, t, ctx, loc):
        for m in t.children[0].children:
            name = tok_value(m)
            if name in self.match_kind_type.members:
                raise P4Error(self.loc(m, ctx), f"duplicate match_kind '{name}'")
            self.match_kind_type.members.append(name)
            self.top.declare(name, ir.ConstDecl(name, self.match_kind_type,
                                                ir.Const(len(self.match_kind_type.members) - 1,
                                                         type=self.match_kind_type, loc=loc), [], loc), loc)

    def _d_typedef_decl(self, t, ctx, loc):
        anns, rest = self.split_annotations(t.children, ctx)
        target, name_tok = rest[0], rest[1]
        if target.data in ("header_decl", "header_union_decl", "struct_decl", "enum_decl", "ser_enum_decl"):
            ty = getattr(self, "_d_" + target.data)(target, ctx, self.loc(target, ctx))
        else:
            ty = self.resolve_type(target, ctx)
        if isinstance(ty, BlockTemplate):
            # another name for the parser/control type (no P4Info type_info entry)
            ctx.scope.declare(str(name_tok), ty, loc)
            return
        if isinstance(ty, ir.ExternT):
            ty = ir.ExternT(ty.decl, ty.type_args, typedef=str(name_tok))
        self.declare_type(str(name_tok), ty, ctx, loc, is_typedef=True)

    def _d_newtype_decl(self, t, ctx, loc):
        anns, rest = self.split_annotations(t.children, ctx)
        base = self.resolve_type(rest[0], ctx)
        if not isinstance(ir.strip_newtype(base), (ir.BitT, ir.BoolT)) and not isinstance(base, ir.NewT):
            raise P4Unsupported(loc, f"type declaration over {ir.type_str(base)}")
        name = str(rest[1])
        self.declare_type(name, ir.NewT(name, base, anns), ctx, loc)

    # -------------------------------------------------------------- consts

    def const_decl(self, t, ctx):
        anns, rest = self.split_annotations(t.children, ctx)
        loc = self.loc(t, ctx)
        ctype = self.resolve_type(rest[0], ctx)
        name = tok_value(rest[1])
        value = self.expr(rest[2], ctx, ctype)
        if not isinstance(value, ir.Const) and not _constant_aggregate(value):
            raise P4Error(loc, f"the value of constant '{name}' is not a compile-time constant")
        decl = ir.ConstDecl(name, ctype, value, anns, loc)
        ctx.scope.declare(name, decl, loc)
        return decl

    def _d_const_decl(self, t, ctx, loc):
        self.declarations.append(self.const_decl(t, ctx))

    # -------------------------------------------------------------- params

    def params(self, tree, ctx) -> list[ir.Param]:
        result = []
        names = set()
        for p in tree.children:
            anns, rest = self.split_annotations(p.children, ctx)
            direction = ""
            if isinstance(rest[0], Tree) and rest[0].data == "direction":
                direction = str(rest[0].children[0])
                rest = rest[1:]
            ploc = self.loc(p, ctx)
            ptype = self.resolve_type(rest[0], ctx)
            if isinstance(ptype, BlockTemplate):
                ptype = self.block_type(ptype)
            name = tok_value(rest[1])
            if name in names:
                raise P4Error(ploc, f"duplicate parameter '{name}'")
            names.add(name)
            default = self.expr(rest[2], ctx) if len(rest) > 2 else None
            optional = ir.find_annotation(anns, "optional") is not None
            result.append(ir.Param(name, ptype, direction, default, optional, anns, ploc))
        return result

    def type_param_scope(self, tree, ctx):
        """A scope binding the names of a `<T, U>` list to TypeParamT."""
        scope = Scope(ctx.scope)
        names = []
        if tree is not None:
            for tp in tree.children:
                n = tok_value(tp)
                scope.declare(n, ir.TypeParamT(n), self.loc(tp, ctx))
                names.append(n)
        return scope, names

    # -------------------------------------------------------------- externs

    def _d_extern_object(self, t, ctx, loc):
        anns, rest = self.split_annotations(t.children, ctx)
        name = str(rest[0])
        tp_tree = rest[1] if len(rest) > 1 and isinstance(rest[1], Tree) and rest[1].data == "type_params" else None
        decl = ir.ExternDecl(name, [], [], anns, loc)
        ctx.scope.declare(name, decl, loc)
        scope, decl.type_params = self.type_param_scope(tp_tree, ctx)
        ectx = ctx.child(scope, kind="extern")
        for m in rest[1 + (tp_tree is not None):]:
            decl.methods.append(self.method(m, ectx, name))
        self.declarations.append(decl)

    def method(self, m, ctx, extern_name) -> ir.ExternMethod:
        anns, rest = self.split_annotations(m.children, ctx)
        loc = self.loc(m, ctx)
        if m.data == "constructor":
            if str(rest[0]) != extern_name:
                raise P4Error(loc, f"constructor name {rest[0]} does not match extern {extern_name}")
            return ir.ExternMethod(extern_name, self.params(rest[1], ctx), ir.VoidT(), [], anns, False, loc)
        proto = rest[0]
        name, params, rt, tps = self.function_proto(proto, ctx)
        return ir.ExternMethod(name, params, rt, tps, anns, m.data == "abstract_method", loc)

    def function_proto(self, proto, ctx):
        ch = list(proto.children)
        if proto.data == "void_function_proto":
            rtree = None
        else:
            rtree, ch = ch[0], ch[1:]
        name = tok_value(ch[0])
        tp_tree = ch[1] if len(ch) > 2 else None
        scope, tps = self.type_param_scope(tp_tree, ctx)
        inner = ctx.child(scope)
        rt = ir.VoidT() if rtree is None else self.resolve_type(rtree, inner)
        params = self.params(ch[-1], inner)
        return name, params, rt, tps

    def _d_extern_function(self, t, ctx, loc):
        anns, rest = self.split_annotations(t.children, ctx)
        name, params, rt, tps = self.function_proto(rest[0], ctx)
        decl = ir.ExternFunctionDecl(name, params, rt, tps, anns, loc)
        existing = ctx.scope.lookup_local(name)
        if existing is not None and not isinstance(existing, Overloads):
            raise P4Error(loc, f"duplicate declaration of '{name}'")
        ctx.scope.declare(name, Overloads(name, [decl]), loc)
        self.declarations.append(decl)

    def _d_package_decl(self, t, ctx, loc):
        anns, rest = self.split_annotations(t.children, ctx)
        name = str(rest[0])
        tp_tree = rest[1] if len(rest) > 2 else None
        scope, tps = self.type_param_scope(tp_tree, ctx)
        params = self.params(rest[-1], ctx.child(scope))
        decl = ir.PackageDecl(name, params, tps, anns, loc)
        ctx.scope.declare(name, decl, loc)
        self.declarations.append(decl)

    # ------------------------------------------------ actions and functions

    def action_decl(self, t, ctx) -> ir.ActionDecl:
        anns, rest = self.split_annotations(t.children, ctx)
        loc = self.loc(t, ctx)
        name = tok_value(rest[0])
        scope = Scope(ctx.scope)
        actx = ctx.child(scope, kind="action")
        params = self.params(rest[1], actx)
        seen_directionless = False
        for p in params:
            if p.direction == "":
                seen_directionless = True
            elif seen_directionless:
                raise P4Error(p.loc, f"action {name}: directional parameters must come before action data")
            st = ir.strip_newtype(p.type)
            if isinstance(st, (ir.ExternT, ir.ParserT, ir.ControlT)):
                raise P4Error(p.loc, f"action parameter '{p.name}' cannot have type {ir.type_str(p.type)}")
            scope.declare(p.name, p, p.loc)
        decl = ir.ActionDecl(name, params, ir.Block(), anns,
                             control_plane_name(anns, name, ctx.prefix), loc)
        ctx.scope.declare(name, decl, loc)
        decl.body = self.block(rest[2], actx, new_scope=True)
        return decl

    def _d_action_decl(self, t, ctx, loc):
        self.declarations.append(self.action_decl(t, ctx))

    def function_decl(self, t, ctx) -> ir.FunctionDecl:
        anns, rest = self.split_annotations(t.children, ctx)
        loc = self.loc(t, ctx)
        name, params, rt, tps = self.function_proto(rest[0], ctx)
        if tps:
            raise P4Unsupported(loc, f"generic function {name}")
        scope = Scope(ctx.scope)
        for p in params:
            scope.declare(p.name, p, p.loc)
        decl = ir.FunctionDecl(name, params, rt, ir.Block(), anns, loc)
        ctx.scope.declare(name, decl, loc)
        fctx = ctx.child(scope, kind="function", return_type=rt)
        decl.body = self.block(rest[1], fctx, new_scope=True)
        if not isinstance(rt, ir.VoidT) and not _always_returns(decl.body):
            raise P4Error(loc, f"function {name} does not return a value on every path")
        return decl

    def _d_function_decl(self, t, ctx, loc):
        self.declarations.append(self.function_decl(t, ctx))

    # ------------------------------------------------- parsers and controls

    def _block_header(self, header, ctx, kind):
        anns, rest = self.split_annotations(header.children, ctx)
        name = str(rest[0])
        tp_tree = rest[1] if len(rest) > 2 else None
        scope, tps = self.type_param_scope(tp_tree, ctx)
        params = self.params(rest[-1], ctx.child(scope))
        return name, anns, tps, params

    def _d_parser_type_decl(self, t, ctx, loc):
        name, anns, tps, params = self._block_header(t.children[0], ctx, "parser")
        ctx.scope.declare(name, BlockTemplate("parser", name, params, [], tps, anns, None, loc), loc)

    def _d_control_type_decl(self, t, ctx, loc):
        name, anns, tps, params = self._block_header(t.children[0], ctx, "control")
        ctx.scope.declare(name, BlockTemplate("control", name, params, [], tps, anns, None, loc), loc)

    @staticmethod
    def block_type(template: BlockTemplate) -> ir.Type:
        """ParserT/ControlT for a parser/control *type* used as a parameter
        type (package parameters, constructor parameters).  Its decl is a
        body-less ParserDecl/ControlDecl carrying the apply parameters, made
        once per template so that every use shares it."""
        if template.type_decl is None:
            if template.kind == "parser":
                template.type_decl = ir.ParserDecl(template.name, template.params, template.ctor_params,
                                                   annotations=template.annotations, loc=template.loc)
            else:
                template.type_decl = ir.ControlDecl(template.name, template.params, template.ctor_params,
                                                    apply=ir.Block(loc=template.loc),
                                                    annotations=template.annotations, loc=template.loc)
        decl = template.type_decl
        return ir.ParserT(decl) if template.kind == "parser" else ir.ControlT(decl)

    def _block_decl(self, t, ctx, loc, kind):
        name, anns, tps, params = self._block_header(t.children[0], ctx, kind)
        if tps:
            raise P4Unsupported(loc, f"generic {kind} declaration {name}<...>")
        ctor_params = []
        if len(t.children) > 1 and isinstance(t.children[1], Tree) and t.children[1].data == "ctor_params":
            ctor_params = self.params(t.children[1].children[0], ctx)
            for p in ctor_params:
                if p.direction:
                    raise P4Error(p.loc, f"constructor parameter '{p.name}' of {name} cannot have a direction")
                if isinstance(p.type, ir.ParserT) and kind == "control":
                    raise P4Error(p.loc, f"a control cannot take a parser ('{p.name}') as a constructor argument")
        template = BlockTemplate(kind, name, params, ctor_params, [], anns, t, loc)
        ctx.scope.declare(name, template, loc)
        self.declarations.append(template)     # replaced by the lowered decl at the end

    def _d_parser_decl(self, t, ctx, loc):
        self._block_decl(t, ctx, loc, "parser")

    def _d_control_decl(self, t, ctx, loc):
        self._block_decl(t, ctx, loc, "control")

    def specialise(self, template: BlockTemplate, ctor_args: list, prefix: str, loc):
        """Lower the body of a parser/control for one instance."""
        scope = Scope(self.top, kind=template.kind)
        for p, a in zip(template.ctor_params, ctor_args):
            if isinstance(a, ir.Instance):
                # a parser/control/extern instance passed by the instantiator:
                # the body refers to that very object (p4c: one instance
                # shared by every control it is passed to)
                scope.declare(p.name, a, p.loc)
            else:
                scope.declare(p.name, ir.ConstDecl(p.name, p.type, a, [], p.loc), p.loc)
        params = [replace(p) for p in template.params]
        for p in params:
            scope.declare(p.name, p, p.loc)
        ctx = Ctx(scope, kind=template.kind, prefix=prefix, applied_tables={})
        ctx.last_loc = loc
        body = template.tree.children[1:]
        if body and isinstance(body[0], Tree) and body[0].data == "ctor_params":
            body = body[1:]
        if template.kind == "parser":
            decl = ir.ParserDecl(template.name, params, template.ctor_params, [], [], [],
                                 template.annotations, template.loc)
            self.parser_body(decl, body, ctx)
        else:
            decl = ir.ControlDecl(template.name, params, template.ctor_params, [], [], ir.Block(),
                                  template.annotations, template.loc)
            self.control_body(decl, body, ctx)
        template.instances.append(decl)
        return decl

    def local_declaration(self, d, decl, ctx, allowed):
        data = d.data
        loc = self.loc(d, ctx)
        ctx.last_loc = loc
        if data not in allowed:
            raise P4Error(loc, f"{data.replace('_', ' ')} is not allowed in a {ctx.kind}")
        if data == "const_decl":
            self.const_decl(d, ctx)
        elif data == "variable_decl":
            stmt = self.local_variable(d, ctx)
            decl.locals.append(stmt.var)
            decl.local_inits.append(stmt)
        elif data in ("instantiation", "instantiation_with_body"):
            decl.locals.append(self.instantiation(d, ctx, loc))
        elif data == "value_set_decl":
            decl.locals.append(self.value_set(d, ctx, loc))
        elif data == "action_decl":
            decl.locals.append(self.action_decl(d, ctx))
        elif data == "table_decl":
            decl.locals.append(self.table_decl(d, ctx))
        elif data == "function_decl":
            decl.locals.append(self.function_decl(d, ctx))

    def control_body(self, decl: ir.ControlDecl, body, ctx):
        allowed = {"const_decl", "variable_decl", "instantiation", "instantiation_with_body",
                   "action_decl", "table_decl", "function_decl", "value_set_decl"}
        for d in body[:-1]:
            if d.data == "value_set_decl":
                raise P4Error(self.loc(d, ctx), "value_set is only allowed in a parser")
            self.local_declaration(d, decl, ctx, allowed)
        decl.apply = self.block(body[-1], ctx, new_scope=True)

    def parser_body(self, decl: ir.ParserDecl, body, ctx):
        allowed = {"const_decl", "variable_decl", "instantiation", "instantiation_with_body", "value_set_decl"}
        states = [d for d in body if isinstance(d, Tree) and d.data == "parser_state"]
        for d in body:
            if not (isinstance(d, Tree) and d.data == "parser_state"):
                self.local_declaration(d, decl, ctx, allowed)
        names = {}
        for s in states:
            anns, rest = self.split_annotations(s.children, ctx)
            sname = tok_value(rest[0])
            if sname in names:
                raise P4Error(self.loc(s, ctx), f"duplicate state '{sname}'")
            if sname in ("accept", "reject"):
                raise P4Error(self.loc(s, ctx), f"state '{sname}' is built in and cannot be declared")
            names[sname] = s
        if "start" not in names:
            raise P4Error(decl.loc, f"parser {decl.name} has no 'start' state")
        for s in states:
            decl.states.append(self.parser_state(s, ctx, names))

    def parser_state(self, s, ctx, names) -> ir.ParserState:
        anns, rest = self.split_annotations(s.children, ctx)
        loc = self.loc(s, ctx)
        name = tok_value(rest[0])
        sctx = ctx.child(Scope(ctx.scope))
        stmts = []
        transition = "reject"
        body = rest[1:]
        if body and isinstance(body[-1], Tree) and body[-1].data in ("transition_direct", "transition_select"):
            tr = body[-1]
            body = body[:-1]
        else:
            tr = None
        for st in body:
            r = self.statement(st, sctx)
            if r is not None:
                stmts.append(r)
        if tr is not None:
            if tr.data == "transition_direct":
                transition = self.state_name(tr.children[0], names, sctx)
            else:
                transition = self.select(tr.children[0], sctx, names)
        return ir.ParserState(name, stmts, transition, anns, loc)

    def state_name(self, tree, names, ctx) -> str:
        n = tok_value(tree)
        if n not in names and n not in ("accept", "reject"):
            raise P4Error(self.loc(tree, ctx), f"unknown parser state '{n}'")
        return n

    def select(self, t, ctx, names) -> ir.Select:
        loc = self.loc(t, ctx)
        has_keys = bool(t.children) and getattr(t.children[0], "data", None) == "arg_exprs"
        keys = [self.expr(k, ctx) for k in t.children[0].children] if has_keys else []
        for k in keys:
            if isinstance(k.type, ir.IntLitT):
                raise P4Error(k.loc, "a select key needs a width")
        cases = []
        for c in t.children[1:] if has_keys else t.children:   # `select()`: only default applies
            ks = self.keyset(c.children[0], keys, ctx, allow_value_set=True)
            cases.append((ks, self.state_name(c.children[1], names, ctx)))
        return ir.Select(keys, cases, loc)

    def value_set(self, d, ctx, loc) -> ir.ValueSetDecl:
        anns, rest = self.split_annotations(d.children, ctx)
        etype = self.type_arg(rest[0], ctx)
        size = self.expr(rest[1], ctx)
        if not isinstance(size, ir.Const) or not isinstance(size.value, int):
            raise P4Error(loc, "value_set size must be a constant")
        name = tok_value(rest[2])
        vs = ir.ValueSetDecl(name, etype, size.value, anns, control_plane_name(anns, name, ctx.prefix), loc)
        ctx.scope.declare(name, vs, loc)
        return vs

    # ------------------------------------------------------- instantiation

    def _d_instantiation(self, t, ctx, loc):
        inst = self.instantiation(t, ctx, loc)
        self.declarations.append(inst)
        if inst.name == "main":
            self.main = inst

    def _d_instantiation_with_body(self, t, ctx, loc):
        raise P4Unsupported(loc, "extern instance with abstract method implementations")

    def instantiation(self, t, ctx, loc) -> ir.Instance:
        if t.data == "instantiation_with_body":
            raise P4Unsupported(loc, "extern instance with abstract method implementations")
        anns, rest = self.split_annotations(t.children, ctx)
        type_tree, args_tree, name_tree = rest[0], rest[1], rest[2]
        name = tok_value(name_tree)
        inst = self.make_instance(type_tree, list(args_tree.children), name, anns, ctx, loc)
        ctx.scope.declare(name, inst, loc)
        return inst

    def instantiate_expr(self, t, ctx, loc) -> ir.Instance:
        """`T(args)` as an expression: an anonymous instance (package
        arguments, `implementation = action_profile(128)`)."""
        type_tree, args_tree = t.children
        base_tree = type_tree.children[0] if type_tree.data == "specialized_type" else type_tree
        name = tok_value(base_tree)
        inst = self.make_instance(type_tree, list(args_tree.children), name, [], ctx, loc, anonymous=True)
        return inst

    def instantiate_block_type(self, type_tree, args, name, ctx, loc, implicit=False):
        inst = self.make_instance(type_tree, args, name, [], ctx, loc, anonymous=implicit)
        return inst

    def make_instance(self, type_tree, arg_trees, name, anns, ctx, loc, anonymous=False) -> ir.Instance:
        ty = self.resolve_type(type_tree, ctx)
        if isinstance(ty, BlockTemplate):
            if not ty.has_body:
                raise P4Error(loc, f"cannot instantiate {ty.kind} type {ty.name}: it has no body")
            if ctx.kind not in ("top", "control", "parser"):
                raise P4Error(loc, f"cannot instantiate {ty.name} here")
            if ctx.kind in ("control", "parser") and ctx.kind != ty.kind:
                raise P4Error(loc, f"a {ty.kind} cannot be instantiated inside a {ctx.kind}")
            args = self.bind_args(ty.ctor_params, arg_trees, ctx, loc, f"{ty.name} constructor", {})
            for a in args:
                if not isinstance(a, (ir.Const, ir.Instance)):
                    raise P4Error(a.loc, f"{ty.name} constructor arguments must be compile-time constants")
            if ctx.kind == "top":
                prefix = (ty.name if anonymous else control_plane_name(anns, name, "")) + "."
            else:
                prefix = control_plane_name(anns, name, ctx.prefix) + "."
            decl = self.specialise(ty, args, prefix, loc)
            itype = ir.ParserT(decl) if ty.kind == "parser" else ir.ControlT(decl)
            return ir.Instance(name, itype, args, anns, prefix[:-1], loc)
        if isinstance(ty, ir.ExternT):
            decl = ty.decl
            ctors = decl.constructors()
            if not ctors:
                raise P4Error(loc, f"extern {decl.name} has no constructor")
            ctor = self.pick_overload(ctors, arg_trees, loc, f"{decl.name} constructor")
            bindings = {p: a for p, a in zip(decl.type_params, ty.type_args) if not isinstance(a, ir.TypeParamT)}
            args = self.bind_args(ctor.params, arg_trees, ctx, loc, f"{decl.name} constructor", bindings)
            targs = [bindings.get(p) for p in decl.type_params]
            if any(a is None for a in targs):
                missing = [p for p, a in zip(decl.type_params, targs) if a is None]
                raise P4Error(loc, f"{decl.name}: cannot infer type argument(s) {', '.join(missing)}; "
                                   f"write {decl.name}<...>(...)")
            for a in args:
                if not isinstance(a, (ir.Const, ir.ListExpr, ir.StructExpr, ir.DontCare)):
                    raise P4Error(a.loc, f"{decl.name} constructor arguments must be compile-time constants")
            if ctx.kind not in ("top", "control", "parser"):
                raise P4Error(loc, f"cannot instantiate {decl.name} here")
            cp = control_plane_name(anns, name, ctx.prefix) if not anonymous else ""
            return ir.Instance(name, ir.ExternT(decl, targs, typedef=ty.typedef), args, anns, cp, loc)
        if isinstance(ty, ir.PackageT):
            pkg = ty.decl
            if ctx.kind != "top":
                raise P4Error(loc, "packages can only be instantiated at the top level")
            if pkg.name != "V1Switch":
                raise P4Unsupported(loc, UNSUPPORTED_PACKAGES.get(pkg.name, f"package {pkg.name} (only V1Switch)"))
            if len(arg_trees) != len(pkg.params):
                raise P4Error(loc, f"{pkg.name} takes {len(pkg.params)} arguments, got {len(arg_trees)}")
            arg_trees = self.package_args_in_order(pkg, arg_trees, ctx, loc)
            args = []
            bindings: dict = {}
            for p, a in zip(pkg.params, arg_trees):
                e = self._expr(a, ctx)
                inst = e if isinstance(e, ir.Instance) else (e.target if isinstance(e, ir.InstanceRef) else None)
                if inst is None:
                    raise P4Error(self.loc(a, ctx), f"{pkg.name} argument '{p.name}' must be a parser or control instance")
                want = ir.strip_newtype(p.type)
                kind_ok = (isinstance(want, ir.ParserT) and isinstance(inst.type, ir.ParserT)) or \
                          (isinstance(want, ir.ControlT) and isinstance(inst.type, ir.ControlT))
                if not kind_ok:
                    raise P4Error(inst.loc, f"{pkg.name} argument '{p.name}' must be a "
                                            f"{'parser' if isinstance(want, ir.ParserT) else 'control'}")
                self.check_block_signature(inst, want, p, bindings)
                args.append(inst)
            return ir.Instance(name, ty, args, anns, "", loc)
        raise P4Error(loc, f"{ir.type_str(ty)} cannot be instantiated")

    def package_args_in_order(self, pkg, arg_trees, ctx, loc) -> list:
        """Package arguments in parameter order: `V1Switch(p = P(), ...)`
        names them (all or none, as for any call; p4c reorders them)."""
        named = [a for a in arg_trees if isinstance(a, Tree) and a.data in ("named_arg", "named_dontcare")]
        if not named:
            return arg_trees
        if len(named) != len(arg_trees):
            raise P4Error(loc, f"{pkg.name}: either all arguments are named or none")
        index = {p.name: i for i, p in enumerate(pkg.params)}
        ordered: list = [None] * len(pkg.params)
        for a in named:
            pname = tok_value(a.children[0])
            if a.data == "named_dontcare" or pname not in index:
                raise P4Error(self.loc(a, ctx), f"{pkg.name} has no parameter named '{pname}'"
                              if pname not in index else f"{pkg.name} argument '{pname}' cannot be '_'")
            if ordered[index[pname]] is not None:
                raise P4Error(self.loc(a, ctx), f"{pkg.name}: parameter '{pname}' given twice")
            ordered[index[pname]] = a.children[1]
        return ordered

    @staticmethod
    def placeholder_arg(p: ir.Param):
        """A stand-in constructor argument for a declaration nobody
        instantiates (lowered only to report its errors)."""
        if isinstance(ir.strip_newtype(p.type), (ir.ParserT, ir.ControlT, ir.ExternT)):
            return ir.Instance(p.name, p.type, [], [], "", p.loc)
        return ir.Const(0, type=p.type, loc=p.loc)

    def check_block_signature(self, inst, want, param, bindings):
        """The instance's apply parameters must match the architecture's;
        the package's type parameters (V1Switch<H, M>) must bind to the
        same types in every block."""
        expected = want.decl.params
        got = inst.type.decl.params
        if len(expected) != len(got):
            raise P4Error(inst.loc, f"{inst.type.decl.name} has {len(got)} parameters, "
                                    f"{param.name} of V1Switch needs {len(expected)}")
        for e, g in zip(expected, got):
            if e.direction != g.direction:
                # p4c (TypeUnification::unifyFunctions) unifies a block with
                # the package's parameter type only if every direction is
                # equal: an `in` where v1model says `inout` is an error there
                # too (old samples were written for an older v1model.p4).
                raise P4Error(g.loc, f"parameter '{g.name}' of {inst.type.decl.name} must be "
                                     f"{e.direction or 'directionless'} as in {want.decl.name}, "
                                     f"not {g.direction or 'directionless'}")
            if isinstance(e.type, ir.TypeParamT):
                bound = bindings.setdefault(e.type.name, (g.type, inst))
                if not T.same_type(bound[0], g.type):
                    raise P4Error(g.loc, f"parameter '{g.name}' of {inst.type.decl.name} has type "
                                         f"{ir.type_str(g.type)}, but {bound[1].type.decl.name} uses "
                                         f"{ir.type_str(bound[0])} for {e.type.name}")
            elif not T.same_type(e.type, g.type):
                raise P4Error(g.loc, f"parameter '{g.name}' of {inst.type.decl.name} must have type "
                                     f"{ir.type_str(e.type)}, not {ir.type_str(g.type)}")

    def note_table_apply(self, table, ctx, loc):
        """Record apply() of a table (p4c forbids applying it twice per
        pass only at run time; static double apply is allowed in branches)."""
        if ctx.applied_tables is not None:
            ctx.applied_tables.setdefault(id(table), loc)

    # ---------------------------------------------------------- finishing

    def finish(self) -> None:
        """Lower parser/control declarations never instantiated (so that
        their errors are reported) and put the lowered decls in order."""
        final = []
        for d in self.declarations:
            if isinstance(d, BlockTemplate):
                if not d.instances:
                    self.specialise(d, [self.placeholder_arg(p) for p in d.ctor_params], d.name + ".", d.loc)
                final.append(d.instances[0])
            else:
                final.append(d)
        self.declarations = final


def _constant_aggregate(e) -> bool:
    """A struct/header/tuple value built only of constants (p4c accepts
    `const S c = {...}` and substitutes the value at every use)."""
    if isinstance(e, ir.ListExpr):
        return all(isinstance(i, ir.Const) or _constant_aggregate(i) for i in e.items)
    if isinstance(e, ir.StructExpr):
        return all(isinstance(v, ir.Const) or _constant_aggregate(v) for v in e.fields.values())
    return False


def _always_returns(stmt) -> bool:
    if isinstance(stmt, ir.Return):
        return True
    if isinstance(stmt, ir.Exit):
        return True
    if isinstance(stmt, ir.Block):
        return any(_always_returns(s) for s in stmt.stmts)
    if isinstance(stmt, ir.If):
        return stmt.otherwise is not None and _always_returns(stmt.then) and _always_returns(stmt.otherwise)
    if isinstance(stmt, ir.Switch):
        return any(c.labels == ["default"] for c in stmt.cases) and all(
            c.body is not None and _always_returns(c.body) for c in stmt.cases)
    return False


def lower(tree, source: Source) -> ir.Program:
    lw = Lowerer(source)
    lw.program_tree = tree
    program = lw.program(tree)
    lw.finish()
    program.declarations = lw.declarations
    return program


def _bit_array(t: ir.ArrayT) -> bool:
    """An array whose elements are bit<W>/int<W>, bool, serializable enums, bit structs or such
    arrays: fixed-width values, laid out one after the other in a header."""
    e = ir.strip_newtype(t.element)
    return (isinstance(e, (ir.BitT, ir.BoolT)) or (isinstance(e, ir.EnumT) and e.underlying is not None)
            or _bit_struct(e) or (isinstance(e, ir.ArrayT) and _bit_array(e)))


def _bit_struct(t) -> bool:
    """A struct whose fields are bit<W>/int<W>, bool or serializable enums,
    or such structs: what p4c allows as the type of a header field
    (TypeInference's onlyBitsOrBitStructs)."""
    if not isinstance(t, ir.StructT):
        return False
    for f in t.fields:
        ft = ir.strip_newtype(f.type)
        if not (isinstance(ft, (ir.BitT, ir.BoolT)) or (isinstance(ft, ir.EnumT) and ft.underlying is not None)
                or _bit_struct(ft)):
            return False
    return True
