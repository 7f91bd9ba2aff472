"""Typed intermediate representation of a P4-16 program.

This is the contract between the front end (which produces it: parsing,
name resolution, type inference, constant folding, desugaring) and its
consumers (the compiler to executable Python, the P4Info generator, the STF
runner's name resolution).  Producers guarantee the *invariants* written in
each class docstring; consumers rely on them and never re-resolve names.

General invariants after the front end:

* Every Expr has `.type` set to a resolved Type (no typedef names left;
  typedefs are replaced by what they name, `type` declarations stay NewT).
* Every name in an expression is resolved to the object it denotes (a
  `Var`, `Param`, `ConstDecl` value folded into `Const`, an `Instance`, a
  `TableDecl`, an `ActionDecl`, ...): consumers never look names up.
* Compile-time-known values are folded to `Const` (enum members, error
  members, serializable-enum members, const declarations, arithmetic on
  constants, `minSizeInBits`/`minSizeInBytes` of fixed-size types,
  `lastIndex`, slices and casts of constants, ...).
* Integer literals whose width is inferred from context get that type;
  literals that remain arbitrary-precision have type `IntLitT`.
* Every node carries `loc` (file, line, column) of the source that made it,
  for error messages at run time as well as at load time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


# --------------------------------------------------------------------------
# Source locations and annotations


@dataclass(frozen=True)
class Loc:
    """A place in the preprocessed source, reported as file:line:col."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_LOC = Loc("<builtin>", 0, 0)


@dataclass
class Annotation:
    """`@name(...)`. `body` holds the raw token text inside the parentheses
    (P4 annotation bodies are unparsed token lists); `args` holds the
    parsed expression list when the body parses as expressions
    (e.g. `@name("x")` -> args == ["x"] as Python str/int values), else None.
    Structured annotations `@a[...]` (structured=True) put their key/values
    in `kv` or their expression list in `args`, constant expressions
    evaluated (`5 + 6` -> 11, `1 == 2` -> False)."""

    name: str
    body: str = ""
    args: Optional[list] = None
    kv: Optional[dict] = None
    loc: Loc = NO_LOC
    structured: bool = False


def find_annotation(annotations: list[Annotation], name: str) -> Optional[Annotation]:
    for annotation in annotations:
        if annotation.name == name:
            return annotation
    return None


# --------------------------------------------------------------------------
# Types


class Type:
    """Base of all resolved types.  Every subclass spells itself in P4
    (`str(t)`) so that error messages never show a Python repr."""

    def __str__(self) -> str:
        return type(self).__name__.removesuffix("T").lower()

    def bit_width(self) -> Optional[int]:
        """Width in bits for types with a fixed serialized width, else None."""
        return None


@dataclass(frozen=True)
class BitT(Type):
    """bit<W> (signed=False) or int<W> (signed=True)."""

    width: int
    signed: bool = False

    def bit_width(self) -> int:
        return self.width

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class VarbitT(Type):
    """varbit<MAX>; a value is (current width, value)."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class BoolT(Type):
    def bit_width(self) -> int:
        return 1

    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class IntLitT(Type):
    """Arbitrary-precision integer (an unsized literal or a const of one)."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class StringT(Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidT(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class DontCareT(Type):
    """Type of `_` when used as an expression argument (out param ignored)."""

    def __str__(self) -> str:
        return "_"


@dataclass(eq=False)
class ErrorT(Type):
    """The program's single `error` type; members in declaration order
    (core.p4's first).  Values are member indices (bmv2 numbering: the
    order of declaration, NoError = 0)."""

    members: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "error"


@dataclass(eq=False)
class MatchKindT(Type):
    members: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=False)
class EnumT(Type):
    """Plain enum: values are member indices (0..n-1) at run time, which is
    how bmv2 represents them.  `underlying` is set for serializable enums
    (`enum bit<8> E { A = 1 }`) and then `values` maps member -> integer."""

    name: str
    members: list[str]
    underlying: Optional[BitT] = None
    values: dict[str, int] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)

    def bit_width(self) -> Optional[int]:
        return self.underlying.width if self.underlying else None

    def __str__(self) -> str:
        return self.name


