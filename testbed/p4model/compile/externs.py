"""Code generation for extern calls: packet_in/packet_out methods, v1model
extern objects (register, counter, meter, direct_*), and v1model/core
extern functions (hash, checksums, clone, resubmit, digest, ...).

Semantics follow bmv2 simple_switch; the decisions these calls request
(clone, resubmit, recirculate, truncate, digest) are written into the
per-packet context `RT.pkt` and carried out by testbed/p4model/v1model.py.
"""

from __future__ import annotations

import re
import struct

from testbed.p4model.runtime import externs as rtx
from testbed.p4model.runtime import hashing
from testbed.p4model.backend.python.exprs import mask, to_unsigned, wrap
from testbed.p4model.backend.python.structcodec import byte_runs, combine, split_pieces, struct_format
from testbed.p4model.backend.python.types import scalar_type, width_of, wire_view
from testbed.p4model.errors import P4Error, P4Unsupported
from testbed.p4model.frontend import ir

_STACK_ELEMENT = re.compile(r"^(.+\.elems)\[\d+\]$")  # a header stack's element by constant index

_PLAIN_READ = re.compile(r"[A-Za-z_][\w.]*")  # a field read: safe to evaluate once per struct item


def _stack_of(guard: str | None) -> str | None:
    """The header stack of a leaf whose guard is `stack.elems[i]._valid`, else None."""
    if guard is None or not guard.endswith("._valid"):
        return None
    m = _STACK_ELEMENT.match(guard[:-len("._valid")])
    return m.group(1)[:-len(".elems")] if m else None


def _pure(e: ir.Expr) -> bool:
    """`e` reads values only (no call, nothing that can raise): it may be
    evaluated out of its place in an argument list."""
    if isinstance(e, (ir.Const, ir.VarRef)):
        return True
    if isinstance(e, ir.Member):
        return not isinstance(ir.strip_newtype(e.base.type), ir.StackT) and _pure(e.base)
    if isinstance(e, (ir.Cast, ir.Slice)):
        return _pure(e.operand if isinstance(e, ir.Cast) else e.base)
    if isinstance(e, ir.ListExpr):
        return all(_pure(x) for x in e.items)
    if isinstance(e, ir.StructExpr):
        return all(_pure(x) for x in e.fields.values())
    return False


def enum_member(e: ir.Expr) -> str:
    """Name of an enum constant argument (e.g. HashAlgorithm.crc16)."""
    t = ir.strip_newtype(e.type)
    if isinstance(e, ir.Const) and isinstance(t, ir.EnumT):
        if t.underlying is None and 0 <= e.value < len(t.members):
            return t.members[e.value]
        for name, value in t.values.items():
            if value == e.value:
                return name
    raise P4Error(e.loc, "expected an enum constant here")


