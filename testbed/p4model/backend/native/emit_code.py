"""P4 expressions, statements, parsers and controls -> C.

Model: one C function per top-level block, over a tb_state that holds the
packet's headers, metadata and standard_metadata (emit_types).  A scalar
expression is a uint64_t (a tb_u128 above 64 bits) already masked to its
width, so every result of +, -, *, <<, ~, unary - and concatenation is
masked again.  A call that cannot be a C expression (out/inout or composite
parameters, a composite or wide result) is written as statements before the
line that uses its value, in P4's left-to-right order (ex_in_order).  Parsers are
goto-labelled states with a bound on transitions (as the Python target's
PARSER_STATE_LIMIT); extract reads big-endian bits from the packet and a
short packet sets parser_error = PacketTooShort and ends the parse, as in
bmv2.  Any construct not handled here raises NativeUnsupported naming it."""

from __future__ import annotations

from testbed.p4model.backend.native.emit_types import (TypeEmitter, header_bits, header_leaves, is_scalar, mask,
                                                       scalar_width, signed_width, varbit_field, is_wide,
                                                       refuse_wide, wide_bytes, wire_bits)
from testbed.p4model.backend.native.emit_checksums import ChecksumMixin
from testbed.p4model.backend.native.emit_externs import ExternMixin
from testbed.p4model.backend.native.emit_replication import ReplicationMixin
from testbed.p4model.backend.native.emit_tables import TableMixin
from testbed.p4model.backend.native.errors import NativeUnsupported
from testbed.p4model.frontend import ir

PARSER_STATE_LIMIT = 10000
BINOPS = {"+", "-", "*", "&", "|", "^", "<<", ">>", "==", "!=", "<", ">", "<=", ">=", "&&", "||", "++",
          "|+|", "|-|", "/", "%"}
# local variables held in a zeroed C variable of their type (not one uint64_t)
LOCAL_COMPOSITES = (ir.HeaderT, ir.StructT, ir.UnionT, ir.StackT, ir.VarbitT, ir.TupleT)


def _shared_instance(x) -> bool:
    """An instance every apply of its control may share: a register, counter or meter (its arrays
    live in tb_inst), or a control (inlined, and checked, where it is applied)."""
    if isinstance(x.type, ir.ControlT):
        return True
    return isinstance(x.type, ir.ExternT) and x.type.decl.name in ("register", "counter", "meter")