@dataclass
class Field:
    name: str
    type: Type
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class StructLikeT(Type):
    """Common shape of header, header_union and struct types.  `origin`:
    for a specialisation of a generic declaration (`struct S<T>` used as
    `S<bit<8>>`), the declaration's template and the type arguments."""

    name: str
    fields: list[Field]
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC
    origin: Optional[tuple] = None

    def field(self, name: str) -> Optional[Field]:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:   # compact: types are shared by many nodes
        return f"{type(self).__name__}({self.name!r})"


@dataclass(eq=False)
class HeaderT(StructLikeT):
    """A header: fields are BitT / VarbitT / BoolT / serializable EnumT /
    NewT of those, or StructT of BitT / BoolT / serializable EnumT (recursively).
    Has a validity bit."""

    def bit_width(self) -> Optional[int]:
        """Fixed width; for headers with a varbit, the width without it."""
        total = 0
        for f in self.fields:
            if isinstance(f.type, VarbitT):
                continue
            total += f.type.bit_width() or 0
        return total

    def has_varbit(self) -> bool:
        return any(isinstance(f.type, VarbitT) for f in self.fields)


@dataclass(eq=False)
class UnionT(StructLikeT):
    """header_union: every field is a HeaderT; at most one valid."""


@dataclass(eq=False)
class StructT(StructLikeT):
    """struct: fields of any type except extern/parser/control."""

    def bit_width(self) -> Optional[int]:
        total = 0
        for f in self.fields:
            w = f.type.bit_width()
            if w is None:
                return None
            total += w
        return total


@dataclass(frozen=True)
class StackT(Type):
    """H[size]: a header stack (or header-union stack)."""

    element: Type
    size: int

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(frozen=True)
class ArrayT(Type):
    """T[size] of a type other than a header or header union (P4-16 1.2.4 arrays): `size` values
    indexed from 0, with no validity, next/last or push/pop. In a header (of bit-strings) its
    elements are consecutive on the wire, element 0 first."""

    element: Type
    size: int

    def bit_width(self) -> Optional[int]:
        w = self.element.bit_width()
        return None if w is None else w * self.size

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(frozen=True)
class TupleT(Type):
    """tuple<...> and the type of a list expression `{a, b}`."""

    elements: tuple

    def __str__(self) -> str:
        return f"tuple<{', '.join(str(t) for t in self.elements)}>"

    def bit_width(self) -> Optional[int]:
        total = 0
        for t in self.elements:
            w = t.bit_width()
            if w is None:
                return None
            total += w
        return total


@dataclass(eq=False)
class NewT(Type):
    """`type bit<9> PortId_t;` — a distinct type over `base`.  Executes as
    its base; kept distinct for P4Info (`type_name`, @p4runtime_translation)."""

    name: str
    base: Type
    annotations: list[Annotation] = field(default_factory=list)

    def bit_width(self) -> Optional[int]:
        return self.base.bit_width()

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ExternT(Type):
    """Type of an extern object instance, with its type arguments bound
    (e.g. register<bit<32>> -> ExternT('register', [BitT(32)])).
    `typedef`: the typedef name the instance's type was written with, if
    any (p4c's P4Runtime serializer sees no extern through a typedef)."""

    decl: "ExternDecl"
    type_args: list[Type] = field(default_factory=list)
    typedef: str = ""

    def __str__(self) -> str:
        if self.type_args and not all(isinstance(a, TypeParamT) for a in self.type_args):
            return f"{self.decl.name}<{', '.join(str(a) for a in self.type_args)}>"
        return self.decl.name

    def __repr__(self) -> str:
        return f"ExternT({self.decl.name!r}, {self.type_args!r})"


