"""Lexical scopes and the front end's own (non-IR) entities.

Why: P4 has one namespace per scope for types and values (an inner name
shadows an outer one; `.x` names the top level).  Some named things only
exist while lowering (overload sets of extern functions, parser/control
declarations not yet specialised) and never reach the IR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir


@dataclass(eq=False)
class Overloads:
    """All extern functions (or all top-level functions) of one name."""

    name: str
    decls: list = field(default_factory=list)


@dataclass(eq=False)
class BlockTemplate:
    """A parser or control declaration before specialisation.
    `tree` is the lark tree of the declaration (None for a type
    declaration without body, e.g. v1model's `control Ingress<H, M>(...)`).
    `params`/`ctor_params` are lowered once (they do not depend on the
    instance); the body is lowered per instance."""

    kind: str                 # 'parser' | 'control'
    name: str
    params: list
    ctor_params: list
    type_params: list
    annotations: list
    tree: object
    loc: ir.Loc
    instances: list = field(default_factory=list)   # specialised decls, in order
    type_decl: object = None  # body-less ir.ParserDecl/ControlDecl naming the type (params only)

    @property
    def has_body(self) -> bool:
        return self.tree is not None


class Scope:
    """One level of names; lookups walk outwards."""

    __slots__ = ("names", "parent", "kind")

    def __init__(self, parent: "Scope | None" = None, kind: str = "block") -> None:
        self.names: dict[str, object] = {}
        self.parent = parent
        self.kind = kind

    def declare(self, name: str, entity, loc) -> None:
        old = self.names.get(name)
        if old is not None:
            if isinstance(old, Overloads) and isinstance(entity, Overloads):
                old.decls.extend(entity.decls)
                return
            raise P4Error(loc, f"duplicate declaration of '{name}'")
        self.names[name] = entity

    def lookup(self, name: str):
        s = self
        while s is not None:
            v = s.names.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def lookup_local(self, name: str):
        return self.names.get(name)

    def top(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s


@dataclass(eq=False)
class GenericTypeTemplate:
    """A generic header, header_union or struct declaration (`struct S<T>
    { T f; }`).  Each distinct list of type arguments is specialised once
    (so that `S<bit<8>>` written twice is one type), named as p4c names it:
    `S_bit8`.  `specialise` is the lowerer's function that builds one."""

    kind: type                # ir.HeaderT | ir.UnionT | ir.StructT
    name: str
    type_params: list
    field_trees: list
    annotations: list
    loc: ir.Loc
    specialise: Callable | None = None
    instances: list = field(default_factory=list)   # specialised types, in order