class CodeEmitter(TableMixin, ChecksumMixin, ExternMixin, ReplicationMixin):
    """Emits the C of one program's blocks; `env` maps P4 names to C lvalues."""

    def __init__(self, program: ir.Program, types: TypeEmitter) -> None:
        self.program = program
        self.types = types
        self.lines: list[str] = []
        self.depth = 1
        self.env: dict = {}
        self.uniq = 0
        self.errors = list(program.error_type.members)
        self.statics: list[str] = []     # file-scope declarations (control locals)
        self.funcs: list[str] = []       # action and table functions
        self.tables: list = []           # TableInfo, index = C table id
        self.table_fn: dict = {}
        self.externs: dict = {}          # id(Instance) -> ExternInfo
        self.applied: set = set()        # sub-control instances already inlined
        self.ctx = ""                    # parser | control | action | deparser
        self.in_sub = 0                  # depth of inlined sub-controls
        self.pinned: dict = {}           # id(expression) -> C of a value already computed
        self.keep: list = []             # IR made here whose ids are keys of env
        self.result = None               # in a function returning a header/struct: its result
        self.loops: list = []            # the update statements of the enclosing for loops
        self.field_lists: dict = {}      # field list key -> its id (emit_replication)
        self.replication: dict = {}      # kind of copy -> (loc, construct) of its first request
        self.digests: list = []          # (name, leaf widths) per digest layout; C id = index + 1
        self.digest_words = 0            # the most 64-bit words one digest call stores
        self.meta_t = self.sm_t = None   # the ingress block's metadata types (field lists)

    # ---------------------------------------------------------- helpers

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def fresh(self, stem: str) -> str:
        self.uniq += 1
        return f"{stem}_{self.uniq}"

    def error_code(self, name: str) -> int:
        return self.errors.index(name) if name in self.errors else 0

    def width(self, e) -> int:
        return scalar_width(e.type, e.loc)

    # ------------------------------------------------------ expressions

    def lvalue(self, e) -> str:
        """A C lvalue for a variable, a field or a whole header/struct."""
        if isinstance(e, ir.VarRef):
            name = self.env.get(id(e.target))
            if name is None:
                raise NativeUnsupported(e.loc, f"a reference to {e.target.name} outside its block")
            return name
        if isinstance(e, ir.Member):
            bt = e.base.type
            if isinstance(bt, (ir.HeaderT, ir.StructT, ir.UnionT)):
                if e.name == "mcast_grp" and _is_sm(bt) and "multicast" not in self.replication:
                    self.replication["multicast"] = (e.loc, "multicast (standard_metadata.mcast_grp)")
                return f"{self.lvalue(e.base)}.f_{e.name}"
            if isinstance(bt, ir.StackT) and e.name in ("next", "last"):
                if self.ctx != "parser":
                    raise NativeUnsupported(e.loc, f"stack.{e.name} outside a parser")
                b = self.lvalue(e.base)
                # the parser statement checked the index first (stack_guards)
                return f"{b}.elem[{b}.next]" if e.name == "next" else f"{b}.elem[{b}.next - 1]"
            raise NativeUnsupported(e.loc, f"member .{e.name} of {type(bt).__name__}")
        if isinstance(e, ir.Index) and isinstance(ir.strip_newtype(e.base.type), ir.TupleT):
            n = len(ir.strip_newtype(e.base.type).elements)
            if not isinstance(e.index, ir.Const) or not 0 <= e.index.value < n:
                raise NativeUnsupported(e.loc, f"an index of a tuple of {n} that is not a constant in range")
            return f"{self.lvalue(e.base)}.f_{e.index.value}"
        if isinstance(e, ir.Index) and isinstance(e.base.type, ir.StackT):
            b, size = self.lvalue(e.base), e.base.type.size
            if isinstance(e.index, ir.Const):
                if not 0 <= e.index.value < size:
                    raise NativeUnsupported(e.loc, f"index {e.index.value} of a stack of {size}")
                return f"{b}.elem[{e.index.value}]"
            # out of range: a detached invalid header, fresh each time (as the Python target)
            elem = self.types.stack_elems[id(e.base.type.element)]
            i = self.ex(e.index)
            return f"(*(({i}) < {size} ? &{b}.elem[{i}] : TB_OOB(s, oob_{elem})))"
        if _packet_in(e, "lookahead"):
            return self.lookahead_header(e)
        raise NativeUnsupported(e.loc, f"{type(e).__name__} as an lvalue")

    def need_bytes(self, nbytes: str) -> None:
        """In a parser: the parse ends with PacketTooShort unless `nbytes` more bytes are left."""
        self.emit(f"if ((uint64_t)off + {nbytes} > len) {{ s->sm.f_parser_error = "
                  f"{self.error_code('PacketTooShort')}; goto done; }}")

    def lookahead_header(self, e) -> str:
        """packet_in.lookahead<H>() of a header type: a valid copy of H read at the cursor (which does
        not move) into a temporary; PacketTooShort when the packet is shorter than H."""
        t = _varbit_t(e.type_args[0] if e.type_args else e.type)
        if not isinstance(t, ir.HeaderT) or varbit_field(t) is not None:
            raise NativeUnsupported(e.loc, f"lookahead of a {type(t).__name__}"
                                    + (" with a varbit field" if isinstance(t, ir.HeaderT) else ""))
        ctype = self.types.c_type(t, e.loc)
        tmp = self.fresh("la")
        self.need_bytes(str((header_bits(t, e.loc) + 7) // 8))
        self.emit(f"{ctype} {tmp}; memset(&{tmp}, 0, sizeof {tmp}); {tmp}.valid = 1;")
        bit = 0
        for path, f in header_leaves(t, e.loc):
            w = wire_bits(f.type, f.loc)
            self.emit(_read_field(f"{tmp}.{path}", f.type, str(bit), w))
            bit += w
        return tmp

    def lookahead_value(self, e) -> str:
        """packet_in.lookahead<T>() of a scalar T of W bits: the next W bits at the cursor (which does
        not move); PacketTooShort when fewer than ceil(W / 8) bytes are left."""
        t = e.type_args[0] if e.type_args else e.type
        w = scalar_width(t, e.loc)
        self.need_bytes(str((w + 7) // 8))
        return f"{_get(w)}(d + off, 0, {w})"

    def array_place(self, e, root_code):
        """Where the array element `e` (Index chains on bit arrays, stored as one scalar: see
        emit_types.bit_array) is: (C of the scalar, its bit offset, the C condition that every
        run-time index is in range or None, the element's width)."""
        chain = []
        x = e
        while isinstance(x, ir.Index) and isinstance(x.base.type, ir.ArrayT):
            chain.append((x.index, x.base.type))
            x = x.base
        scalar_width(x.type, x.loc)          # refuses arrays it does not store as bits
        terms, conds = [], []
        for idx, at in chain:
            w, n = scalar_width(at.element, e.loc), at.size
            if isinstance(idx, ir.Const):
                if not 0 <= idx.value < n:
                    raise NativeUnsupported(e.loc, f"index {idx.value} of an array of {n}")
                terms.append(str(w * (n - 1 - idx.value)))
                continue
            if not _plain_index(idx):
                raise NativeUnsupported(idx.loc, "a run-time array index computed by a call")
            i = self.ex(idx)
            conds.append(f"({i}) < {n}")
            terms.append(f"(UINT64_C({n - 1}) - ({i})) * {w}")
        return root_code(x), " + ".join(terms), " && ".join(conds) or None, scalar_width(e.type, e.loc)

    def stack_guards(self, node) -> None:
        """In a parser: before a statement or select that reads stack.next or stack.last, the
        StackOutOfBounds check (the parse ends with that error, as the Python target)."""
        oob = self.error_code("StackOutOfBounds")
        for m in _stack_refs(node):
            b, size = self.lvalue(m.base), m.base.type.size
            bad = f"{b}.next >= {size}" if m.name == "next" else f"{b}.next == 0 || {b}.next > {size}"
            self.emit(f"if ({bad}) {{ s->sm.f_parser_error = {oob}; goto done; }}")

    def ex(self, e) -> str:
        """C for a scalar expression (value masked to its width).  A call that must run as statements
        (see `_runs_as_statements`) is written before the line that uses the expression, its value
        left in a temporary; operands evaluated before it are saved first (ex_in_order)."""
        if id(e) in self.pinned:
            return self.pinned[id(e)]
        if isinstance(e, ir.Const):
            return self._const(e)
        if isinstance(e, ir.Member) and isinstance(e.base, ir.TableApply) and e.name in ("hit", "miss"):
            return f"((uint64_t){'!' if e.name == 'miss' else ''}{self.apply(e.base)})"
        if isinstance(e, ir.VarRef) and isinstance(e.target, ir.Param) and id(e.target) in self.env \
                and self.env[id(e.target)].startswith("args["):
            return self.env[id(e.target)]
        if isinstance(e, (ir.VarRef, ir.Member)):
            if isinstance(e, ir.Member) and not isinstance(e.base.type, (ir.HeaderT, ir.StructT, ir.UnionT)):
                return self._const_member(e)
            if wide_bytes(e.type):
                raise NativeUnsupported(e.loc, f"bit<{8 * wide_bytes(e.type)}> used as a value (wider than 128 "
                                        "bits: extracted, emitted, copied and compared only)")
            if not is_scalar(e.type):
                raise NativeUnsupported(e.loc, f"a {type(e.type).__name__} used as a value")
            self.width(e)
            return self.lvalue(e)
        if isinstance(e, ir.Binary):
            return self._binary(e)
        if isinstance(e, ir.Unary):
            return self._unary(e)
        if isinstance(e, ir.Cast):
            return self._cast(e)
        if isinstance(e, ir.Slice):
            w = e.hi - e.lo + 1
            return f"(({self.ex(e.base)} >> {e.lo}) & {mask(w)})"
        if isinstance(e, ir.Index) and isinstance(ir.strip_newtype(e.base.type), ir.TupleT):
            if not is_scalar(e.type):
                raise NativeUnsupported(e.loc, f"a {type(e.type).__name__} used as a value")
            self.width(e)
            return self.lvalue(e)
        if isinstance(e, ir.Index) and isinstance(e.base.type, ir.ArrayT):
            root, pos, cond, w = self.array_place(e, self.ex)
            value = f"(({root} >> ({pos})) & {mask(w)})"
            return f"(({cond}) ? {value} : UINT64_C(0))" if cond else value
        if isinstance(e, ir.Mux):
            return self._mux(e)
        if isinstance(e, ir.FunctionCall):
            if _runs_as_statements(e):
                if isinstance(e.function.return_type, ir.VoidT):
                    raise NativeUnsupported(e.loc, f"the value of function {e.function.name}, which returns none")
                return self.function_call(e)
            return self.function_value(e)
        if _packet_in(e, "lookahead") and is_scalar(e.type_args[0] if e.type_args else e.type):
            return self.lookahead_value(e)
        if isinstance(e, ir.BuiltinCall) and e.name == "isValid":
            u = self.lvalue(e.target)
            if isinstance(e.target.type, ir.UnionT):   # a union is valid when one of its members is
                members = " || ".join(f"{u}.f_{f.name}.valid" for f in e.target.type.fields)
                return f"((uint64_t)({members or '0'}))"
            return f"((uint64_t){u}.valid)"
        raise NativeUnsupported(e.loc, _construct(e))

    def cvar(self, t) -> str:
        """The C type of a scalar temporary holding a value of P4 type t."""
        return "tb_u128" if is_scalar(t) and is_wide(t) else "uint64_t"

    def ex_in_order(self, exprs) -> list:
        """C of operands evaluated left to right: an operand followed by one whose evaluation runs as
        statements (a call with out/inout or composite parameters) is saved in a temporary first,
        so the call cannot change what it reads."""
        codes = []
        for i, e in enumerate(exprs):
            code = self.ex(e)
            if not isinstance(e, ir.Const) and any(_effects(x) for x in exprs[i + 1:]):
                tmp = self.fresh("o")
                self.emit(f"{self.cvar(e.type)} {tmp} = {code};")
                code = tmp
            codes.append(code)
        return codes

    def _when(self, first: str, e, run_if: bool) -> str:
        """`first`, replaced by the value of e when `first` is (run_if) true; e's calls run only then
        (the right operand of && and ||)."""
        tmp = self.fresh("c")
        self.emit(f"uint64_t {tmp} = {first};")
        self.emit(f"if ({'' if run_if else '!'}{tmp}) {{")
        self._assign_indented(tmp, e)
        self.emit("}")
        return tmp

    def _assign_indented(self, tmp: str, e) -> None:
        """`tmp = e;` one level in (the body of an if or else); e's statements land there too."""
        self.depth += 1
        self.emit(f"{tmp} = {self.ex(e)};")
        self.depth -= 1

    def _mux(self, e) -> str:
        """cond ? a : b; when an arm runs a call as statements, an if/else so only the taken arm runs."""
        if not (_effects(e.if_true) or _effects(e.if_false)):
            return f"({self.ex(e.cond)} ? {self.ex(e.if_true)} : {self.ex(e.if_false)})"
        tmp = self.fresh("m")
        self.emit(f"{self.cvar(e.type)} {tmp};")
        self.emit(f"if ({self.ex(e.cond)}) {{")
        self._assign_indented(tmp, e.if_true)
        self.emit("} else {")
        self._assign_indented(tmp, e.if_false)
        self.emit("}")
        return tmp

    def _const(self, e) -> str:
        v = e.value
        if isinstance(v, bool):
            return "UINT64_C(1)" if v else "UINT64_C(0)"
        if isinstance(v, int):
            if isinstance(e.type, ir.IntLitT):
                if v < 0 or v >= 1 << 64:
                    raise NativeUnsupported(e.loc, f"the integer literal {v}")
                return f"UINT64_C({v})"
            w = self.width(e)
            v &= (1 << w) - 1
            if v >> 64:
                return f"((((tb_u128)UINT64_C({v >> 64})) << 64) | UINT64_C({v & ((1 << 64) - 1)}))"
            return f"UINT64_C({v})"
        if isinstance(e.type, ir.ErrorT) and isinstance(v, str):
            return f"UINT64_C({self.error_code(v)})"
        raise NativeUnsupported(e.loc, f"the constant {v!r}")

    def _const_member(self, e) -> str:
        bt = e.base.type
        if isinstance(bt, ir.StackT):
            b = self.lvalue(e.base)
            if e.name == "size":
                return f"UINT64_C({bt.size})"
            if e.name == "lastIndex":
                return f"(({b}.next - 1) & UINT64_C(0xffffffff))"
            if e.name == "nextIndex":
                return f"{b}.next"
        raise NativeUnsupported(e.loc, f"member .{e.name} of {type(e.base.type).__name__}")

    def _binary(self, e) -> str:
        op = e.op
        if op not in BINOPS:
            raise NativeUnsupported(e.loc, f"the operator {op}")
        if op in ("&&", "||"):
            if _effects(e.right):
                return self._when(self.ex(e.left), e.right, op == "&&")
            return f"((uint64_t)({self.ex(e.left)} {op} {self.ex(e.right)}))"
        if op in ("==", "!=") and (wide_bytes(e.left.type) or isinstance(
                _varbit_t(e.left.type), (ir.VarbitT, ir.HeaderT, ir.StructT, ir.UnionT, ir.StackT))):
            if wide_bytes(e.left.type) and not all(isinstance(x, (ir.VarRef, ir.Member, ir.Index))
                                                   for x in (e.left, e.right)):
                raise NativeUnsupported(e.loc, f"{op} on a computed bit<{8 * wide_bytes(e.left.type)}>")
            eq = self.equal(self.lvalue(e.left), self.lvalue(e.right), _varbit_t(e.left.type), e.loc)
            return f"((uint64_t){eq if op == '==' else '!' + eq})"
        a, b = self.ex_in_order([e.left, e.right])
        sw = signed_width(e.left.type)
        if op in ("<", ">", "<=", ">=") and sw:
            return f"((uint64_t)(tb_sext({a}, {sw}) {op} tb_sext({b}, {sw})))"
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return f"((uint64_t)({a} {op} {b}))"
        w = self.width(e)
        if w > 64 or is_wide(e.left.type):
            return self._wide_binary(e, op, a, b, w)
        if op in ("|+|", "|-|") and sw:
            return f"tb_ssat((__int128)tb_sext({a}, {sw}) {op[1]} tb_sext({b}, {sw}), {sw})"
        if op == ">>" and sw:
            return f"tb_sar({a}, {b}, {sw})"
        if op in ("/", "%"):
            if sw:
                raise NativeUnsupported(e.loc, f"the operator {op} on int<{sw}>")
            # unsigned; a zero divisor gives 0 (as the Python target)
            return f"tb_{'div' if op == '/' else 'mod'}({a}, {b})"
        if op == "|-|":
            return f"({a} > {b} ? {a} - {b} : UINT64_C(0))"
        if op == "|+|":
            return f"({a} > {mask(w)} - {b} ? {mask(w)} : {a} + {b})"
        if op == "++":
            wb = self.width(e.right)
            return f"(tb_shl({a}, {wb}) | {b})"
        if op == "<<":
            return f"(tb_shl({a}, {b}) & {mask(w)})"
        if op == ">>":
            return f"tb_shr({a}, {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        return f"(({a} {op} {b}) & {mask(w)})"

    def _wide_binary(self, e, op: str, a: str, b: str, w: int) -> str:
        """A binary operation whose result or left operand is wider than 64 bits (tb_u128)."""
        if op == "++":
            return f"(tb_shl128((tb_u128){a}, {self.width(e.right)}) | {b})"
        if op == "<<":
            return f"(tb_shl128({a}, {b}) & {mask(w)})"
        if op == ">>":
            return f"tb_shr128({a}, {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return f"(({a} {op} {b}) & {mask(w)})"
        if op == "|-|":
            return f"({a} > {b} ? {a} - {b} : (tb_u128)0)"
        if op == "|+|":
            return f"({a} > {mask(w)} - {b} ? {mask(w)} : {a} + {b})"
        raise NativeUnsupported(e.loc, f"the operator {op} on bit<{w}>")

    def equal(self, a: str, b: str, t, loc) -> str:
        """C of a == b for lvalues of type t (the Python target's rule): varbits are equal when their
        widths and bytes are (bytes past the width are zero); headers when both are invalid, or both
        valid with equal fields; structs when their fields are."""
        t = _varbit_t(t)
        if is_scalar(t):
            return f"({a} == {b})"
        if isinstance(t, ir.VarbitT):
            return f"({a}.w == {b}.w && !memcmp({a}.b, {b}.b, sizeof {a}.b))"
        if wide_bytes(t):
            return f"(!memcmp({a}.b, {b}.b, sizeof {a}.b))"
        if isinstance(t, ir.StackT):   # element by element (nextIndex not compared)
            return "(" + " && ".join(self.equal(f"{a}.elem[{k}]", f"{b}.elem[{k}]", t.element, loc)
                                     for k in range(t.size)) + ")"
        if not isinstance(t, (ir.HeaderT, ir.StructT, ir.UnionT)):
            raise NativeUnsupported(loc, f"== on a {type(t).__name__}")
        fields = " && ".join(self.equal(f"{a}.f_{f.name}", f"{b}.f_{f.name}", f.type, f.loc or loc)
                             for f in t.fields) or "1"
        if isinstance(t, ir.HeaderT):
            return f"({a}.valid == {b}.valid && (!{a}.valid || ({fields})))"
        return f"({fields})"

    def _unary(self, e) -> str:
        a = self.ex(e.operand)
        if e.op == "!":
            return f"((uint64_t)!{a})"
        w = self.width(e)
        if e.op == "~":
            return f"((~{a}) & {mask(w)})"
        if e.op == "-":
            return f"((UINT64_C(0) - {a}) & {mask(w)})"
        raise NativeUnsupported(e.loc, f"the operator {e.op}")

    def _cast(self, e) -> str:
        a = self.ex(e.operand)
        t = e.type
        while isinstance(t, ir.NewT):
            t = t.base
        if isinstance(t, ir.BoolT):
            return f"((uint64_t)({a} != 0))"
        if isinstance(t, ir.BitT):
            # the value of an int<W> source is its sign-extended pattern (as the Python target)
            sw = signed_width(e.operand.type)
            if sw and sw < t.width:
                return f"((tb_u128)(__int128)tb_sext({a}, {sw}) & {mask(self.width(e))})"
            return f"({a} & {mask(self.width(e))})"
        raise NativeUnsupported(e.loc, f"a cast to {type(t).__name__}")

    # ------------------------------------------------------- statements

    def stmt(self, s) -> None:
        if isinstance(s, ir.Block):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, ir.EmptyStmt):
            pass
        elif isinstance(s, ir.Assign):
            pins = self.pin_indices(s.lhs, s.rhs)
            self.assign(s.lhs, s.rhs, s.loc)
            for key in pins:
                del self.pinned[key]
        elif isinstance(s, ir.VarDeclStmt) and isinstance(_varbit_t(s.var.type), LOCAL_COMPOSITES):
            name = self.fresh(f"v_{s.var.name}")
            self.statics.append(f"static {self.types.c_type(s.var.type, s.loc)} {name};")
            self.env[id(s.var)] = name
            self.emit(f"memset(&{name}, 0, sizeof {name});")
            if s.init is not None:
                self.assign(ir.VarRef(s.var, type=s.var.type, loc=s.loc), s.init, s.loc)
        elif isinstance(s, ir.VarDeclStmt):
            name = self.fresh(f"v_{s.var.name}")
            self.env[id(s.var)] = name
            if not is_scalar(s.var.type):
                raise NativeUnsupported(s.loc, f"the local variable {s.var.name} of a composite type")
            scalar_width(s.var.type, s.loc)
            value = self.ex(s.init) if s.init is not None else "UINT64_C(0)"
            ct = self.cvar(s.var.type)
            if self.ctx == "control":  # a control's variable: its actions (C functions of their own) see it
                self.statics.append(f"static {ct} {name};")
                self.emit(f"{name} = {value};")
            else:
                self.emit(f"{ct} {name} = {value};")
        elif isinstance(s, ir.If):
            cond = self.ex(s.cond)
            if self.ctx in ("control", "action") and "(s, drop_port)" in cond:   # a table applied
                name = self.fresh("c")
                self.emit(f"uint64_t {name} = {cond};")
                self.exit_check()
                cond = name
            self.emit(f"if ({cond}) {{")
            self.depth += 1
            self.stmt(s.then)
            self.depth -= 1
            if s.otherwise is not None:
                self.emit("} else {")
                self.depth += 1
                self.stmt(s.otherwise)
                self.depth -= 1
            self.emit("}")
        elif isinstance(s, ir.CallStmt):
            self.call(s.call)
            self.exit_check()
        elif isinstance(s, ir.Switch):
            self.switch(s)
        elif isinstance(s, ir.For):
            self.for_loop(s)
        elif isinstance(s, ir.Break) and self.loops:
            self.emit("break;")
        elif isinstance(s, ir.Continue) and self.loops:
            for x in self.loops[-1]:
                self.stmt(x)
            self.emit("continue;")
        elif isinstance(s, ir.Return) and self.ctx == "function" and self.result is not None:
            self.assign(self.result, s.value, s.loc)   # a header or struct: into the caller's variable
            self.emit("return 0;")
        elif isinstance(s, ir.Return) and self.ctx == "function":
            self.emit("return 0;" if s.value is None else f"return {self.ex(s.value)};")
        elif isinstance(s, ir.Return) and s.value is None and self.ctx in ("control", "action") \
                and not self.in_sub:
            self.emit("return;" if self.ctx == "action" else "goto ctl_exit;")
        elif isinstance(s, ir.Exit):
            if self.ctx not in ("control", "action") or self.in_sub:
                raise NativeUnsupported(s.loc, "exit" + (" in an applied sub-control" if self.in_sub else ""))
            self.emit("s->exited = 1;")
            self.emit("return;" if self.ctx == "action" else "goto ctl_exit;")
        else:
            raise NativeUnsupported(s.loc, _construct(s))

    def for_loop(self, st) -> None:
        """for (init; cond; update) body: a C `for (;;)` with the condition tested first (its calls
        written inside the loop, so they run on every test); the update ends the body and precedes
        every `continue` (as the Python back end)."""
        self.emit("{")
        self.depth += 1
        for x in st.init:
            self.stmt(x)
        self.emit("for (;;) {")
        self.depth += 1
        if st.cond is not None:
            self.emit(f"if (!{self.ex(st.cond)}) break;")
        self.loops.append(st.update)
        try:
            self.stmt(st.body)
        finally:
            self.loops.pop()
        for x in st.update:
            self.stmt(x)
        self.depth -= 1
        self.emit("}")
        self.depth -= 1
        self.emit("}")

    def switch(self, st) -> None:
        """switch on a value or on table.apply().action_run: one if/else
        chain, fall-through labels joined, default last."""
        expr = st.expr
        on_action = isinstance(expr, ir.Member) and isinstance(expr.base, ir.TableApply) \
            and expr.name == "action_run"
        v = self.fresh("sw")
        if on_action:
            self.emit(f"(void){self.apply(expr.base)};")
            self.exit_check()
            info = next(i for i in self.tables if i.decl is expr.base.table)
            self.emit(f"uint64_t {v} = s->action_run;")
        else:
            self.emit(f"{self.cvar(expr.type)} {v} = {self.ex(expr)};")
        pending, first, default_body = [], True, None
        for case in st.cases:
            pending.extend(case.labels)
            if case.body is None:
                continue
            labels, pending = pending, []
            if "default" in labels:
                default_body = case.body
                labels = [lab for lab in labels if lab != "default"]
                if not labels:
                    continue
            conds = []
            for lab in labels:
                if on_action and isinstance(lab, ir.ActionDecl):
                    if lab.cp_name not in info.actions:
                        raise NativeUnsupported(case.loc or st.loc, f"switch label {lab.name}")
                    conds.append(f"{v} == {info.actions.index(lab.cp_name)}")
                else:
                    conds.append(f"{v} == {self.ex(lab)}")
            self.emit(("if (" if first else "} else if (") + " || ".join(conds) + ") {")
            first = False
            self.depth += 1
            self.stmt(case.body)
            self.depth -= 1
        if default_body is not None:
            if first:
                self.emit("{")
            else:
                self.emit("} else {")
            self.depth += 1
            self.stmt(default_body)
            self.depth -= 1
            self.emit("}")
        elif not first:
            self.emit("}")

    def exit_check(self) -> None:
        """After a call that may have run `exit` (an action, a table)."""
        if self.ctx == "control":
            self.emit("if (s->exited) goto ctl_exit;")
        elif self.ctx == "action":
            self.emit("if (s->exited) return;")

    def pin_indices(self, lhs, rhs) -> list:
        """P4 evaluates an assignment's target (its run-time indices) once, before the right side: when
        the right side runs a call, or an index does (a compound assignment such as `a[f(x)] |= y`
        repeats the target in its value), each run-time index of the target is computed into a
        temporary first, outermost first, and stands for that index wherever it occurs in the
        statement.  Returns the keys to unpin after the statement."""
        chain, n = [], lhs
        while isinstance(n, (ir.Member, ir.Slice, ir.Index)):
            chain.append(n)
            n = n.base
        keys, rhs_effects = [], _effects(rhs)
        for n in reversed(chain):
            if isinstance(n, ir.Index) and not isinstance(n.index, ir.Const) \
                    and (rhs_effects or _effects(n.index)) and id(n.index) not in self.pinned:
                tmp = self.fresh("i")
                self.emit(f"uint64_t {tmp} = {self.ex(n.index)};")
                self.pinned[id(n.index)] = tmp
                keys.append(id(n.index))
        return keys

    def assign(self, lhs, rhs, loc) -> None:
        """lhs = rhs.  P4 evaluates the target first: when it is named through a run-time index and
        the right side runs a call (which may change the index), its address is taken first."""
        if isinstance(rhs, ir.FunctionCall) and isinstance(rhs.type, (ir.HeaderT, ir.StructT)):
            target = self.lvalue(lhs)
            if _dynamic(lhs):
                ptr = self.fresh("lv")
                self.emit(f"{self.types.c_type(lhs.type, loc)} *{ptr} = &{target};")
                target = f"*{ptr}"
            self.emit(f"{target} = {self.function_call(rhs)};")
            siblings = self.union_siblings(lhs)
            if siblings:   # a valid header written into a union makes its other members invalid
                self.emit(f"if ({target}.valid) {{ {' '.join(f'{x}.valid = 0;' for x, _t in siblings)} }}")
            return
        if _effects(rhs) and is_scalar(lhs.type) and not isinstance(lhs, ir.Slice) \
                and not (isinstance(lhs, ir.Index) and isinstance(lhs.base.type, ir.ArrayT)):
            target = self.lvalue(lhs)
            if _dynamic(lhs):
                ptr = self.fresh("lv")
                self.emit(f"{self.cvar(lhs.type)} *{ptr} = &{target};")
                target = f"*{ptr}"
            value = self.ex(rhs)
            self.emit(f"{target} = {value};")
            return
        if isinstance(lhs, ir.DontCare):   # `_ = e`: e evaluated, nothing written
            if is_scalar(rhs.type):
                self.emit(f"(void){self.ex(rhs)};")
            return
        if isinstance(lhs, ir.Index) and isinstance(lhs.base.type, ir.ArrayT):
            # out of range (run-time index): the value is computed, nothing is written
            root, pos, cond, w = self.array_place(lhs, self.lvalue)
            tmp = self.fresh("elem")
            m = f"({mask(w)} << ({pos}))"
            store = f"{root} = ({root} & ~{m}) | (({tmp} & {mask(w)}) << ({pos}));"
            self.emit(f"{{ uint64_t {tmp} = {self.ex(rhs)}; {f'if ({cond}) ' if cond else ''}{store} }}")
            return
        if isinstance(lhs, ir.Slice):
            while isinstance(lhs.base, ir.Slice):   # x[a:b][c:d] is x[b+c:b+d]
                lhs = ir.Slice(lhs.base.base, lhs.base.lo + lhs.hi, lhs.base.lo + lhs.lo, type=lhs.type, loc=lhs.loc)
            target = self.lvalue(lhs.base)
            w = lhs.hi - lhs.lo + 1
            ct = self.cvar(lhs.base.type)
            m = f"((({ct}){mask(w)}) << {lhs.lo})"
            self.emit(f"{target} = ({target} & ~{m}) | (((({ct})({self.ex(rhs)})) << {lhs.lo}) & {m});")
            return
        if isinstance(_varbit_t(lhs.type), ir.VarbitT) and isinstance(rhs, (ir.VarRef, ir.Member, ir.Index)):
            self.emit(f"{self.lvalue(lhs)} = {self.lvalue(rhs)};   /* varbit: width and bytes */")
            return
        if wide_bytes(lhs.type) and isinstance(rhs, (ir.VarRef, ir.Member, ir.Index)) \
                and wide_bytes(rhs.type) == wide_bytes(lhs.type):
            self.emit(f"{self.lvalue(lhs)} = {self.lvalue(rhs)};   /* bit<{8 * wide_bytes(lhs.type)}>: its bytes */")
            return
        if wide_bytes(lhs.type):
            raise NativeUnsupported(loc, f"a value computed into bit<{8 * wide_bytes(lhs.type)}> (wider than "
                                    "128 bits: extracted, emitted, copied and compared only)")
        if isinstance(lhs.type, (ir.HeaderT, ir.StructT, ir.UnionT, ir.StackT, ir.TupleT)) \
                and isinstance(rhs, (ir.VarRef, ir.Member, ir.Index)) and _same_c_type(lhs.type, rhs.type):
            self.types.c_type(lhs.type, loc)
            target = self.lvalue(lhs)
            self.emit(f"{target} = {self.lvalue(rhs)};   /* whole {type(lhs.type).__name__}, validity included */")
            siblings = self.union_siblings(lhs)
            if siblings:   # a valid header written into a union makes its other members invalid
                self.emit(f"if ({target}.valid) {{ {' '.join(f'{x}.valid = 0;' for x, _t in siblings)} }}")
            return
        if isinstance(ir.strip_newtype(lhs.type), ir.TupleT) and isinstance(rhs, ir.ListExpr):
            self.assign_tuple(lhs, rhs, loc)
            return
        if isinstance(lhs.type, (ir.HeaderT, ir.StructT)) and isinstance(rhs, (ir.ListExpr, ir.StructExpr)):
            self.assign_fields(lhs, rhs, loc)
            for sib, _t in self.union_siblings(lhs):   # the header built is valid
                self.emit(f"{sib}.valid = 0;")
            return
        if not is_scalar(lhs.type):
            raise NativeUnsupported(loc, f"assignment of a whole {type(lhs.type).__name__}")
        self.emit(f"{self.lvalue(lhs)} = {self.ex(rhs)};")

    def union_siblings(self, e) -> list:
        """(C lvalue, header type) of the other members when e is a member of a header union."""
        if isinstance(e, ir.Member) and isinstance(e.base.type, ir.UnionT):
            u = self.lvalue(e.base)
            return [(f"{u}.f_{f.name}", f.type) for f in e.base.type.fields if f.name != e.name]
        return []

    def assign_tuple(self, lhs, rhs, loc) -> None:
        """A tuple from `{a, b, ...}`: the values computed first, in order, then stored."""
        t = ir.strip_newtype(lhs.type)
        if len(rhs.items) != len(t.elements):
            raise NativeUnsupported(loc, f"an initializer of {t} with {len(rhs.items)} values")
        target, tmp = self.lvalue(lhs), self.fresh("tup")
        self.emit(f"{{ {self.types.c_type(t, loc)} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
        self.depth += 1
        for i, (et, item) in enumerate(zip(t.elements, rhs.items)):
            base = ir.VarRef(self._temp_var(tmp, t, loc), type=t, loc=loc)
            element = ir.Index(base, ir.Const(i, type=ir.IntLitT(), loc=loc), type=et, loc=loc)
            self.assign(element, item, loc)
        self.emit(f"{target} = {tmp};")
        self.depth -= 1
        self.emit("}")

    def _temp_var(self, cname: str, t, loc):
        var = ir.Var(cname, t, loc=loc)
        self.env[id(var)] = cname
        self.keep.append(var)
        return var

    def assign_fields(self, lhs, rhs, loc) -> None:
        """A header or struct from `{a, b, ...}` or `{f = a, ...}`: the values are computed first (they
        may read the target), then stored field by field; a header built so is valid."""
        t = lhs.type
        items = rhs.items if isinstance(rhs, ir.ListExpr) else [rhs.fields.get(f.name) for f in t.fields]
        if len(items) != len(t.fields) or any(x is None for x in items):
            raise NativeUnsupported(loc, f"an initializer of {t.name} that does not give every field")
        target = self.lvalue(lhs)
        tmp = self.fresh("init")
        ctype = self.types.c_type(t, loc)
        self.emit(f"{{ {ctype} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
        self.depth += 1
        for f, item in zip(t.fields, items):
            member = ir.Member(lhs, f.name, type=f.type, loc=loc)
            if is_scalar(f.type):
                self.emit(f"{tmp}.f_{f.name} = {self.ex(item)} & {mask(scalar_width(f.type, f.loc or loc))};")
            elif isinstance(f.type, (ir.HeaderT, ir.StructT)) and isinstance(item, (ir.ListExpr, ir.StructExpr)):
                self.assign_fields(member, item, loc)   # nested: written in place (after the scalars above)
            elif isinstance(f.type, (ir.HeaderT, ir.StructT)) and isinstance(item, (ir.VarRef, ir.Member)) \
                    and item.type is f.type:
                self.emit(f"{tmp}.f_{f.name} = {self.lvalue(item)};")
            else:
                raise NativeUnsupported(item.loc or loc, f"the initializer of field {f.name} of {t.name}")
        if isinstance(t, ir.HeaderT):
            self.emit(f"{tmp}.valid = 1;")
        nested = [f.name for f, item in zip(t.fields, items)
                  if not is_scalar(f.type) and isinstance(item, (ir.ListExpr, ir.StructExpr))]
        keep = "".join(f" {tmp}.f_{n} = {target}.f_{n};" for n in nested)
        self.emit(f"{keep} {target} = {tmp};" if keep else f"{target} = {tmp};")
        self.depth -= 1
        self.emit("}")

    def call(self, c) -> None:
        if isinstance(c, ir.TableApply):
            self.emit(f"(void){self.apply(c)};")
            return
        if isinstance(c, ir.ExternFunctionCall) and c.decl.name in (
                "verify_checksum", "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload"):
            self.checksum(c, c.decl.name.startswith("verify"), c.decl.name.endswith("_with_payload"))
            return
        if isinstance(c, ir.BuiltinCall) and c.name in ("setValid", "setInvalid", "push_front", "pop_front"):
            self.builtin(c)
            return
        if self.extern_call(c) or self.extern_function(c) or self.replication_call(c) or self.digest_call(c):
            return
        if isinstance(c, ir.SubApply) and isinstance(c.instance.type, ir.ControlT):
            self.sub_control(c)
            return
        if isinstance(c, ir.SubApply) and isinstance(c.instance.type, ir.ParserT) and self.ctx == "parser":
            self.sub_parser(c)
            return
        if isinstance(c, ir.ActionCall):
            self.action_call(c)
            return
        if isinstance(c, ir.FunctionCall):
            self.function_call(c)
            return
        if isinstance(c, ir.ExternFunctionCall) and c.decl.name == "verify" and self.ctx == "parser":
            cond, err = c.args
            self.emit(f"if (!{self.ex(cond)}) {{ s->sm.f_parser_error = {self.ex(err)}; goto done; }}")
            return
        if _packet_in(c, "lookahead"):   # its value unused: only the length check
            t = c.type_args[0] if c.type_args else c.type
            if is_scalar(t):
                self.lookahead_value(c)
            elif isinstance(t, ir.StructT) and all(is_scalar(f.type) for f in t.fields):
                self.need_bytes(str((sum(scalar_width(f.type, f.loc) for f in t.fields) + 7) // 8))
            else:
                self.lookahead_header(c)
            return
        if _packet_in(c, "advance"):
            # the cursor moves by floor(n / 8) bytes (as the Python target); past the end -> PacketTooShort
            nb = self.fresh("adv")
            self.emit(f"uint64_t {nb} = {self.ex(c.args[0])} / 8;")
            self.need_bytes(nb)
            self.emit(f"off += (uint32_t){nb};")
            return
        if isinstance(c, ir.ExternFunctionCall) and c.decl.name == "mark_to_drop":
            sm = self.lvalue(c.args[0])
            self.emit(f"{sm}.f_egress_spec = drop_port; {sm}.f_mcast_grp = 0;")
            return
        if isinstance(c, ir.ExternMethodCall) and c.method.name in ("extract", "emit") and \
                isinstance(c.target.type, ir.ExternT) and \
                c.target.type.decl.name in ("packet_in", "packet_out"):
            if len(c.args) != 1 and not (c.method.name == "extract" and len(c.args) == 2):
                raise NativeUnsupported(c.loc, f"{c.method.name} with {len(c.args)} arguments")
            arg = c.args[0]
            length = c.args[1] if len(c.args) == 2 else None
            if c.method.name == "emit" and isinstance(arg.type, (ir.StructT, ir.UnionT)):
                for f in arg.type.fields:
                    self.call(ir.ExternMethodCall(c.target, c.method, [ir.Member(arg, f.name, type=f.type, loc=c.loc)],
                                                  type=c.type, loc=c.loc))
                return
            if c.method.name == "emit" and isinstance(arg.type, ir.StackT):
                for k in range(arg.type.size):
                    elem = ir.Index(arg, ir.Const(k, type=ir.IntLitT(), loc=c.loc), type=arg.type.element, loc=c.loc)
                    self.call(ir.ExternMethodCall(c.target, c.method, [elem], type=c.type, loc=c.loc))
                return
            if c.method.name == "extract" and isinstance(arg, ir.Member) and isinstance(arg.base, ir.Member) \
                    and arg.base.name == "next" and isinstance(arg.base.base.type, ir.StackT):
                # a member of the next union of a stack of unions: extracted, its siblings made
                # invalid, and the stack advances (as the Python target)
                b, size = self.lvalue(arg.base.base), arg.base.base.type.size
                self.emit(f"if ({b}.next >= {size}) {{ s->sm.f_parser_error = "
                          f"{self.error_code('StackOutOfBounds')}; goto done; }}")
                self._extract(arg, length)
                for sib, _t in self.union_siblings(arg):
                    self.emit(f"{sib}.valid = 0;")
                self.emit(f"{b}.next++;")
                return
            if not isinstance(arg.type, ir.HeaderT):
                raise NativeUnsupported(c.loc, f"{c.method.name} of a {type(arg.type).__name__}")
            if c.method.name == "extract" and isinstance(arg, ir.Member) and isinstance(arg.base.type, ir.StackT) \
                    and arg.name == "next":
                b, size = self.lvalue(arg.base), arg.base.type.size
                self.emit(f"if ({b}.next >= {size}) {{ s->sm.f_parser_error = "
                          f"{self.error_code('StackOutOfBounds')}; goto done; }}")
                self._extract(arg, length)
                self.emit(f"{b}.next++;")
                return
            if c.method.name == "extract" and isinstance(arg, ir.DontCare):   # skipped: read into a scratch header
                scratch = self.fresh("skip")
                self.emit(f"{self.types.c_type(arg.type, c.loc)} {scratch};")
                self._extract(self.temp_ref(scratch, arg.type, c.loc), length)
            elif c.method.name == "extract":
                self._extract(arg, length)
            else:
                self._emit(arg)
            return
        raise NativeUnsupported(c.loc, _construct(c))

    def function(self, f) -> str:
        """The C function of P4 function `f` (emitted once): every parameter through a pointer in
        `dir` (the caller copies in and out); a scalar returned as the C value, a header or struct
        written through one more pointer after the parameters' (the caller's result variable)."""
        key = ("function", id(f))
        if key in self.table_fn:
            return self.table_fn[key]
        if not (isinstance(f.return_type, ir.VoidT) or is_scalar(f.return_type)
                or _by_pointer(f.return_type)):
            raise NativeUnsupported(f.loc, f"function {f.name} returning a {type(f.return_type).__name__}")
        fn = f"f{len(self.table_fn)}_{''.join(c if c.isalnum() else '_' for c in f.name)}"
        self.table_fn[key] = fn
        for k, p in enumerate(f.params):
            self.env[id(p)] = f"(*({self.types.c_type(p.type, p.loc or f.loc)} *)dir[{k}])"
        saved_result = self.result
        self.result = None
        if _by_pointer(f.return_type):
            ctype = self.types.c_type(f.return_type, f.loc)
            self.result = self.temp_ref(f"(*({ctype} *)dir[{len(f.params)}])", f.return_type, f.loc)
        lines: list[str] = []
        saved_lines, saved_depth = self.lines, self.depth
        self.lines, self.depth = lines, 1
        saved_ctx, self.ctx = self.ctx, "function"
        lines.append(f"static uint64_t {fn}(tb_state *s, void *const *dir, uint32_t drop_port) {{")
        lines.append("    (void)s; (void)dir; (void)drop_port;")
        self.stmt(f.body)
        lines.append("    return 0;")
        lines.append("}")
        self.ctx, self.result = saved_ctx, saved_result
        self.lines, self.depth = saved_lines, saved_depth
        self.funcs.extend(lines)
        return fn

    def function_value(self, e) -> str:
        """A call of a function with only `in` (or directionless) scalar parameters, as a C expression
        (its arguments as compound literals, so && and ?: keep their order)."""
        if not _in_only(e.function) or not all(is_scalar(p.type) for p in e.function.params):
            raise NativeUnsupported(e.loc, f"a call of function {e.function.name} with out, inout or composite "
                                    "parameters inside an expression")
        if isinstance(e.function.return_type, ir.VoidT):
            raise NativeUnsupported(e.loc, f"the value of function {e.function.name}, which returns none")
        fn = self.function(e.function)
        refs = ", ".join(f"&(uint64_t){{{self.ex(a)}}}" for a in e.args) or "0"
        return f"({fn}(s, (void *const[]){{{refs}}}, drop_port) & {mask(self.width(e))})"

    def copy_in(self, params, args, loc) -> list:
        """Directional arguments of a call (P4's copy-in/copy-out), in argument order: the location an
        out/inout argument names is fixed now (through a pointer when a run-time index names it), an
        in/inout value is copied to a temporary of the parameter's type, an out temporary starts
        zeroed.  Returns (param, temporary, target) for copy_out; the callee gets &temporary."""
        out = []
        for p, arg in zip(params, args):
            ctype = self.types.c_type(p.type, p.loc or loc)
            tmp = self.fresh("d")
            target = None
            if p.direction in ("out", "inout") and isinstance(arg, (ir.Slice, ir.DontCare)):
                # written back through assign (a slice's other bits kept; `_` discards)
                if _dynamic(arg):
                    raise NativeUnsupported(arg.loc or loc, "a slice named through a run-time index as an "
                                            f"{p.direction} argument")
                target = arg
            elif p.direction in ("out", "inout"):
                target = self.lvalue(arg)
                if _dynamic(arg):
                    ptr = self.fresh("dp")
                    self.emit(f"{ctype} *{ptr} = &{target};")
                    target = f"*{ptr}"
            if p.direction == "out":
                self.emit(f"{ctype} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
            elif is_scalar(p.type):
                self.emit(f"{ctype} {tmp} = {self.ex(arg)};")
            elif isinstance(arg, ir.DontCare):
                self.emit(f"{ctype} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
            elif isinstance(arg, (ir.ListExpr, ir.StructExpr)):
                self.emit(f"{ctype} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
                self.assign_fields(self.temp_ref(tmp, p.type, arg.loc or loc), arg, arg.loc or loc)
            else:
                self.emit(f"{ctype} {tmp} = {target or self.lvalue(arg)};")
            out.append((p, tmp, target))
        return out

    def copy_out(self, copied: list) -> None:
        """The out and inout temporaries of copy_in written back, in argument order."""
        for p, tmp, target in copied:
            if isinstance(target, ir.Expr):
                self.assign(target, self.temp_ref(tmp, p.type, target.loc), target.loc)
            elif target is not None:
                self.emit(f"{target} = {tmp};")

    def temp_ref(self, cname: str, t, loc):
        """An IR reference to the C variable `cname` (of P4 type t), for reusing assign on it."""
        var = ir.Var(cname, t, loc=loc)
        self.env[id(var)] = cname
        self.keep.append(var)
        return ir.VarRef(var, type=t, loc=loc)

    def function_call(self, c) -> str:
        """A call that runs as statements: arguments copied in (copy_in), the function run on pointers
        to the temporaries, out and inout copied back; the C of the returned value."""
        fn = self.function(c.function)
        copied = self.copy_in(c.function.params, c.args, c.loc)
        ret = self.fresh("fr")
        refs = [f"&{tmp}" for _p, tmp, _t in copied]
        rt = c.function.return_type
        if _by_pointer(rt):
            ctype = self.types.c_type(rt, c.loc)
            self.emit(f"{ctype} {ret}_v; memset(&{ret}_v, 0, sizeof {ret}_v);")
            refs.append(f"&{ret}_v")
        self.emit(f"uint64_t {ret} = {fn}(s, (void *const[]){{{', '.join(refs) or '0'}}}, drop_port); (void){ret};")
        self.copy_out(copied)
        if _by_pointer(rt):
            return f"{ret}_v"
        if not isinstance(c.function.return_type, ir.VoidT):
            return f"({ret} & {mask(scalar_width(c.function.return_type, c.loc))})"
        return ret

    def action_call(self, c) -> None:
        """A direct call of an action: directional arguments through copy_in/copy_out, action data
        (directionless arguments) as values."""
        fn = self.action(c.action, None)
        params = c.action.params
        directional = [(p, a) for p, a in zip(params, c.args) if p.direction]
        data = [a for p, a in zip(params, c.args) if not p.direction]
        self.emit("{")
        self.depth += 1
        copied = self.copy_in([p for p, _ in directional], [a for _, a in directional], c.loc)
        values = ", ".join(self.ex(a) for a in data) or "0"
        refs = ", ".join(f"&{tmp}" for _p, tmp, _t in copied) or "0"
        self.emit(f"const uint64_t a[] = {{{values}}}; void *const dr[] = {{{refs}}};")
        self.emit(f"{fn}(s, a, dr, drop_port);")
        self.copy_out(copied)
        self.depth -= 1
        self.emit("}")

    def builtin(self, c) -> None:
        """setValid/setInvalid on a header (zeroed when it becomes valid; the packet's length, what
        egress reads as packet_length, follows), push_front/pop_front on a stack."""
        t = c.target.type
        if c.name in ("setValid", "setInvalid"):
            if not isinstance(t, ir.HeaderT):
                raise NativeUnsupported(c.loc, f"{c.name} of a {type(t).__name__}")
            h, nbytes = self.lvalue(c.target), header_bits(t, c.loc) // 8
            vb = varbit_field(t)
            if c.name == "setValid":   # zeroed: a varbit field at width 0
                self.emit(f"if (!{h}.valid) {{ memset(&{h}, 0, sizeof {h}); {h}.valid = 1; s->length += {nbytes}; }}")
                for sib, st in self.union_siblings(c.target):
                    # the union's other members become invalid (the packet's length follows)
                    sv = varbit_field(st)
                    sib_bytes = f"{header_bits(st, c.loc) // 8}" + (f" + {sib}.f_{sv.name}.w / 8" if sv else "")
                    self.emit(f"if ({sib}.valid) {{ {sib}.valid = 0; s->length -= {sib_bytes}; }}")
            else:
                vbytes = f" + {h}.f_{vb.name}.w / 8" if vb is not None else ""
                self.emit(f"if ({h}.valid) {{ {h}.valid = 0; s->length -= {nbytes}{vbytes}; }}")
            return
        if not isinstance(t, ir.StackT):
            raise NativeUnsupported(c.loc, f"{c.name} of a {type(t).__name__}")
        count = c.args[0].value if c.args else 1
        b, size = self.lvalue(c.target), t.size
        i = self.fresh("i")
        if c.name == "push_front":
            self.emit(f"for (int {i} = {size - 1}; {i} >= 0; {i}--) {{")
            self.emit(f"    if ({i} >= {count}) {b}.elem[{i}] = {b}.elem[{i} - {count}];")
            self.emit(f"    else memset(&{b}.elem[{i}], 0, sizeof {b}.elem[{i}]);")
            self.emit("}")
            self.emit(f"{b}.next = {b}.next + {count} < {size} ? {b}.next + {count} : {size};")
        else:
            self.emit(f"for (int {i} = 0; {i} < {size}; {i}++) {{")
            self.emit(f"    if ({i} + {count} < {size}) {b}.elem[{i}] = {b}.elem[{i} + {count}];")
            self.emit(f"    else memset(&{b}.elem[{i}], 0, sizeof {b}.elem[{i}]);")
            self.emit("}")
            self.emit(f"{b}.next = {b}.next > {count} ? {b}.next - {count} : 0;")

    def _extract(self, arg, length=None) -> None:
        """extract(h) or extract(h, n): the header's fields read big-endian from the packet.  A header
        with a varbit field takes n bits for it (0 without n), checked as the Python target does:
        n beyond the field's maximum -> HeaderTooShort, n not whole bytes -> ParserInvalidArgument,
        then past the packet's end -> PacketTooShort."""
        h = self.lvalue(arg)
        bits = header_bits(arg.type, arg.loc)
        vb = varbit_field(arg.type)
        if vb is None:
            if length is not None:
                raise NativeUnsupported(arg.loc, f"extract with a length of header {arg.type.name}, "
                                        "which has no varbit field")
            self.emit(f"if (off + {bits // 8} > len) {{ s->sm.f_parser_error = {self.error_code('PacketTooShort')}; goto done; }}")
            bit = 0
            for path, f in header_leaves(arg.type, arg.loc):
                w = wire_bits(f.type, f.loc)
                self.emit(_read_field(f"{h}.{path}", f.type, str(bit), w))
                bit += w
            self.emit(f"{h}.valid = 1; off += {bits // 8};")
            return
        vw = self.fresh("vw")
        self.emit(f"uint64_t {vw} = {self.ex(length) if length is not None else 'UINT64_C(0)'};")
        max_w = _varbit_t(vb.type).max_width
        self.emit(f"if ({vw} > {max_w}) {{ s->sm.f_parser_error = {self.error_code('HeaderTooShort')}; goto done; }}")
        self.emit(f"if ({vw} % 8) {{ s->sm.f_parser_error = {self.error_code('ParserInvalidArgument')}; goto done; }}")
        self.emit(f"if (off + ({bits} + {vw}) / 8 > len) {{ s->sm.f_parser_error = "
                  f"{self.error_code('PacketTooShort')}; goto done; }}")
        for path, f, at in self._wire_layout(arg.type, vw):
            if f is vb:
                self.emit(f"memset(&{h}.{path}, 0, sizeof {h}.{path}); {h}.{path}.w = {vw};")
                self.emit(f"for (uint64_t j = 0; j < {vw} / 8; j++) {h}.{path}.b[j] = "
                          f"(uint8_t)tb_get(d + off, {at} + 8 * j, 8);")
            else:
                self.emit(_read_field(f"{h}.{path}", f.type, at, wire_bits(f.type, f.loc)))
        self.emit(f"{h}.valid = 1; off += ({bits} + {vw}) / 8;")

    def _wire_layout(self, t, vw: str) -> list:
        """(C member path, field, C of its bit offset in the header) in wire order (header_leaves);
        fields after the varbit field are placed after its current width `vw`."""
        out, bit, after_vb = [], 0, False
        for path, f in header_leaves(t, t.loc):
            out.append((path, f, f"({vw} + {bit})" if after_vb else str(bit)))
            if isinstance(_varbit_t(f.type), ir.VarbitT):
                after_vb = True
            else:
                bit += wire_bits(f.type, f.loc)
        return out

    def _emit(self, arg) -> None:
        """emit(h): a valid header's fields written big-endian (a varbit field at its current width)."""
        h = self.lvalue(arg)
        bits = header_bits(arg.type, arg.loc)
        vb = varbit_field(arg.type)
        vw = f"{h}.f_{vb.name}.w" if vb is not None else "0"
        self.emit(f"if ({h}.valid) {{")
        for path, f, at in self._wire_layout(arg.type, vw):
            if f is vb:
                self.emit(f"    for (uint64_t j = 0; j < {vw} / 8; j++) tb_put(out + n, {at} + 8 * j, 8, "
                          f"{h}.{path}.b[j]);")
            elif wide_bytes(f.type):
                self.emit(f"    for (uint32_t j = 0; j < {wide_bytes(f.type)}; j++) tb_put(out + n, {at} + 8 * j, 8, "
                          f"{h}.{path}.b[j]);")
            else:
                w = scalar_width(f.type, f.loc)
                self.emit(f"    {_put(w)}(out + n, {at}, {w}, {h}.{path});")
        self.emit(f"    n += {bits // 8}{f' + {vw} / 8' if vb is not None else ''};")
        self.emit("}")

    # ---------------------------------------------------------- blocks

    def bind_params(self, decl, roots: list) -> None:
        """Top-level block params -> the tb_state members, by position."""
        params = [p for p in decl.params if not isinstance(p.type, ir.ExternT)]
        for p, root in zip(params, roots):
            self.env[id(p)] = root

    def locals_(self, decl) -> None:
        for local in decl.locals:
            if isinstance(local, ir.Var) and isinstance(_varbit_t(local.type), LOCAL_COMPOSITES):
                name = self.fresh(f"l_{local.name}")
                self.env[id(local)] = name
                self.statics.append(f"static {self.types.c_type(local.type, local.loc)} {name};")
                self.emit(f"memset(&{name}, 0, sizeof {name});")
            elif isinstance(local, ir.Var):
                if not is_scalar(local.type):
                    raise NativeUnsupported(local.loc, f"the local variable {local.name} of a composite type")
                scalar_width(local.type, local.loc)
                name = self.fresh(f"l_{local.name}")
                self.env[id(local)] = name
                self.statics.append(f"static {self.cvar(local.type)} {name};")
                self.emit(f"{name} = 0;")
            elif isinstance(local, ir.ActionDecl):
                continue   # reached through a table (refused as a direct call)
            elif isinstance(local, ir.TableDecl):
                self.table(local)
            elif isinstance(local, ir.Instance) and isinstance(local.type, ir.ExternT) and \
                    local.type.decl.name in ("register", "counter", "meter"):
                continue   # its arrays live in tb_inst (emit_externs)
            elif isinstance(local, ir.Instance) and isinstance(local.type, (ir.ControlT, ir.ParserT)):
                continue   # inlined where it is applied (sub_control, sub_parser)
            elif isinstance(local, ir.Instance):
                raise NativeUnsupported(local.loc, f"the instance {local.name} ({_type_name(local.type)})")
            elif isinstance(local, ir.ValueSetDecl):
                raise NativeUnsupported(local.loc, f"value_set {local.name}")
            else:
                raise NativeUnsupported(getattr(local, "loc", None), type(local).__name__)
        for s in decl.local_inits:
            self.stmt(s)

    def sub_control(self, c) -> None:
        """A control applied inside another, inlined with copy-in/copy-out:
        each argument is copied into a file-scope variable of the
        parameter's type (so the sub-control's tables and actions reach
        it), the body runs, and inout arguments are copied back."""
        inst, decl = c.instance, c.instance.type.decl
        # applied again: inlined again, unless it has tables or actions (emitted once, bound to the
        # first apply's copies of the parameters); its register, counter and meter instances are
        # the same arrays on every apply, its sub-controls are checked where they are applied
        if id(inst) in self.applied and any(isinstance(x, (ir.TableDecl, ir.ActionDecl)) or (
                isinstance(x, ir.Instance) and not _shared_instance(x)) for x in decl.locals):
            raise NativeUnsupported(c.loc, f"a second apply of {inst.name}, which has tables, actions or instances")
        self.applied.add(id(inst))
        # constructor arguments need nothing here: the front end specialises the body per
        # instance (its constructor parameters are constants, its control arguments instances)
        back = []
        for p, arg in zip(decl.params, c.args):
            if isinstance(p.type, ir.ExternT):
                raise NativeUnsupported(p.loc or c.loc, f"the extern parameter {p.name} of control {decl.name}")
            ctype = self.types.c_type(p.type, p.loc or c.loc)
            name = self.fresh(f"p_{p.name}")
            self.statics.append(f"static {ctype} {name};")
            self.env[id(p)] = name
            if p.direction == "out":   # starts zero (headers invalid), as the Python target's
                self.emit(f"memset(&{name}, 0, sizeof {name});")
                if not isinstance(arg, ir.DontCare):
                    back.append((self.lvalue(arg), name))
                continue
            value = self.ex(arg) if is_scalar(p.type) else self.lvalue(arg)
            self.emit(f"{name} = {value};")
            if p.direction == "inout":
                back.append((self.lvalue(arg), name))
        self.emit("do {")
        self.depth += 1
        self.in_sub += 1
        self.locals_(decl)
        self.stmt(decl.apply)
        self.in_sub -= 1
        self.depth -= 1
        self.emit("} while (0);")
        for target, name in back:
            self.emit(f"{target} = {name};")

    def control(self, fn: str, decl: ir.ControlDecl, roots: list) -> None:
        self.lines.append(f"static void {fn}(tb_state *s, uint32_t drop_port) {{")
        self.lines.append("    (void)drop_port; s->exited = 0;")
        self.ctx = "control"
        self.bind_params(decl, roots)
        self.locals_(decl)
        self.stmt(decl.apply)
        self.lines.append("ctl_exit: ;")
        self.lines.append("}")

    def deparser(self, fn: str, decl: ir.ControlDecl, roots: list) -> None:
        self.ctx = "deparser"
        self.lines.append(f"static uint32_t {fn}(tb_state *s, uint8_t *out) {{")
        self.lines.append("    uint32_t n = 0; uint32_t drop_port = 0; (void)drop_port;")
        self.bind_params(decl, roots)
        self.locals_(decl)
        self.stmt(decl.apply)
        self.lines.append("    return n;")
        self.lines.append("}")

    def parser(self, fn: str, decl: ir.ParserDecl, roots: list) -> None:
        self.ctx = "parser"
        self.lines.append(f"static uint32_t {fn}(tb_state *s, const uint8_t *d, uint32_t len) {{")
        self.lines.append("    uint32_t off = 0, steps = 0; uint32_t drop_port = 0; (void)drop_port;")
        self.bind_params(decl, roots)
        self.locals_(decl)
        self.states(decl, "st_", "done")
        self.lines.append("st_accept:")
        self.lines.append("st_reject:")
        self.lines.append("done:")
        self.lines.append("    return off;")
        self.lines.append("}")

    def states(self, decl, prefix: str, end: str) -> None:
        """A parser's states as labels `prefix<state>` (a transition to accept or reject, none, or
        a select without a match goes to `end`), from its start state."""
        outer, self.state_labels = getattr(self, "state_labels", None), (prefix, end)
        self.emit(f"goto {prefix}start;")
        for st in decl.states:
            self.lines.append(f"{prefix}{st.name}:")
            self.emit(f"if (++steps > {PARSER_STATE_LIMIT}) goto done;")
            for x in st.stmts:
                self.stack_guards(x)
                self.stmt(x)
            if st.transition is not None and not isinstance(st.transition, str):
                self.stack_guards(st.transition)
            self.transition(st.transition, st.loc)
        self.state_labels = outer

    def sub_parser(self, c) -> None:
        """A parser applied from a parser state, inlined into the caller's function (the Python
        back end's call, same cursor): header, struct and stack arguments by reference (an out one
        reset first, an in one copied), scalars through file-scope copies written back after the
        sub-parser ends; its accept, reject and unmatched select return to the caller, an error
        (extract, verify) ends the whole parse, where the caller's scalar arguments keep their
        values.  Its locals start zero on every apply."""
        inst, decl = c.instance, c.instance.type.decl
        if inst.args or decl.ctor_params:
            raise NativeUnsupported(c.loc, f"constructor arguments of {inst.name}")
        back = []
        for p, arg in zip(decl.params, c.args):
            pt = ir.strip_newtype(p.type)
            if isinstance(pt, ir.ExternT):
                if pt.decl.name != "packet_in":
                    raise NativeUnsupported(p.loc or c.loc, f"the extern parameter {p.name} of parser {decl.name}")
                continue   # the caller's cursor
            if not is_scalar(p.type) and p.direction in ("out", "inout") and not isinstance(arg, ir.DontCare):
                if _dynamic(arg):
                    raise NativeUnsupported(arg.loc or c.loc, f"an {p.direction} argument of {inst.name} named "
                                            "through a run-time index")
                target = self.lvalue(arg)
                self.env[id(p)] = target
                if p.direction == "out":
                    self.emit(f"memset(&{target}, 0, sizeof {target});")
                continue
            name = self.fresh(f"p_{p.name}")
            self.statics.append(f"static {self.types.c_type(p.type, p.loc or c.loc)} {name};")
            self.env[id(p)] = name
            if p.direction == "out" or isinstance(arg, ir.DontCare):
                self.emit(f"memset(&{name}, 0, sizeof {name});")
            else:
                self.emit(f"{name} = {self.ex(arg) if is_scalar(p.type) else self.lvalue(arg)};")
            if p.direction in ("out", "inout") and is_scalar(p.type) and not isinstance(arg, ir.DontCare):
                back.append((arg, name))
        prefix, end = self.fresh("sp") + "_", self.fresh("sp_end")
        self.emit("{")
        self.depth += 1
        self.locals_(decl)
        self.states(decl, prefix, end)
        self.depth -= 1
        self.lines.append(f"{end}: ;")
        self.emit("}")
        for arg, name in back:   # a slice, a run-time index: written back through assign
            self.assign(arg, self.temp_ref(name, arg.type, c.loc), c.loc)

    def transition(self, tr, loc) -> None:
        prefix, end = getattr(self, "state_labels", None) or ("st_", "done")
        if tr is None:
            self.emit(f"goto {end};")
            return
        if isinstance(tr, str):
            self.emit(f"goto {end};" if prefix != "st_" and tr in ("accept", "reject") else f"goto {prefix}{tr};")
            return
        keys = []
        for k in tr.keys:
            name = self.fresh("k")
            self.emit(f"{self.cvar(k.type)} {name} = {self.ex(k)};")
            keys.append(name)
        for ks, target in tr.cases:
            items = ks.items if isinstance(ks, ir.KeysetTuple) else [ks]
            if len(items) != len(keys):
                if len(keys) == 1 or not isinstance(ks, (ir.KeysetDefault, ir.DontCare)):
                    items = [ks] * len(keys) if isinstance(ks, (ir.KeysetDefault, ir.DontCare)) else items
            conds = [self._keyset(item, key) for item, key in zip(items, keys)]
            conds = [c for c in conds if c != "1"]
            label = end if prefix != "st_" and target in ("accept", "reject") else f"{prefix}{target}"
            self.emit(f"if ({' && '.join(conds) or '1'}) goto {label};")
        self.emit(f"goto {end};   /* no match: accept with NoError (as the Python target) */")

    def _keyset(self, ks, key: str) -> str:
        if isinstance(ks, (ir.KeysetDefault, ir.DontCare)):
            return "1"
        if isinstance(ks, ir.KeysetMask):
            m = self.ex(ks.mask)
            return f"(({key} & {m}) == ({self.ex(ks.value)} & {m}))"
        if isinstance(ks, ir.KeysetRange):
            return f"({self.ex(ks.lo)} <= {key} && {key} <= {self.ex(ks.hi)})"
        if isinstance(ks, ir.KeysetValueSet):
            raise NativeUnsupported(ks.loc, "a value_set in select")
        return f"({key} == {self.ex(ks)})"


def _dynamic(e) -> bool:
    """Whether an l-value names its target through a run-time index (or a call)."""
    import dataclasses

    if isinstance(e, ir.Index) and not isinstance(e.index, ir.Const):
        return True
    if isinstance(e, ir.FunctionCall):
        return True
    return any(_dynamic(getattr(e, f.name)) for f in dataclasses.fields(e)
               if f.name in ("base", "index") and isinstance(getattr(e, f.name), ir.Expr))


def _read_field(target: str, t, at: str, w: int) -> str:
    """C reading a w-bit header field at bit `at` of the header (d + off) into `target`."""
    n = wide_bytes(t)
    if n:
        return f"for (uint32_t j = 0; j < {n}; j++) {target}.b[j] = (uint8_t)tb_get(d + off, {at} + 8 * j, 8);"
    return f"{target} = {_get(w)}(d + off, {at}, {w});"


def _get(w: int) -> str:
    """The C reader of a w-bit field."""
    return "tb_get128" if w > 64 else "tb_get"


def _put(w: int) -> str:
    """The C writer of a w-bit field."""
    return "tb_put128" if w > 64 else "tb_put"


def _same_c_type(a, b) -> bool:
    """Whether two P4 types have the same C type (the same declaration; stacks: of the same element
    and size, as two fields `H[2] a; H[2] b;` give two StackT objects)."""
    if isinstance(a, ir.StackT) and isinstance(b, ir.StackT):
        return a.size == b.size and a.element is b.element
    if isinstance(a, ir.TupleT) and isinstance(b, ir.TupleT):   # one C type per element list
        return len(a.elements) == len(b.elements) and all(
            _same_c_type(x, y) or (is_scalar(x) and str(x) == str(y)) for x, y in zip(a.elements, b.elements))
    return a is b


def _varbit_t(t):
    """t without new-type wrappers (a VarbitT for a varbit field)."""
    while isinstance(t, ir.NewT):
        t = t.base
    return t


def _packet_in(e, method: str) -> bool:
    """Whether e is a call of packet_in's `method`."""
    return isinstance(e, ir.ExternMethodCall) and e.method.name == method and \
        isinstance(e.target.type, ir.ExternT) and e.target.type.decl.name == "packet_in"


def _in_only(f) -> bool:
    return all(p.direction in ("", "in") for p in f.params)


def _runs_as_statements(e) -> bool:
    """A call of a function with out/inout or composite parameters: it is written as statements
    (copy-in, call, copy-out) before the expression that uses its value (CodeEmitter.ex)."""
    return isinstance(e, ir.FunctionCall) and not (_in_only(e.function) and
                                                   all(is_scalar(p.type) and not is_wide(p.type)
                                                       for p in e.function.params)
                                                   and not _by_pointer(e.function.return_type))


def _by_pointer(t) -> bool:
    """A function's result returned through a pointer (a header, a struct, a bit<W> over 64 bits)."""
    return isinstance(t, (ir.HeaderT, ir.StructT)) or (is_scalar(t) and is_wide(t))


def _effects(e) -> bool:
    """Whether evaluating e runs a call as statements (see _runs_as_statements)."""
    from testbed.p4model.backend.python.effects import nodes

    return e is not None and any(_runs_as_statements(n) for n in nodes(e))


def _stack_refs(node) -> list:
    """Every stack.next / stack.last read in an IR subtree (an extract's own argument excluded:
    extract checks and advances it itself)."""
    import dataclasses

    out: list = []

    def walk(x, skip=None) -> None:
        if isinstance(x, ir.Member) and isinstance(x.base.type, ir.StackT) and x.name in ("next", "last") \
                and x is not skip:
            out.append(x)
        if isinstance(x, (list, tuple)):
            for y in x:
                walk(y, skip)
            return
        if not dataclasses.is_dataclass(x) or isinstance(x, (ir.Type, ir.Var, ir.Param, ir.Instance)) \
                or type(x).__name__.endswith("Decl"):
            return
        own = None
        if isinstance(x, ir.ExternMethodCall) and x.method.name == "extract" and x.args:
            own = x.args[0]
        for f in dataclasses.fields(x):
            if f.name in ("type", "loc"):
                continue
            walk(getattr(x, f.name), own)

    walk(node)
    return out


def _is_sm(t) -> bool:
    return isinstance(t, ir.StructT) and t.name == "standard_metadata_t"


def _type_name(t) -> str:
    decl = getattr(t, "decl", None)
    return getattr(decl, "name", type(t).__name__)


def _construct(x) -> str:
    """A short name of the construct for a refusal line."""
    if isinstance(x, ir.ExternFunctionCall):
        return f"the extern function {x.decl.name}"
    if isinstance(x, ir.ExternMethodCall):
        return f"the extern method {_type_name(x.target.type)}.{x.method.name}"
    if isinstance(x, ir.BuiltinCall):
        return f"the builtin {x.name}"
    if isinstance(x, ir.ActionCall):
        return f"a direct call of action {x.action.name}"
    if isinstance(x, ir.FunctionCall):
        return f"a call of function {x.function.name}"
    if isinstance(x, ir.TableApply):
        return f"apply of table {x.table.name}"
    if isinstance(x, ir.SubApply):
        return f"apply of {x.instance.name}"
    return {"Exit": "exit", "Return": "return", "Switch": "switch statements",
            "For": "for loops"}.get(type(x).__name__, type(x).__name__)



def _plain_index(e) -> bool:
    """An index expression without calls (array_place evaluates it twice)."""
    if isinstance(e, (ir.Const, ir.VarRef)):
        return True
    if isinstance(e, (ir.Member, ir.Slice)):
        return _plain_index(e.base)
    if isinstance(e, ir.Index):
        return _plain_index(e.base) and _plain_index(e.index)
    if isinstance(e, (ir.Cast, ir.Unary)):
        return _plain_index(e.operand)
    if isinstance(e, ir.Binary):
        return _plain_index(e.left) and _plain_index(e.right)
    return False