@dataclass(eq=False)
class ParserT(Type):
    """Type of a parser instance.  The front end specialises declarations
    per instantiation: every Instance of a parser/control has its own copy
    of the ParserDecl/ControlDecl (constructor params substituted as Const),
    so the tables, actions and extern instances inside have per-instance
    identity and cp_names (p4c: 'MyIngress.sub_instance.table').
    As the type of a parameter (a V1Switch block, a constructor parameter
    `control C()(step_t s)`) the decl is a body-less ParserDecl/ControlDecl
    that only carries the apply parameters; the argument bound to such a
    constructor parameter is the Instance itself (shared, not copied)."""

    decl: "ParserDecl"

    def __str__(self) -> str:
        return self.decl.name

    def __repr__(self) -> str:   # the decl is large and cyclic-ish: name it only
        return f"ParserT({self.decl.name!r})"


@dataclass(eq=False)
class ControlT(Type):
    """Type of a control instance; specialised per instance like ParserT."""

    decl: "ControlDecl"

    def __str__(self) -> str:
        return self.decl.name

    def __repr__(self) -> str:
        return f"ControlT({self.decl.name!r})"


@dataclass(frozen=True)
class TableApplyResultT(Type):
    """Type of `t.apply()`: has .hit, .miss (bool) and .action_run."""

    table_name: str

    def __str__(self) -> str:
        return f"{self.table_name}.apply() result"


@dataclass(frozen=True)
class ActionEnumT(Type):
    """Type of `t.apply().action_run` (switch labels are actions)."""

    table_name: str

    def __str__(self) -> str:
        return f"{self.table_name}.action_run"


@dataclass(frozen=True)
class SetT(Type):
    """set<T>: type of keyset expressions in select/entries."""

    element: Type

    def __str__(self) -> str:
        return f"set<{self.element}>"


def strip_newtype(t: Type) -> Type:
    while isinstance(t, NewT):
        t = t.base
    return t


# --------------------------------------------------------------------------
# Named storage


@dataclass(eq=False)
class Var:
    """A local variable (in a control, parser, action, function or block)."""

    name: str
    type: Type
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class Param:
    """A parameter of a parser, control, action, function or extern method.
    direction: 'in' | 'out' | 'inout' | '' (directionless: action data /
    constructor argument)."""

    name: str
    type: Type
    direction: str = ""
    default: Optional["Expr"] = None
    optional: bool = False
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


# --------------------------------------------------------------------------
# Expressions


@dataclass(eq=False)
class Expr:
    type: Type = field(default=None, kw_only=True)  # type: ignore[assignment]
    loc: Loc = field(default=NO_LOC, kw_only=True)


@dataclass(eq=False)
class Const(Expr):
    """A compile-time value.  int for BitT/IntLitT/EnumT/ErrorT/MatchKindT
    (enum/error/match_kind: the member index, or the serializable value),
    bool for BoolT, str for StringT.  BitT values are already wrapped to
    the width (signed values as Python negative ints for int<W>)."""

    value: Union[int, bool, str]


@dataclass(eq=False)
class VarRef(Expr):
    """Reference to a Var or Param."""

    target: Union[Var, Param]


@dataclass(eq=False)
class InstanceRef(Expr):
    """Reference to an extern / parser / control instance (for method calls)."""

    target: "Instance"


@dataclass(eq=False)
class Member(Expr):
    """`base.name` on a struct, header or union value (field access), or
    `stack.next` / `stack.last` (name 'next'/'last', base type StackT),
    or `stack.size` / `stack.lastIndex` when not constant-folded."""

    base: Expr
    name: str


@dataclass(eq=False)
class Index(Expr):
    """`stack[index]`; index may be non-constant."""

    base: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    """`base[hi:lo]` with constant bounds; result BitT(hi-lo+1)."""

    base: Expr
    hi: int
    lo: int


@dataclass(eq=False)
class Unary(Expr):
    """op: '-' (negate, wraps), '~' (complement), '!' (not)."""

    op: str
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    """op: + - * / % << >> & | ^ |+| |-| ++ == != < <= > >= && ||.
    Operands are already converted to a common type where P4 requires one
    (implicit casts of literals made explicit); shifts keep their own
    right-hand type; `++` result width is the sum; && || short-circuit."""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Cast(Expr):
    """`(T) expr`; also used for implicit conversions the front end makes
    explicit (e.g. IntLitT -> BitT, serializable enum -> its underlying)."""

    operand: Expr


