"""verify_checksum / update_checksum -> C.

Rule (bmv2, as the Python target): the data list's scalar leaves are packed
MSB-first into bytes, leaves of an invalid header left out, padded to a
whole byte (a varbit field at its current width); csum16 is the ones' complement of the ones' complement sum of
its 16-bit words (an odd last byte padded with zero).  verify sets
standard_metadata.checksum_error when the condition holds, the checksum
field's header is valid and the value differs; update writes the field
when the condition holds.  *_with_payload appends the packet's unparsed
payload after the data list's bytes.  Other algorithms are refused for
now."""

from __future__ import annotations

from testbed.p4model.backend.native.emit_types import mask, scalar_width
from testbed.p4model.backend.native.errors import NativeUnsupported
from testbed.p4model.frontend import ir

C_CSUM16 = r"""
static uint64_t tb_csum16(const uint8_t *p, uint32_t bits) {
    uint32_t n = (bits + 7) / 8;
    uint64_t sum = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) sum += ((uint32_t)p[i] << 8) | p[i + 1];
    if (n & 1) sum += (uint32_t)p[n - 1] << 8;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return (~sum) & 0xFFFF;
}
/* csum16 of the bytes of p (`bits` rounded up to bytes) followed by the n2 bytes of p2 */
static uint64_t tb_csum16_2(const uint8_t *p, uint32_t bits, const uint8_t *p2, uint32_t n2) {
    uint32_t n1 = (bits + 7) / 8, n = n1 + n2;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i += 2) {
        uint32_t hi = i < n1 ? p[i] : p2[i - n1];
        uint32_t lo = i + 1 >= n ? 0 : i + 1 < n1 ? p[i + 1] : p2[i + 1 - n1];
        sum += (hi << 8) | lo;
    }
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return (~sum) & 0xFFFF;
}
"""


class ChecksumMixin:
    def checksum(self, c, verify: bool, payload: bool = False) -> None:
        """verify/update_checksum(_with_payload); with payload, the packet's unparsed rest (what
        the deparser appends) follows the packed data list, from a whole byte (as the Python target)."""
        from testbed.p4model.backend.python.externs import enum_member

        cond, data, field, algo = c.args
        name = enum_member(algo)
        if name != "csum16":
            raise NativeUnsupported(algo.loc or c.loc, f"checksum algorithm {name}")
        guard = self.ex(cond)
        if verify and isinstance(field, ir.Member) and isinstance(field.base.type, ir.HeaderT):
            guard = f"{guard} && {self.lvalue(field.base)}.valid"
        self.emit(f"if ({guard}) {{")
        self.depth += 1
        buf = self.pack_leaves(data, "ck")
        value = f"tb_csum16({buf}, {buf}_n)"
        if payload:
            rest = "(s->payload_off < s->data_len ? s->data_len - s->payload_off : 0)"
            value = f"tb_csum16_2({buf}, {buf}_n, s->data + s->payload_off, {rest})"
        w = scalar_width(field.type, field.loc)
        if verify:
            self.emit(f"if (({value} & {mask(w)}) != {self.ex(field)}) s->sm.f_checksum_error = 1;")
        else:
            self.emit(f"{self.lvalue(field)} = {value} & {mask(w)};")
        self.depth -= 1
        self.emit("}")

    def pack_leaves(self, data, stem: str) -> str:
        """Declares a byte buffer `buf` and `buf_n` (bits) holding the data list's leaves packed
        MSB-first (leaves of invalid headers left out, a varbit at its current width); returns buf."""
        leaves = self._leaves(data)
        bits = sum(most for _, _, _, most in leaves)
        buf = self.fresh(stem)
        self.emit(f"uint8_t {buf}[{(bits + 7) // 8 + 1}] = {{0}}; uint32_t {buf}_n = 0;")
        for code, valid, w, _most in leaves:
            if isinstance(w, str):   # a varbit field: w is the C of its current width
                put = (f"for (uint64_t j = 0; j < {w} / 8; j++) tb_put({buf}, {buf}_n + 8 * j, 8, {code}.b[j]); "
                       f"{buf}_n += {w};")
            else:
                put = f"{'tb_put128' if w > 64 else 'tb_put'}({buf}, {buf}_n, {w}, {code}); {buf}_n += {w};"
            self.emit(f"if ({valid}) {{ {put} }}" if valid else put)
        return buf

    def _leaves(self, e, valid=None) -> list:
        """(C value, C validity or None, width, widest width) per scalar leaf, in order; a varbit
        leaf's width is the C of its current width (a str) and its value the C of the varbit."""
        t = e.type
        if isinstance(e, ir.ListExpr):
            return [x for item in e.items for x in self._leaves(item, valid)]
        if isinstance(e, ir.StructExpr):
            return [x for item in e.fields.values() for x in self._leaves(item, valid)]
        if isinstance(t, ir.HeaderT):
            h = self.lvalue(e)
            return [x for f in t.fields
                    for x in self._leaves(ir.Member(e, f.name, type=f.type, loc=e.loc), f"{h}.valid")]
        if isinstance(t, ir.StructT):
            s = self.lvalue(e)
            out = []
            for f in t.fields:
                out += self._leaves(ir.Member(e, f.name, type=f.type, loc=e.loc), valid)
            return out
        if isinstance(e, ir.Member) and isinstance(e.base.type, ir.HeaderT):
            valid = f"{self.lvalue(e.base)}.valid"
        if isinstance(_base(t), ir.VarbitT):
            code = self.lvalue(e)
            return [(code, valid, f"{code}.w", _base(t).max_width)]
        w = scalar_width(t, e.loc)
        return [(self.ex(e), valid, w, w)]


def _base(t):
    while isinstance(t, ir.NewT):
        t = t.base
    return t
