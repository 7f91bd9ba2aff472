"""register and counter instances -> arrays in the switch instance's C
memory (tb_inst), read and written in place by the Python control plane
through objects.NativeRegister / NativeCounter.

Rule (bmv2, as the Python target): register.read leaves its destination
unchanged when the index is out of range, register.write stores the value
wrapped to the register's width and ignores an index out of range;
counter.count adds one packet and the packet's received length to the
index, ignoring one out of range; meter.execute_meter runs runtime/meters.py's
two-rate three-colour rule on the packet's received length at the pass's
time (ingress: its arrival; egress: its dequeue), GREEN for an index out of
range or an unconfigured cell.  hash() packs the data list as the checksum
does (fields of invalid headers left out) and runs bmv2's algorithm
(runtime/hashing.py: crc16, crc32, csum16, xor16, identity), then
(H mod max) + base in 64 bits, max 0 taken as 1.  random() draws from the
switch's own generator (splitmix64, seeded per instance): uniform on
[lo, hi], lo when hi <= lo; the same law as the Python target's, not the
same values."""

from __future__ import annotations

from testbed.p4model.backend.native.emit_types import mask, refuse_signed, refuse_wide, scalar_width
from testbed.p4model.backend.native.errors import NativeUnsupported
from testbed.p4model.frontend import ir


class ExternInfo:
    """One register or counter: its C id (per kind), cp name, size, width."""

    def __init__(self, kind: str, cid: int, inst, size: int, width: int) -> None:
        self.kind, self.cid, self.inst, self.size, self.width = kind, cid, inst, size, width
        self.name = inst.cp_name or inst.name


class ExternMixin:
    def extern_of(self, target, loc) -> ExternInfo:
        if not isinstance(target, ir.InstanceRef):
            raise NativeUnsupported(loc, "an extern passed as an argument")
        inst = target.target
        got = self.externs.get(id(inst))
        if got is not None:
            return got
        kind = inst.type.decl.name
        if kind not in ("register", "counter", "meter") or not inst.args or not isinstance(inst.args[0], ir.Const):
            raise NativeUnsupported(inst.loc, f"the instance {inst.name} ({kind})")
        size = int(inst.args[0].value)
        if kind == "register":
            vt = inst.type.type_args[0] if inst.type.type_args else ir.BitT(32)
            width = scalar_width(vt, inst.loc)
            refuse_signed(vt, inst.loc, f"register {inst.name}")
            refuse_wide(vt, inst.loc, f"register {inst.name}")
        elif kind == "meter":
            from testbed.p4model.backend.python.externs import enum_member

            width = 0 if enum_member(inst.args[1]) == "packets" else 1   # meter kind: 0 packets, 1 bytes
        else:
            width = 64
        cid = sum(1 for x in self.externs.values() if x.kind == kind)
        info = ExternInfo(kind, cid, inst, size, width)
        self.externs[id(inst)] = info
        return info

    def extern_call(self, c) -> bool:
        """C for register.read/write and counter.count; False if not one."""
        if not isinstance(c, ir.ExternMethodCall) or not isinstance(c.target.type, ir.ExternT):
            return False
        kind, method = c.target.type.decl.name, c.method.name
        if (kind, method) not in (("register", "read"), ("register", "write"), ("counter", "count"),
                                  ("meter", "execute_meter")):
            return False
        x = self.extern_of(c.target, c.loc)
        if kind == "meter":
            when = "s->now_us"
            self.emit(f"{self.lvalue(c.args[1])} = tb_meter_execute(s->inst->mtr[{x.cid}], {x.size}, "
                      f"{self.ex(c.args[0])}, {x.width}, s->ingress_length, {when}) & {mask(self.width(c.args[1]))};")
            return True
        if kind == "register":
            arr = f"s->inst->reg[{x.cid}]"
            if method == "read":
                i = self.fresh("i")
                self.emit(f"{{ uint64_t {i} = {self.ex(c.args[1])};")
                self.emit(f"  if ({i} < {x.size}) {self.lvalue(c.args[0])} = {arr}[{i}] & {mask(self.width(c.args[0]))}; }}")
            else:
                i, v = self.fresh("i"), self.fresh("v")
                self.emit(f"{{ uint64_t {i} = {self.ex(c.args[0])}; uint64_t {v} = {self.ex(c.args[1])};")
                self.emit(f"  if ({i} < {x.size}) {arr}[{i}] = {v} & {mask(x.width)}; }}")
        else:
            i = self.fresh("i")
            self.emit(f"{{ uint64_t {i} = {self.ex(c.args[0])};")
            self.emit(f"  if ({i} < {x.size}) {{ s->inst->cnt_p[{x.cid}][{i}] += 1; "
                      f"s->inst->cnt_b[{x.cid}][{i}] += s->ingress_length; }} }}")
        return True

    def extern_function(self, c) -> bool:
        """C for hash() and random(); False if `c` is neither."""
        if not isinstance(c, ir.ExternFunctionCall) or c.decl.name not in ("hash", "random"):
            return False
        if c.decl.name == "random":
            result, lo, hi = c.args
            self.emit(f"{self.lvalue(result)} = tb_random(s->inst, {self.ex(lo)}, {self.ex(hi)}) "
                      f"& {mask(self.width(result))};")
            return True
        from testbed.p4model.backend.python.externs import enum_member

        result, algo, base, data, max_ = c.args
        name = enum_member(algo)
        if name not in HASHES:
            raise NativeUnsupported(algo.loc or c.loc, f"hash algorithm {name}")
        self.emit("{")
        self.depth += 1
        buf = self.pack_leaves(data, "hb")
        self.emit(f"{self.lvalue(result)} = tb_hash_reduce({HASHES[name]}({buf}, ({buf}_n + 7) / 8), "
                  f"{self.ex(base)}, {self.ex(max_)}) & {mask(self.width(result))};")
        self.depth -= 1
        self.emit("}")
        return True