@dataclass(eq=False)
class Mux(Expr):
    """cond ? if_true : if_false."""

    cond: Expr
    if_true: Expr
    if_false: Expr


@dataclass(eq=False)
class ListExpr(Expr):
    """`{a, b, c}` of TupleT type (also used for tuple values)."""

    items: list[Expr]


@dataclass(eq=False)
class StructExpr(Expr):
    """`{a = 1, b = 2}` or `(T){...}`: a struct/header value; `type` says
    which.  A header built this way is valid."""

    fields: dict[str, Expr]


@dataclass(eq=False)
class DontCare(Expr):
    """`_` passed as an argument (an out param whose value is discarded)."""


# ---- calls (all normalised by the front end into these forms)


@dataclass(eq=False)
class BuiltinCall(Expr):
    """A language built-in method on a value.
    name: 'isValid' | 'setValid' | 'setInvalid' (header or union member
    headers; on a union, isValid means 'any member valid'),
    'push_front' | 'pop_front' (stack; args[0] is a Const count),
    'minSizeInBits' | 'minSizeInBytes' | 'maxSizeInBits' | 'maxSizeInBytes'
    (when not constant-folded, e.g. of a header with a varbit)."""

    name: str
    target: Expr
    args: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class ExternMethodCall(Expr):
    """`obj.method(args)` on an extern instance or an extern-typed param
    (e.g. packet_in `pkt.extract(hdr.eth)`, `reg.read(x, i)`,
    `ctr.count(i)`).  `target` is an InstanceRef or a VarRef whose type is
    ExternT.  `method` is the ExternMethod declaration chosen by overload
    resolution; type_args are the method's generic arguments, resolved."""

    target: Expr
    method: "ExternMethod"
    args: list[Expr] = field(default_factory=list)
    type_args: list[Type] = field(default_factory=list)


@dataclass(eq=False)
class ExternFunctionCall(Expr):
    """A call of a top-level extern function (mark_to_drop, hash, random,
    clone, clone3, clone_preserving_field_list, resubmit,
    resubmit_preserving_field_list, recirculate,
    recirculate_preserving_field_list, truncate, digest, verify_checksum,
    update_checksum, verify_checksum_with_payload,
    update_checksum_with_payload, log_msg, assert, assume, verify ...).
    `decl` is its declaration; args are in parameter order with defaults
    filled in (named arguments already reordered)."""

    decl: "ExternFunctionDecl"
    args: list[Expr] = field(default_factory=list)
    type_args: list[Type] = field(default_factory=list)


@dataclass(eq=False)
class ActionCall(Expr):
    """Direct invocation of an action (from a control's apply block or
    another action).  args: directional params then directionless ones."""

    action: "ActionDecl"
    args: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class FunctionCall(Expr):
    """Invocation of a P4 function; args in parameter order."""

    function: "FunctionDecl"
    args: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class TableApply(Expr):
    """`t.apply()`; type TableApplyResultT.  `Member(TableApply, 'hit'|'miss'|
    'action_run')` reads its result; as a statement the result is unused."""

    table: "TableDecl"


@dataclass(eq=False)
class SubApply(Expr):
    """`inst.apply(args)` of a parser or control instance (sub-parser from a
    parser state, sub-control from a control), args in parameter order."""

    instance: "Instance"
    args: list[Expr] = field(default_factory=list)


# ---- keysets (select cases and table entries)


@dataclass(eq=False)
class KeysetDefault(Expr):
    """`default` or `_` in a keyset position."""


@dataclass(eq=False)
class KeysetMask(Expr):
    """`value &&& mask` (both Const)."""

    value: Expr
    mask: Expr


@dataclass(eq=False)
class KeysetRange(Expr):
    """`lo .. hi` (both Const)."""

    lo: Expr
    hi: Expr