class ExternMixin:
    """Extern call generation (needs ExprMixin/StmtMixin and the compiler's
    object registry: self.objects, self.add_global, self.error_code)."""

    # ------------------------------------------------------------- methods

    def call_extern_method(self, e: ir.ExternMethodCall, want: bool) -> str:
        tt = ir.strip_newtype(e.target.type)
        if not isinstance(tt, ir.ExternT):
            raise P4Unsupported(e.loc, "method call on a non-extern value")
        kind = tt.decl.name
        handler = getattr(self, f"m_{kind}_{e.method.name}", None)
        if handler is None:
            raise P4Unsupported(e.loc, f"extern method {kind}.{e.method.name}")
        return handler(e, want)

    # packet_in

    def m_packet_in_extract(self, e, want):
        target = e.args[0]
        is_next = isinstance(target, ir.Member) and target.name == "next" \
            and isinstance(ir.strip_newtype(target.base.type), ir.StackT)
        if self._union_stack_next(target):
            self._extract_union_next(target, e.args[1] if len(e.args) > 1 else None)
            return "None"
        if len(e.args) == 1:
            if is_next:
                self.emit(f"{self.ex(target.base)}._extract_next(pk)")
            else:
                self._extract_fixed(target)
        else:
            bits = self.ex(e.args[1])
            if is_next:
                self.emit(f"{self.ex(target.base)}._extract_next_vb(pk, {bits})")
            else:
                self.emit(f"{self.ex(target)}._extract_vb(pk, {bits})")
        return "None"

    @staticmethod
    def _union_stack_next(target: ir.Expr) -> bool:
        """`stack.next.member` on a stack of header unions."""
        if not (isinstance(target, ir.Member) and isinstance(target.base, ir.Member)
                and target.base.name == "next"):
            return False
        st = ir.strip_newtype(target.base.base.type)
        return isinstance(st, ir.StackT) and isinstance(ir.strip_newtype(st.element), ir.UnionT)

    def _extract_union_next(self, target: ir.Member, bits) -> None:
        """extract(u.next.member): the member of the next free union is
        extracted (its siblings become invalid) and the stack advances."""
        stack = self.ex(target.base.base)
        union_t = ir.strip_newtype(ir.strip_newtype(target.base.base.type).element)
        u = self.tmp("u")
        self.emit(f"{u} = {stack}._next()")
        if bits is None:
            self.emit(f"{u}.{target.name}._extract(pk)")
        else:
            self.emit(f"{u}.{target.name}._extract_vb(pk, {self.ex(bits)})")
        for f in union_t.fields:
            if f.name != target.name:
                self.emit(f"{u}.{f.name}._valid = False")
        self.emit(f"{stack}.nxt += 1")

    def _extract_fixed(self, target: ir.Expr) -> None:
        """extract(hdr): the header's struct codec inlined (no method call)."""
        t = ir.strip_newtype(target.type)
        h = self.tmp("h")
        lines = self.types.inline_extract(t, h) if isinstance(t, ir.HeaderT) else None
        if lines is None:
            self.emit(f"{self.ex(target)}._extract(pk)")
            return
        self.emit(f"{h} = {self.ex(target)}")
        for line in lines:
            self.emit(line)

    def m_packet_in_lookahead(self, e, want):
        t = e.type_args[0] if e.type_args else e.type
        st = ir.strip_newtype(t)
        if isinstance(st, ir.HeaderT):
            cls = self.types.class_of(st)
            return f"_lookahead_hdr(pk, {cls}(), {(st.bit_width() + 7) // 8})"
        w = width_of(t)
        raw = f"_lookahead(pk, {w})"
        sc = scalar_type(t)
        if isinstance(sc, ir.BoolT):
            return f"({raw} == 1)"
        if isinstance(sc, ir.BitT) and sc.signed:
            return wrap(raw, sc)
        return raw

    def m_packet_in_advance(self, e, want):
        self.emit(f"_advance(pk, {self.ex(e.args[0])})")
        return "None"

    def m_packet_in_length(self, e, want):
        return "pk.end"

    # packet_out

    def m_packet_out_emit(self, e, want):
        arg = e.args[0]
        t = ir.strip_newtype(arg.type)
        out = self.ex(e.target)
        if isinstance(t, ir.HeaderT):
            # inlined _emit: no method call for an invalid header
            h = self.tmp("h")
            self.emit(f"{h} = {self.ex(arg)}")
            inline = self.types.inline_bytes(t, h)
            if inline is None:
                self.emit(f"if {h}._valid: {out}.append({h}._bytes())")
            else:   # the struct pack inlined: no method call
                pre, packed = inline
                self.emit(f"if {h}._valid:")
                for line in pre:
                    self.emit(f"    {line}")
                self.emit(f"    {out}.append({packed})")
        elif isinstance(t, ir.StackT) and isinstance(ir.strip_newtype(t.element), ir.HeaderT):
            h, st = self.tmp("h"), self.tmp("st")
            self.emit(f"{st} = {self.ex(arg)}")
            self.emit(f"if {st}._live:")  # a stack not live has no valid element
            self.emit(f"    for {h} in {st}.elems:")
            self.emit(f"        if {h}._valid: {out}.append({h}._bytes())")
        else:
            self.emit(f"{self.ex(arg)}._emit({out})")
        return "None"

    # register / counter / meter

    def _index_code(self, index: ir.Expr) -> str:
        """`index` as code to read twice: a constant, or a local it is read into."""
        code = self.ex(index)
        if isinstance(index, ir.Const):
            return code
        i = self.tmp("i")
        self.emit(f"{i} = {code}")
        return i

    def m_register_read(self, e, want):
        reg = self.ex(e.target)
        register = self.globals.get(reg)
        t = self.tmp("rv")
        if isinstance(register, rtx.RegisterArray):
            # RegisterArray.read written out (no call per packet); `values` is read
            # through the register each time, as reset() replaces it
            i = self._index_code(e.args[1])
            self.emit(f"if 0 <= {i} < {register.size}:")
            self.src.indent()
            self.emit(f"{t} = {reg}.values[{i}]")
        else:
            self.emit(f"{t} = {reg}.read({self.ex(e.args[1])})")
            self.emit(f"if {t} is not None:")
            self.src.indent()
        rt = scalar_type(e.args[0].type)
        value = t
        if isinstance(rt, ir.BitT) and rt.signed:
            value = wrap(t, rt)
        elif isinstance(rt, ir.BoolT):
            value = f"({t} == 1)"
        self.assign(e.args[0], value)
        self.src.dedent()
        return "None"

    def m_register_write(self, e, want):
        reg = self.ex(e.target)
        register = self.globals.get(reg)
        if isinstance(register, rtx.RegisterArray):  # RegisterArray.write written out
            i = self._index_code(e.args[0])
            v = self.tmp("v")  # evaluated whatever the index, as the call's argument was
            self.emit(f"{v} = {to_unsigned(self.ex(e.args[1]), e.args[1].type)}")
            self.emit(f"if 0 <= {i} < {register.size}: {reg}.values[{i}] = {v} & {hex(register._mask)}")
            return "None"
        value = to_unsigned(self.ex(e.args[1]), e.args[1].type)
        self.emit(f"{reg}.write({self.ex(e.args[0])}, {value})")
        return "None"

    def m_counter_count(self, e, want):
        target = self.ex(e.target)
        counter = self.globals.get(target)
        if not isinstance(counter, rtx.CounterArray):  # e.g. a counter passed as an argument
            self.emit(f"{target}.count({self.ex(e.args[0])}, RT.pkt.ingress_length)")
            return "None"
        # CounterArray.count written out (no call per packet); its lists are read
        # through the counter each time, as reset() replaces them
        index = self._index_code(e.args[0])
        self.emit(f"if 0 <= {index} < {counter.size}: "
                  f"{target}.packets[{index}] += 1; {target}.bytes[{index}] += RT.pkt.ingress_length")
        return "None"

    def m_meter_execute_meter(self, e, want):
        t = self.tmp("c")
        self.emit(f"{t} = {self.ex(e.target)}.execute({self.ex(e.args[0])}, RT.pkt.ingress_length)")
        self.assign(e.args[1], t, ir.BitT(32))
        return "None"

    def m_direct_counter_count(self, e, want):
        return "None"   # bmv2 counts on every hit of the owning table

    def m_direct_meter_read(self, e, want):
        inst = e.target.target if isinstance(e.target, ir.InstanceRef) else None
        key = id(inst)
        self.assign(e.args[0], f"RT.pkt.meter_result({key})", ir.BitT(32))
        return "None"

    # ---------------------------------------------------------- functions

    def call_extern_function(self, e: ir.ExternFunctionCall, want: bool) -> str:
        name = e.decl.name
        handler = getattr(self, f"f_{name}", None)
        if handler is None:
            raise P4Unsupported(e.loc, f"extern function {name}")
        return handler(e, want)

    def _sm(self, e) -> str:
        return self.ex(e.args[0]) if e.args else "RT.pkt.sm"

    def f_mark_to_drop(self, e, want):
        sm = self._sm(e)
        self.emit(f"{sm}.egress_spec = DROP_PORT; {sm}.mcast_grp = 0")
        return "None"

    def f_verify(self, e, want):
        self.emit(f"if not {self.ex(e.args[0])}: raise ParseError({self.ex(e.args[1])})")
        return "None"

    def _fail(self, e, what):
        msg = f"{e.loc}: {what} failed"
        self.emit(f"if not {self.ex(e.args[0])}: raise PacketAbort({msg!r})")
        return "None"

    def f_assert(self, e, want):
        return self._fail(e, "assert")

    def f_assume(self, e, want):
        return self._fail(e, "assume")

    def f_log_msg(self, e, want):
        values = "[]"
        if len(e.args) > 1:
            values = "[" + ", ".join(code for code, _, _ in self.flatten(e.args[1])) + "]"
        self.emit(f"_log_msg({self.ex(e.args[0])}, {values})")
        return "None"

    def f_random(self, e, want):
        self.assign(e.args[0], f"RNG.uniform({self.ex(e.args[1])}, {self.ex(e.args[2])})",
                    ir.IntLitT())
        return "None"

    def _request(self, kind: str, statement: str) -> str:
        """Write a statement that leaves a request for the architecture in the
        packet context, and note that the program makes it (REQUESTS)."""
        self.requests.add(kind)
        self.emit(statement)
        return "None"

    def f_truncate(self, e, want):
        return self._request("truncate", f"RT.pkt.truncate = {self.ex(e.args[0])}")

    def f_digest(self, e, want):
        data = e.args[1]
        t = ir.strip_newtype(e.type_args[0] if e.type_args else data.type)
        name = getattr(t, "name", "digest")
        values = ", ".join(to_unsigned(code, ft) for code, _, ft in self.flatten(data, guards=False))
        return self._request("digest", f"RT.pkt.digest = ({name!r}, ({values},))" if values
                             else f"RT.pkt.digest = ({name!r}, ())")

    # clone / resubmit / recirculate

    def f_clone(self, e, want):
        return self._request("clone", f"RT.pkt.clone_session = {self.ex(e.args[1])}; RT.pkt.clone_fields = NO_FIELDS")

    def f_clone3(self, e, want):
        fl = self.field_list_from_data(e.args[2])
        return self._request("clone", f"RT.pkt.clone_session = {self.ex(e.args[1])}; RT.pkt.clone_fields = {fl}")

    def f_clone_preserving_field_list(self, e, want):
        fl = self.field_list_from_index(e.args[2])
        return self._request("clone", f"RT.pkt.clone_session = {self.ex(e.args[1])}; RT.pkt.clone_fields = {fl}")

    def f_resubmit(self, e, want):
        fl = self.field_list_from_data(e.args[0]) if e.args else "NO_FIELDS"
        return self._request("resubmit", f"RT.pkt.resubmit = {fl}")

    def f_resubmit_preserving_field_list(self, e, want):
        return self._request("resubmit", f"RT.pkt.resubmit = {self.field_list_from_index(e.args[0])}")

    def f_recirculate(self, e, want):
        fl = self.field_list_from_data(e.args[0]) if e.args else "NO_FIELDS"
        return self._request("recirculate", f"RT.pkt.recirculate = {fl}")

    def f_recirculate_preserving_field_list(self, e, want):
        return self._request("recirculate", f"RT.pkt.recirculate = {self.field_list_from_index(e.args[0])}")

    # hash and checksums

    def hasher(self, algo_expr: ir.Expr) -> str:
        algo = enum_member(algo_expr)
        if algo not in hashing.ALGORITHMS:
            raise P4Unsupported(algo_expr.loc, f"hash algorithm {algo} (bmv2 has none such)")
        return self.add_global("HF", hashing.make_hasher(algo), kind="hash", label=algo)

    def f_hash(self, e, want):
        result, algo, base, data, max_ = e.args
        hf = self.hasher(algo)
        direct = self._identity_direct(data) if enum_member(algo) == "identity" else None
        h = direct or f"{hf}({self.pack(data)})"
        b = self.ex(base)
        if isinstance(max_, ir.Const):
            if max_.value == 0:
                value = b
            else:
                value = f"{b} + {h} % {max_.value}"
        elif direct is not None and _pure(data) and _pure(max_) and isinstance(base, ir.Const):
            # hashing.reduce written out (max 0 taken as 1: the result is base); reading
            # max before the data is safe: neither has side effects
            m, b = self.tmp("m"), int(base.value) & 0xffffffffffffffff
            value = f"(({h} % {m}) if ({m} := ({self.ex(max_)}) & 0xffffffffffffffff) else 0)"
            if b:
                value = f"({value} + {b}) & 0xffffffffffffffff"
        else:
            value = f"_hash_reduce({h}, {b}, {self.ex(max_)})"
        self.assign(result, value, ir.IntLitT())
        return "None"

    def _identity_direct(self, data: ir.Expr) -> str | None:
        """The identity hash of a field list as an int expression, without
        its bytes, or None.  identity is the first 8 bytes of the packed list
        (hashing.identity), so for fields of W bits in all (padded to whole
        bytes at the end) it is their concatenation shifted left by the pad,
        or its top 64 bits; an invalid header packs to nothing (0).  Lists
        without varbits, either all outside headers or all in one header."""
        leaves = self.flatten(data)
        if any(isinstance(ir.strip_newtype(t), ir.VarbitT) for _, _, t in leaves):
            return None
        guards = {g for _, g, _ in leaves}
        if len(guards) > 1:
            return None
        guard = guards.pop() if guards else None
        total = sum(width_of(t) for _, _, t in leaves)
        if total == 0:
            return "0"
        parts, shift = [], total
        for code, _, t in leaves:
            w = width_of(t)
            shift -= w
            if w == 0:
                continue
            v = to_unsigned(code, t)
            sc = scalar_type(t)
            if not (isinstance(sc, ir.BitT) and not sc.signed):
                v = f"({v} & {mask(w)})"
            parts.append(f"({v} << {shift})" if shift else v)
        value = " | ".join(parts)
        pad = -total % 8
        if total > 64:
            value = f"(({value}) >> {total - 64})"
        elif pad:
            value = f"(({value}) << {pad})"
        else:
            value = f"({value})"
        return f"({value} if {guard} else 0)" if guard else value

    def _checksum_guard(self, field: ir.Expr) -> str | None:
        if isinstance(field, ir.Member) and isinstance(ir.strip_newtype(field.base.type), ir.HeaderT):
            return f"{self.ex(field.base)}._valid"
        return None

    def _verify(self, e, payload: bool):
        cond, data, field, algo = e.args
        hf = self.hasher(algo)
        w = width_of(field.type)
        # the condition first (argument order), the packing only when it holds
        checked = [self.ex(cond), self._checksum_guard(field)]
        self.emit(f"if {' and '.join(f'({c})' for c in checked if c)}:")
        self.src.indent()
        value = None if payload else self._csum16_direct(algo, data, checked)
        if value is None:
            packed = self.pack(data) + (" + RT.pkt.payload" if payload else "")
            value = f"{hf}({packed})"
        self.emit(f"if ({value} & {mask(w)}) != {to_unsigned(self.ex(field), field.type)}:"
                  " RT.pkt.sm.checksum_error = 1")
        self.src.dedent()
        return "None"

    def _update(self, e, payload: bool):
        cond, data, field, algo = e.args
        hf = self.hasher(algo)
        checked = self.ex(cond)
        self.emit(f"if {checked}:")
        self.src.indent()
        value = None if payload else self._csum16_direct(algo, data, [checked])
        if value is None:
            packed = self.pack(data) + (" + RT.pkt.payload" if payload else "")
            value = f"{hf}({packed})"
        self.assign(field, value, ir.IntLitT())
        self.src.dedent()
        return "None"

    def _csum16_direct(self, algo: ir.Expr, data: ir.Expr, checked: list) -> str | None:
        """csum16 of a field list without building its bytes, or None.

        The list's bytes read as one number n, 16-bit words being its
        base-65536 digits, and 65536 = 1 (mod 0xffff): n mod 0xffff is the
        sum of each field shifted by its bit offset modulo 16.  So the
        checksum is ~(sum - 1) % 0xffff + 1 (0xffff for an all-zero list)
        over small ints.  Lists without varbits, either of one header (or
        none), or of several runs of fields under their own validity (IPv4
        and its option stack) each a whole number of 16-bit words long, so
        that a run left out (invalid header) moves the others by whole
        words; `checked`: conditions the enclosing `if` already tested."""
        if enum_member(algo) != "csum16":
            return None
        leaves = self.flatten(data)
        if any(isinstance(ir.strip_newtype(t), ir.VarbitT) for _, _, t in leaves):
            return None
        runs: list = []  # [guard, width] per run of leaves under the same guard
        for _, g, t in leaves:
            if runs and runs[-1][0] == g:
                runs[-1][1] += width_of(t)
            else:
                runs.append([g, width_of(t)])
        if len(runs) > 1 and any(width % 16 for _, width in runs):
            return None
        known = [g is None or g in checked for _, g, _ in leaves]  # valid here: no test
        stacks = [_stack_of(g) for _, g, _ in leaves]  # the stack holding each leaf's header, if any
        leaves = self._bind_holders(leaves)
        total = sum(width_of(t) for _, _, t in leaves)
        total += -total % 8             # pack_fields pads to whole bytes,
        total += -total % 16            # csum16 an odd byte count to a word
        sums: list = []                 # [guard or None, terms, leaf guard, stack] per run
        offset = total
        for (code, g, t), valid, stack in zip(leaves, known, stacks):
            guard = None if valid else g
            if not sums or sums[-1][0] != guard or sums[-1][2] != g:
                sums.append([guard, [], g, stack if guard else None])
            w = width_of(t)
            offset -= w
            if w == 0:
                continue
            v = to_unsigned(code, t)
            sc = scalar_type(t)
            if not (isinstance(sc, ir.BitT) and not sc.signed):
                v = f"({v} & {mask(w)})"
            sums[-1][1].append(f"({v} << {offset % 16})" if offset % 16 else v)
        acc = self.tmp("sum")
        within = None  # the stack whose `if stack._live:` the lines are in
        for i, (guard, terms, _, stack) in enumerate(sums):
            value = " + ".join(terms) or "0"
            if i == 0:
                self.emit(f"{acc} = {value}" + (f" if {guard} else 0" if guard else ""))
                continue
            if not terms:
                continue
            if stack != within:
                if within is not None:
                    self.src.dedent()
                within = stack
                if stack is not None:
                    # a stack that is not live has no valid element: one test, not one per element
                    self.emit(f"if {stack}._live:")
                    self.src.indent()
            self.emit(f"if {guard}: {acc} += {value}" if guard else f"{acc} += {value}")
        if within is not None:
            self.src.dedent()
        if not sums:
            self.emit(f"{acc} = 0")
        return f"((~((({acc} - 1) % 0xFFFF) + 1) & 0xFFFF) if {acc} else 0xFFFF)"

    def f_verify_checksum(self, e, want):
        return self._verify(e, False)

    def f_verify_checksum_with_payload(self, e, want):
        return self._verify(e, True)

    def f_update_checksum(self, e, want):
        return self._update(e, False)

    def f_update_checksum_with_payload(self, e, want):
        return self._update(e, True)

    # ------------------------------------------------------------ packing

    def flatten(self, e: ir.Expr, guards: bool = True, guard: str | None = None):
        """The scalar leaves of a data argument as (code, guard, type):
        guard is the code of the validity of the header holding the leaf
        (None when not in a header) so invalid headers can be skipped."""
        t = ir.strip_newtype(e.type)
        if isinstance(e, ir.ListExpr):
            out = []
            for item in e.items:
                out += self.flatten(item, guards, guard)
            return out
        if isinstance(e, ir.StructExpr):
            out = []
            for value in e.fields.values():
                out += self.flatten(value, guards, guard)
            return out
        if isinstance(t, (ir.StructLikeT, ir.StackT)):
            code = self.ex(e)
            return self._flatten_value(code, t, guard)
        if isinstance(e, ir.Member) and isinstance(ir.strip_newtype(e.base.type), ir.HeaderT):
            guard = f"{self.ex(e.base)}._valid"
        return [(self.ex(e), guard, e.type)]

    def _flatten_value(self, code: str, t: ir.Type, guard):
        t = ir.strip_newtype(t)
        if isinstance(t, ir.HeaderT):   # a struct field's leaves, in wire order
            return [(f"{code}.{f.name}", f"{code}._valid", f.type) for f in wire_view(t).fields]
        if isinstance(t, ir.StructLikeT):
            out = []
            for f in t.fields:
                out += self._flatten_value(f"{code}.{f.name}", f.type, guard)
            return out
        if isinstance(t, ir.StackT):
            out = []
            for i in range(t.size):
                out += self._flatten_value(f"{code}.elems[{i}]", t.element, guard)
            return out
        return [(code, guard, t)]

    def pack(self, data: ir.Expr) -> str:
        """Code of the bytes of a field list, packed MSB-first and padded
        at the end (hashing.pack_fields), skipping invalid headers."""
        leaves = self.flatten(data)
        varbit = any(isinstance(ir.strip_newtype(t), ir.VarbitT) for _, _, t in leaves)
        guards = {g for _, g, _ in leaves}
        if varbit:
            # bmv2 packs a varbit field at its current length, so the
            # layout is known per packet only: build the (value, width) list
            return self._pack_list(leaves)
        if len(guards) == 1 and None not in guards:
            # one header (the common checksum case): inline, or nothing if invalid
            g = guards.pop()
            inline = self._pack_inline([(c, None, t) for c, _, t in leaves])
            return f"({inline} if {g} else b'')"
        if not any(guards):
            return self._pack_inline(leaves)
        return self._pack_segments(leaves)

    def _pack_segments(self, leaves) -> str:
        """Several headers (or headers and metadata): one integer built
        segment by segment, a run of leaves under the same guard being one
        segment added only when its header is valid (no per-packet list of
        (value, width) pairs)."""
        leaves = self._bind_holders(leaves)
        segments: list = []
        for code, g, t in leaves:
            if segments and segments[-1][0] == g:
                segments[-1][1].append((code, t))
            else:
                segments.append((g, [(code, t)]))
        acc, bits = self.tmp("acc"), self.tmp("bits")
        static = 0          # bits of the unconditional prefix, known here
        started = False
        for g, items in segments:
            total = sum(width_of(t) for _, t in items)
            if total == 0:
                continue
            parts = []
            shift = total
            for code, t in items:
                w = width_of(t)
                shift -= w
                v = to_unsigned(code, t)
                sc = scalar_type(t)
                if not (isinstance(sc, ir.BitT) and not sc.signed):
                    v = f"({v} & {mask(w)})"
                parts.append(f"({v} << {shift})" if shift else v)
            value = " | ".join(parts)
            if g is None and not started:
                # unconditional leading segment
                self.emit(f"{acc} = ({acc} << {total}) | {value}" if static else f"{acc} = {value}")
                static += total
                continue
            if not started:
                if static == 0:
                    self.emit(f"{acc} = 0")
                self.emit(f"{bits} = {static}")
                started = True
            stmt = f"{acc} = ({acc} << {total}) | {value}; {bits} += {total}"
            self.emit(f"if {g}: {stmt}" if g else stmt)
        if not started:
            if static == 0:
                return "b''"
            pad = -static % 8
            return f"({acc} << {pad}).to_bytes({(static + pad) // 8}, 'big')" if pad else \
                f"{acc}.to_bytes({static // 8}, 'big')"
        return f"({acc} << (-{bits} % 8)).to_bytes(({bits} + 7) // 8, 'big')"

    def _bind_holders(self, leaves) -> list:
        """The leaves with each header read through a local (and each header
        stack's element list), bound once here, instead of its path being
        walked again for every field and validity test: a checksum over
        IPv4 and a 10-deep option stack reads the stack 20 times."""
        headers: dict[str, int] = {}
        for code, g, _ in leaves:
            if g is not None and g.endswith("._valid"):
                holder = g[:-len("._valid")]
                headers[holder] = headers.get(holder, 0) + 1
        stacks: dict[str, int] = {}
        for holder in headers:
            m = _STACK_ELEMENT.match(holder)
            if m:
                stacks[m.group(1)] = stacks.get(m.group(1), 0) + 1
        names: dict[str, str] = {}
        for container, n in stacks.items():
            if n > 1:
                local = names[container + "["] = self.tmp("s") + "["
                # a stack that is not live reads as its class's pristine elements
                # (only read here): the packet's own are not made for this
                stack = container[:-len(".elems")]
                self.emit(f"{local[:-1]} = {container} if {stack}._live else {stack}._blank")
        for holder, n in headers.items():
            if n > 1 and not _STACK_ELEMENT.match(holder):
                local = names[holder + "."] = self.tmp("h") + "."
                self.emit(f"{local[:-1]} = {holder}")

        def rebind(code):
            if code is None:
                return None
            for path, local in names.items():
                if code.startswith(path):
                    return local + code[len(path):]
            return code
        return [(rebind(code), rebind(g), t) for code, g, t in leaves] if names else leaves

    def _pack_struct(self, leaves) -> str | None:
        """The bytes of a whole-byte list with one precompiled struct (see
        structcodec), or None when it does not split into byte runs (or a
        run spread over several items is not a plain field read)."""
        values = []
        for code, _, t in leaves:
            w = width_of(t)
            v = to_unsigned(code, t)
            sc = scalar_type(t)
            if not (isinstance(sc, ir.BitT) and not sc.signed):
                v = f"({v} & {mask(w)})"
            values.append((v, w))
        runs = byte_runs(values)
        if not runs:
            return None
        items = []
        for run in runs:
            value = combine(run.fields)
            if run.one_int_item:
                items.append(value)
            elif len(run.fields) == 1 and _PLAIN_READ.fullmatch(value):
                items += split_pieces(value, run.pieces)
            elif len(run.pieces) == 1:   # one bytes item
                items.append(f"({value}).to_bytes({run.pieces[0][0]}, 'big')")
            else:
                return None
        packer = self.add_global("_PK", struct.Struct(struct_format(runs)).pack)
        return f"{packer}({', '.join(items)})"

    def _pack_list(self, leaves) -> str:
        """Pack at run time: leaves of invalid headers are skipped; a
        varbit leaf (a (width, value) pair) adds its current width."""
        fl = self.tmp("fl")
        self.emit(f"{fl} = []")
        for code, g, t in leaves:
            if isinstance(ir.strip_newtype(t), ir.VarbitT):
                item = f"{fl}.append({code}[::-1])"
            else:
                item = f"{fl}.append(({to_unsigned(code, t)}, {width_of(t)}))"
            self.emit(f"if {g}: {item}" if g else item)
        return f"pack_fields({fl})"

    def _pack_inline(self, leaves) -> str:
        total = sum(width_of(t) for _, _, t in leaves)
        if total == 0:
            return "b''"
        packed = self._pack_struct(leaves)
        if packed is not None:
            return packed
        pad = -total % 8
        parts = []
        shift = total + pad
        for code, _, t in leaves:
            w = width_of(t)
            shift -= w
            v = to_unsigned(code, t)
            sc = scalar_type(t)
            if not (isinstance(sc, ir.BitT) and not sc.signed):
                v = f"({v} & {mask(w)})"
            parts.append(f"({v} << {shift})" if shift else v)
        return f"({' | '.join(parts)}).to_bytes({(total + pad) // 8}, 'big')"