HASHES = {"crc32": "tb_crc32", "crc16": "tb_crc16", "csum16": "tb_hash_csum16", "xor16": "tb_xor16",
          "identity": "tb_identity"}

C_EXTERNS = r"""
/* runtime/meters.py MeterState: two rates (peak first), integer tokens capped at the burst,
 * refilled from the clock's zero; unconfigured: GREEN */
typedef struct { double rate_us[2]; int64_t burst[2], tokens[2], last[2]; uint8_t configured; } tb_meter;

static uint64_t tb_meter_execute(tb_meter *m, uint32_t size, uint64_t index, int bytes, uint32_t len,
                                 uint64_t now_us) {
    if (index >= size || !m[index].configured) return 0;
    tb_meter *c = &m[index];
    int64_t need = bytes ? (int64_t)len : 1;
    for (int r = 0; r < 2; r++) {
        int64_t since = (int64_t)((double)now_us * c->rate_us[r]);
        int64_t tokens = c->tokens[r] + (since - c->last[r]);
        c->last[r] = since;
        if (tokens > c->burst[r]) tokens = c->burst[r];
        if (tokens < need) {
            c->tokens[r] = tokens;
            return r == 0 ? 2 : 1;   /* RED when the peak bucket is short, YELLOW the committed one */
        }
        c->tokens[r] = tokens - need;
    }
    return 0;
}

static uint64_t tb_crc32(const uint8_t *p, uint32_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

static uint64_t tb_crc16(const uint8_t *p, uint32_t n) {   /* CRC-16/ARC */
    uint32_t crc = 0;
    for (uint32_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xA001u & (0u - (crc & 1u)));
    }
    return crc & 0xFFFF;
}

static uint64_t tb_hash_csum16(const uint8_t *p, uint32_t n) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) sum += ((uint32_t)p[i] << 8) | p[i + 1];
    if (n & 1) sum += (uint32_t)p[n - 1] << 8;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return (~sum) & 0xFFFF;
}

static uint64_t tb_xor16(const uint8_t *p, uint32_t n) {
    uint64_t x = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) x ^= ((uint32_t)p[i] << 8) | p[i + 1];
    if (n & 1) x ^= (uint32_t)p[n - 1] << 8;
    return x;
}

static uint64_t tb_identity(const uint8_t *p, uint32_t n) {   /* the first 8 bytes, big-endian */
    uint64_t v = 0;
    for (uint32_t i = 0; i < n && i < 8; i++) v = (v << 8) | p[i];
    return v;
}

static uint64_t tb_hash_reduce(uint64_t h, uint64_t base, uint64_t max) {
    if (!max) max = 1;
    return h % max + base;
}
"""