@dataclass(eq=False)
class KeysetValueSet(Expr):
    """A value_set used as a select case."""

    value_set: "ValueSetDecl"


@dataclass(eq=False)
class KeysetTuple(Expr):
    """`(k1, k2, ...)` for multi-key select or table entry."""

    items: list[Expr]


# --------------------------------------------------------------------------
# Statements


@dataclass(eq=False)
class Stmt:
    loc: Loc = field(default=NO_LOC, kw_only=True)


@dataclass(eq=False)
class Assign(Stmt):
    """lhs = rhs.  lhs is an l-value: VarRef, Member, Index, Slice (of those).
    Assigning a header/struct/union copies it (headers: including validity)."""

    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class CallStmt(Stmt):
    """A call used as a statement (any call Expr, including TableApply)."""

    call: Expr


@dataclass(eq=False)
class VarDeclStmt(Stmt):
    """Declares a local; `init` may be None (value: zero for bit/int/bool,
    headers invalid — bmv2 initialises uninitialised locals to zero)."""

    var: Var
    init: Optional[Expr] = None


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Optional[Stmt] = None


@dataclass(eq=False)
class SwitchCase:
    """labels: list of Const (expression switch) or ActionDecl (action_run
    switch) or the string 'default'.  body None = fall through to the next
    case with a body."""

    labels: list
    body: Optional[Block]
    loc: Loc = NO_LOC


@dataclass(eq=False)
class Switch(Stmt):
    """switch (expr).  When `expr` is Member(TableApply, 'action_run') the
    table is applied once and the case of the action that ran is taken."""

    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False)
class For(Stmt):
    """P4 1.2.4 `for (init; cond; update) body` (bmv2 runs it since p4c
    lowers it to jumps).  `init` runs once in the loop's own scope; `cond`
    None = true; `update` runs after the body and after each `continue`."""

    init: list[Stmt]
    cond: Optional[Expr]
    update: list[Stmt]
    body: Stmt


@dataclass(eq=False)
class Break(Stmt):
    """Leaves the innermost `for`."""


@dataclass(eq=False)
class Continue(Stmt):
    """Runs the innermost `for`'s update, then tests its condition again."""


@dataclass(eq=False)
class Exit(Stmt):
    """Ends the current top-level control (pipeline block) at once."""


@dataclass(eq=False)
class Return(Stmt):
    """Return from an action, function or control apply; value for functions."""

    value: Optional[Expr] = None


@dataclass(eq=False)
class EmptyStmt(Stmt):
    pass


# --------------------------------------------------------------------------
# Declarations


@dataclass(eq=False)
class ConstDecl:
    """A `const` declaration; its uses are folded to Const, kept for
    reference (e.g. P4Info has no use for it; error messages do)."""

    name: str
    type: Type
    value: Const
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class ExternMethod:
    """A method (or constructor when name == extern name) of an extern."""

    name: str
    params: list[Param]
    return_type: Type
    type_params: list[str] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    is_abstract: bool = False
    loc: Loc = NO_LOC


@dataclass(eq=False)
class ExternDecl:
    """`extern Name<T...> { ... }` (object extern)."""

    name: str
    type_params: list[str]
    methods: list[ExternMethod]
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC

    def constructors(self) -> list[ExternMethod]:
        return [m for m in self.methods if m.name == self.name]


@dataclass(eq=False)
class ExternFunctionDecl:
    """`extern void f<T>(in T x);`"""

    name: str
    params: list[Param]
    return_type: Type
    type_params: list[str] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class Instance:
    """An instantiation `T(args) name;`.  `type` is ExternT, ParserT or
    ControlT.  `args` are constructor arguments: Consts, nested Instances
    (package arguments; parser/control/extern instances passed to a
    constructor parameter of such a type, the very instance named or an
    anonymous `C()` one) or constant list expressions.  `cp_name` is
    filled by the front end for objects the control plane sees (p4c's
    naming: enclosing block type names/instance names, @name applied);
    empty for others."""

    name: str
    type: Type
    args: list = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    cp_name: str = ""
    loc: Loc = NO_LOC


@dataclass(eq=False)
class ValueSetDecl:
    """`value_set<T>(size) name;` in a parser; the control plane fills it."""

    name: str
    element_type: Type
    size: int
    annotations: list[Annotation] = field(default_factory=list)
    cp_name: str = ""
    loc: Loc = NO_LOC


@dataclass(eq=False)
class ActionDecl:
    """An action.  params: directional first, then directionless (action
    data, supplied by the control plane or by the table's entry)."""

    name: str
    params: list[Param]
    body: Block
    annotations: list[Annotation] = field(default_factory=list)
    cp_name: str = ""
    loc: Loc = NO_LOC

    def data_params(self) -> list[Param]:
        return [p for p in self.params if p.direction == ""]


@dataclass(eq=False)
class FunctionDecl:
    name: str
    params: list[Param]
    return_type: Type
    body: Block
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class KeyElement:
    """One table key.  `name` is the P4Info match-field name: the @name
    annotation's value if present, else the name p4c's KeyNameGenerator
    gives the expression: 'hdr.ipv4.dstAddr', 'h.f[7:0]', 'h.s[1].f',
    'h.f & 0xff00', 'h.isValid()' (other expressions: source text without
    whitespace; p4c would ask for @name)."""

    expr: Expr
    match_kind: str
    name: str
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class ActionRef:
    """An action as listed by a table (actions list, default_action, entry).
    `args`: for default_action/entries, the action-data arguments (Consts);
    for the actions list, the directional args the table binds (if any)."""

    action: ActionDecl
    args: list[Expr] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class TableEntryDecl:
    """A const/static entry.  keys: one keyset Expr per table key (Const,
    KeysetMask, KeysetRange, KeysetDefault).  priority: for `const
    entries`, None (listed order wins, first best); for non-const
    `entries`, the priority p4c assigns (explicit `priority=` values, the
    others computed from largest_priority_wins/priority_delta; a larger
    value wins unless largest_priority_wins = false)."""

    keys: list[Expr]
    action: ActionRef
    priority: Optional[int] = None
    is_const: bool = True
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class TableDecl:
    """A table.  `default_action` is set for every table (NoAction when the
    program gives none, which makes the table's default NoAction);
    `default_is_const` tells whether the control plane may change it.
    implementation: the action_profile / action_selector Instance or None.
    counters / meters: the direct_counter / direct_meter Instance or None.
    properties: any other table properties by name (raw Expr)."""

    name: str
    keys: list[KeyElement]
    actions: list[ActionRef]
    default_action: ActionRef
    default_is_const: bool = False
    default_is_implicit: bool = False
    entries: list[TableEntryDecl] = field(default_factory=list)
    entries_are_const: bool = True
    has_entries: bool = False        # an `entries` property is present (possibly empty)
    size: Optional[int] = None
    implementation: Optional[Instance] = None
    counters: Optional[Instance] = None
    meters: Optional[Instance] = None
    idle_timeout: bool = False
    properties: dict[str, Expr] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)
    cp_name: str = ""
    loc: Loc = NO_LOC


@dataclass(eq=False)
class Select:
    """select(keys) { cases }.  Each case: (keyset Expr, state name).
    A keyset is KeysetTuple when there are several keys."""

    keys: list[Expr]
    cases: list[tuple[Expr, str]]
    loc: Loc = NO_LOC


@dataclass(eq=False)
class ParserState:
    """A parser state.  `transition` is a state name (str), a Select, or
    None (only for the built-in accept/reject, which are not listed)."""

    name: str
    stmts: list[Stmt]
    transition: Union[str, Select, None]
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class ParserDecl:
    """A parser type declaration with its body.  params: apply params;
    ctor_params: constructor params.  locals: Var (with init via
    VarDeclStmt in `local_inits`), Instances, ValueSetDecls.
    states: in source order, 'start' among them."""

    name: str
    params: list[Param]
    ctor_params: list[Param] = field(default_factory=list)
    locals: list = field(default_factory=list)
    local_inits: list[Stmt] = field(default_factory=list)
    states: list[ParserState] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC

    def state(self, name: str) -> Optional[ParserState]:
        for s in self.states:
            if s.name == name:
                return s
        return None


@dataclass(eq=False)
class ControlDecl:
    """A control type declaration with its body.  locals: ActionDecls,
    TableDecls, Instances, Vars (initialised by `local_inits`, which run
    before `apply` on every invocation), in source order."""

    name: str
    params: list[Param]
    ctor_params: list[Param] = field(default_factory=list)
    locals: list = field(default_factory=list)
    local_inits: list[Stmt] = field(default_factory=list)
    apply: Block = field(default_factory=Block)
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC

    def actions(self) -> list[ActionDecl]:
        return [d for d in self.locals if isinstance(d, ActionDecl)]

    def tables(self) -> list[TableDecl]:
        return [d for d in self.locals if isinstance(d, TableDecl)]

    def instances(self) -> list[Instance]:
        return [d for d in self.locals if isinstance(d, Instance)]


@dataclass(eq=False)
class PackageDecl:
    name: str
    params: list[Param]
    type_params: list[str] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    loc: Loc = NO_LOC


@dataclass(eq=False)
class TypeDeclRef:
    """A named type declaration kept for P4Info/type_info (headers,
    structs, unions, enums, serializable enums, new types, typedefs)."""

    name: str
    type: Type
    is_typedef: bool = False
    loc: Loc = NO_LOC


@dataclass(eq=False)
class Program:
    """A whole program, after the front end.

    declarations: everything at top level in source order (types as
    TypeDeclRef, ConstDecl, ExternDecl, ExternFunctionDecl, ActionDecl,
    FunctionDecl, ParserDecl, ControlDecl, PackageDecl, Instance).
    main: the `main` package instance (V1Switch for v1model) whose args
    are the six block Instances in V1Switch parameter order:
    parser, verify_checksum, ingress, egress, compute_checksum, deparser.
    blocks: those six as (role, Instance) for convenience, role one of
    'parser', 'verify_checksum', 'ingress', 'egress', 'compute_checksum',
    'deparser'.
    error_type, match_kind_type: the program's error and match_kind types.
    source_files: every file read, for error messages and cache keys.
    """

    declarations: list
    main: Instance
    blocks: list[tuple[str, Instance]]
    error_type: ErrorT
    match_kind_type: MatchKindT
    architecture: str = "v1model"
    source_files: list[str] = field(default_factory=list)

    def block(self, role: str) -> Instance:
        for name, instance in self.blocks:
            if name == role:
                return instance
        raise KeyError(role)

    def find(self, kind: type, name: str):
        for decl in self.declarations:
            if isinstance(decl, kind) and getattr(decl, "name", None) == name:
                return decl
        return None


# --------------------------------------------------------------------------
# Added by the front end (contract extensions, see docs/p4model-contracts.md)


@dataclass(frozen=True)
class TypeParamT(Type):
    """An unbound type parameter (`T` in `extern register<T>` or in
    `extern void hash<O, T, D, M>(...)`).  Appears only inside generic
    declarations (extern methods/functions, package and parser/control type
    declarations); every use in a program body is substituted by the bound
    type (ExternT.type_args, ExternMethodCall/ExternFunctionCall.type_args)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PackageT(Type):
    """Type of a package instance (`main`)."""

    decl: "PackageDecl"

    def __str__(self) -> str:
        return self.decl.name

    def __repr__(self) -> str:
        return f"PackageT({self.decl.name!r})"


def type_str(t: Optional[Type]) -> str:
    """Readable P4 spelling of a type for error messages (never a Python
    repr: every Type subclass spells itself; front-end-only entities such
    as a parser/control declaration before specialisation go by name)."""
    if t is None:
        return "<unknown>"
    if not isinstance(t, Type):
        name = getattr(t, "name", None)
        return name if isinstance(name, str) else type(t).__name__
    return str(t)
