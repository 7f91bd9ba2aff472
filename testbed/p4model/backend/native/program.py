"""Assemble a program's C: prelude, types, the six v1model blocks and the
C ABI the Python driver and the native fabric engine call.

C ABI (no Python needed to call it):
  uint32_t tb_state_size(void)       bytes of one packet's tb_state
  void    *tb_new(void) / tb_free(inst)   one switch's tables (C memory)
  int64_t  tb_ingress(void *inst, tb_state *s, const uint8_t *d, uint32_t len,
                      uint32_t port, uint64_t now_us, uint32_t drop_port)
      zeroes *s, parser -> verify_checksum -> ingress; returns the egress
      port, or -1 when the packet is dropped.  s->payload_off is where the
      unparsed payload starts in d.
  int64_t  tb_egress(tb_state *s, const uint8_t *d, uint32_t len,
                     uint32_t port, const uint64_t q[5], uint32_t drop_port,
                     uint8_t *out)
      egress -> compute_checksum -> deparser for a job queued on `port`;
      q = enq_ts_us, enq_qdepth, deq_timedelta_us, deq_qdepth, deq_ts_us.
      Writes the packet to out (at least tb_max_header_bytes() + len bytes)
      and returns its length, or -1 when egress dropped it.
  uint32_t tb_max_header_bytes(void); tb_priority(s): the queue (standard_metadata.priority)
  int tb_meter_set(inst, id, index, size, configured, cir, cburst, pir, pburst)
      configure (or reset) one meter cell; void tb_seed(inst, seed): random()'s generator
  uint32_t tb_job_length(const tb_state *s)
      the packet's length after ingress (headers made valid or invalid
      counted): what the TM queues and egress reads as packet_length
  uint64_t *tb_register(inst, id), *tb_counter(inst, id, bytes)
      a register's values / a counter's packet or byte counts, in place
  int tb_table_set(void *inst, uint32_t id, uint32_t n, const uint64_t *rows)
      replace table id's rows (n rows of its stride, precedence order)
  void tb_table_default(void *inst, uint32_t id, const uint64_t *act)
      the default action row: action index, then its arguments
  Copies (binding.NativePipeline decides as v1model.py; each call's C comment says more):
  tb_replicates() 1 when the program can ask for them (tb_egress is then unused; the fabric
  engine makes the copies through these calls too); tb_requests(s, r[7]) egress_spec, mcast_grp,
  priority, 1 + clone session, clone field list, 1 + resubmit / recirculate field list (0: none); a multicast replica:
  tb_state_copy(dst, src), tb_set_egress_rid(s, rid), tb_set_instance_type(s, t), tb_mcast_grp(s); clones:
  tb_clone_i2e(inst, c, orig, fl, d, len, port, now_us), tb_clone_e2e(c, orig, fl); another pass:
  tb_ingress_again(inst, s, old, fl, d, len, instance_type, now_us, drop_port); tb_egress in two:
  tb_egress_ctl_only(s, d, len, port, q, drop_port) (-1: dropped), tb_deparse(s, d, len, drop_port, out)
  (uncut; tb_truncate(s) the limit). Digests: tb_digest(s, words), tb_digest_words() (C comments)."""

from __future__ import annotations

from typing import NamedTuple

from testbed.p4model.backend.native.emit_checksums import C_CSUM16
from testbed.p4model.backend.native.emit_code import CodeEmitter
from testbed.p4model.backend.native.emit_externs import C_EXTERNS
from testbed.p4model.backend.native.emit_types import TypeEmitter, max_header_bits
from testbed.p4model.backend.native.errors import NativeUnsupported
from testbed.p4model.frontend import ir

PRELUDE = r"""
#include <stdint.h>
#include <string.h>

static inline uint64_t tb_shl(uint64_t a, uint64_t n) { return n >= 64 ? 0 : a << n; }
static inline uint64_t tb_shr(uint64_t a, uint64_t n) { return n >= 64 ? 0 : a >> n; }

/* bit<W> with 64 < W <= 128 */
typedef unsigned __int128 tb_u128;
static inline tb_u128 tb_shl128(tb_u128 a, uint64_t n) { return n >= 128 ? 0 : a << n; }
static inline tb_u128 tb_shr128(tb_u128 a, uint64_t n) { return n >= 128 ? 0 : a >> n; }

/* unsigned / and %; a zero divisor gives 0 */
static inline uint64_t tb_div(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t tb_mod(uint64_t a, uint64_t b) { return b ? a % b : 0; }

/* int<w> (1 <= w <= 64) is held as its w-bit two's complement pattern in a uint64_t */
static inline int64_t tb_sext(uint64_t a, uint32_t w) {
    uint64_t sign = UINT64_C(1) << (w - 1);
    return (int64_t)((a ^ sign) - sign);
}
static inline uint64_t tb_wmask(uint32_t w) { return w >= 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1; }
/* arithmetic shift right of an int<w>: the sign fills in; a count >= w leaves only sign bits */
static inline uint64_t tb_sar(uint64_t a, uint64_t n, uint32_t w) {
    int64_t x = tb_sext(a, w);
    return (uint64_t)(n >= 63 ? (x < 0 ? -1 : 0) : x >> n) & tb_wmask(w);
}
/* a |+| b and a |-| b on int<w>: the exact result clamped to [-2^(w-1), 2^(w-1) - 1] */
static inline uint64_t tb_ssat(__int128 r, uint32_t w) {
    __int128 hi = ((__int128)1 << (w - 1)) - 1, lo = -hi - 1;
    return (uint64_t)(r > hi ? hi : r < lo ? lo : r) & tb_wmask(w);
}

/* `w` bits (w <= 64) at bit offset `bit` of p, big-endian (network order): the bytes that hold
 * them are read whole (at most 9), then shifted into place */
static inline uint64_t tb_get(const uint8_t *p, uint32_t bit, uint32_t w) {
    if (!w) return 0;
    uint32_t b0 = bit >> 3, sh = bit & 7, nb = (sh + w + 7) >> 3;
    unsigned __int128 v = 0;
    for (uint32_t i = 0; i < nb; i++) v = (v << 8) | p[b0 + i];
    v >>= nb * 8 - sh - w;
    return w >= 64 ? (uint64_t)v : (uint64_t)v & ((UINT64_C(1) << w) - 1);
}

static inline void tb_put(uint8_t *p, uint32_t bit, uint32_t w, uint64_t val);
/* the same for 64 < w <= 128: the high w - 64 bits, then the low 64 */
static inline tb_u128 tb_get128(const uint8_t *p, uint32_t bit, uint32_t w) {
    return ((tb_u128)tb_get(p, bit, w - 64) << 64) | tb_get(p, bit + w - 64, 64);
}
static inline void tb_put128(uint8_t *p, uint32_t bit, uint32_t w, tb_u128 val) {
    tb_put(p, bit, w - 64, (uint64_t)(val >> 64));
    tb_put(p, bit + w - 64, 64, (uint64_t)val);
}
static inline void tb_put(uint8_t *p, uint32_t bit, uint32_t w, uint64_t val) {
    if (!w) return;
    uint32_t b0 = bit >> 3, sh = bit & 7, nb = (sh + w + 7) >> 3, low = nb * 8 - sh - w;
    unsigned __int128 m = (w >= 64 ? (unsigned __int128)UINT64_MAX : (unsigned __int128)((UINT64_C(1) << w) - 1)) << low;
    unsigned __int128 v = 0;
    for (uint32_t i = 0; i < nb; i++) v = (v << 8) | p[b0 + i];
    v = (v & ~m) | (((unsigned __int128)val << low) & m);
    for (uint32_t i = nb; i-- > 0;) {
        p[b0 + i] = (uint8_t)v;
        v >>= 8;
    }
}
"""

C_RANDOM = r"""
/* v1model random(): uniform on [lo, hi] from the instance's splitmix64 generator; lo when hi <= lo */
static uint64_t tb_random(tb_inst *I, uint64_t lo, uint64_t hi) {
    if (hi <= lo) return lo;
    uint64_t z = (I->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    uint64_t span = hi - lo + 1;
    return span ? lo + z % span : z;
}
"""

ROLES = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


def lower(program: ir.Program) -> "Lowered":
    """The whole C translation unit of `program` and what its driver needs to know (Lowered);
    raises NativeUnsupported at the first construct it cannot lower."""
    types = TypeEmitter()
    blocks = {}
    for role in ROLES:
        inst = program.block(role)
        blocks[role] = inst
        if inst.args:
            raise NativeUnsupported(inst.loc, f"constructor arguments of {inst.name}")
    ingress = blocks["ingress"].type.decl
    hdr_t, meta_t, sm_t = (p.type for p in ingress.params[:3])
    h, m, sm = (types.c_type(t, p.loc) for t, p in zip((hdr_t, meta_t, sm_t), ingress.params))
    code = CodeEmitter(program, types)
    code.meta_t, code.sm_t = meta_t, sm_t
    roots3, roots2 = ["s->hdr", "s->meta", "s->sm"], ["s->hdr", "s->meta"]
    code.parser("tb_parser", blocks["parser"].type.decl, roots3)
    code.control("tb_verify", blocks["verify_checksum"].type.decl, roots2)
    code.control("tb_ingress_ctl", blocks["ingress"].type.decl, roots3)
    code.control("tb_egress_ctl", blocks["egress"].type.decl, roots3)
    code.control("tb_compute", blocks["compute_checksum"].type.decl, roots2)
    code.deparser("tb_deparser", blocks["deparser"].type.decl, ["s->hdr"])
    max_hdr = _max_header_bytes(hdr_t)
    parts = [f"/* Generated by testbed.p4model.backend.native from "
             f"{(program.source_files or ['<program>'])[0]} */", PRELUDE, C_CSUM16, C_EXTERNS]
    parts += types.lines
    parts.append(TABLES.replace("N_TABLES", str(max(len(code.tables), 1))))
    regs = [x for x in code.externs.values() if x.kind == "register"]
    cnts = [x for x in code.externs.values() if x.kind == "counter"]
    mtrs = [x for x in code.externs.values() if x.kind == "meter"]
    parts.append(f"typedef struct {{ tb_table tables[TB_N]; uint64_t *reg[{max(len(regs), 1)}]; "
                 f"uint64_t *cnt_p[{max(len(cnts), 1)}], *cnt_b[{max(len(cnts), 1)}]; "
                 f"tb_meter *mtr[{max(len(mtrs), 1)}]; uint64_t rng; }} tb_inst;")
    oob = "".join(f" {name} oob_{name};" for name in types.stack_elems.values())
    parts.append(f"typedef struct {{ {h} hdr; {m} meta; {sm} sm; uint32_t payload_off; "
                 f"const uint8_t *data; uint32_t data_len; uint32_t ingress_length, length, action_run; uint8_t exited; uint64_t now_us; tb_inst *inst; "
                 f"uint32_t req_clone, clone_session, clone_fl, req_resubmit, req_recirc; "
                 f"uint32_t truncate, req_digest, digest_n; uint64_t digest_w[{max(code.digest_words, 1)}];"
                 f"{oob} }} tb_state;")
    parts.append("/* a stack element read or written at an index out of range: a fresh invalid header */")
    parts.append("#define TB_OOB(s, m) (memset(&(s)->m, 0, sizeof (s)->m), &(s)->m)")
    parts.append("static int tb_init(tb_inst *I) {")
    for info in code.tables:
        parts.append(f"    I->tables[{info.tid}].nk = {info.slots}; I->tables[{info.tid}].stride = {info.stride};")
    for x in regs:
        parts.append(f"    if (!(I->reg[{x.cid}] = calloc({max(x.size, 1)}, 8))) return -1;")
    for x in mtrs:
        parts.append(f"    if (!(I->mtr[{x.cid}] = calloc({max(x.size, 1)}, sizeof(tb_meter)))) return -1;")
    for x in cnts:
        parts.append(f"    if (!(I->cnt_p[{x.cid}] = calloc({max(x.size, 1)}, 8))) return -1;")
        parts.append(f"    if (!(I->cnt_b[{x.cid}] = calloc({max(x.size, 1)}, 8))) return -1;")
    parts.append("    return 0;")
    parts.append("}")
    parts.append(f"#define TB_NREG {len(regs)}\n#define TB_NCNT {len(cnts)}\n#define TB_NMTR {len(mtrs)}")
    parts.append(C_RANDOM)
    parts += code.statics
    parts += code.funcs
    parts += code.lines
    parts += code.field_list_c()
    parts.append(f"#define TB_REPLICATES {int(bool(code.replication))}")
    parts.append(f"#define TB_DIGEST_WORDS {code.digest_words}")
    parts.append(ABI.replace("MAX_HDR", str(max_hdr)))
    return (Lowered("\n".join(parts) + "\n", code.tables, list(code.externs.values()), code.replication,
                    code.digests))


class Lowered(NamedTuple):
    """What lower() makes: the C source, TableInfo list, ExternInfo list, {kind of copy: (loc,
    construct) of its first request} (emit_replication) and the digest layouts ((name, leaf
    widths), C id = index + 1)."""

    source: str
    tables: list
    externs: list
    replication: dict
    digests: list


def _max_header_bytes(t) -> int:
    if isinstance(t, ir.HeaderT):
        return (max_header_bits(t, t.loc) + 7) // 8
    if isinstance(t, (ir.StructT, ir.UnionT)):
        return sum(_max_header_bytes(f.type) for f in t.fields)
    if isinstance(t, ir.StackT):
        return t.size * _max_header_bytes(t.element)
    return 0


TABLES = r"""
#include <stdlib.h>
#define TB_MAX_ARGS 64
typedef struct { uint32_t nk, stride, n; uint64_t *rows; uint64_t deflt[1 + TB_MAX_ARGS]; } tb_table;
#define TB_N N_TABLES

/* the first row (precedence order) whose keys all match k, or 0 */
static const uint64_t *tb_lookup(const tb_table *t, const uint64_t *k, const uint8_t *kinds) {
    for (uint32_t r = 0; r < t->n; r++) {
        const uint64_t *row = t->rows + (size_t)r * t->stride;
        uint32_t i = 0;
        for (; i < t->nk; i++) {
            uint64_t a = row[2 * i], b = row[2 * i + 1];
            if (kinds[i] ? (k[i] < a || k[i] > b) : ((k[i] & b) != a)) break;
        }
        if (i == t->nk) return row;
    }
    return 0;
}
"""

ABI = r"""
void tb_free(void *inst) {
    tb_inst *I = inst;
    if (!I) return;
    for (uint32_t i = 0; i < TB_N; i++) free(I->tables[i].rows);
    for (uint32_t i = 0; i < TB_NREG; i++) free(I->reg[i]);
    for (uint32_t i = 0; i < TB_NCNT; i++) { free(I->cnt_p[i]); free(I->cnt_b[i]); }
    for (uint32_t i = 0; i < TB_NMTR; i++) free(I->mtr[i]);
    free(I);
}

void *tb_new(void) {
    tb_inst *I = calloc(1, sizeof(tb_inst));
    if (I && tb_init(I) != 0) { tb_free(I); return 0; }
    return I;
}

uint64_t *tb_register(void *inst, uint32_t id) { return id < TB_NREG ? ((tb_inst *)inst)->reg[id] : 0; }
uint64_t *tb_counter(void *inst, uint32_t id, int bytes) {
    tb_inst *I = inst;
    return id < TB_NCNT ? (bytes ? I->cnt_b[id] : I->cnt_p[id]) : 0;
}

int tb_table_set(void *inst, uint32_t id, uint32_t n, const uint64_t *rows) {
    tb_table *TB = ((tb_inst *)inst)->tables;
    if (id >= TB_N) return -1;
    tb_table *t = &TB[id];
    uint64_t *copy = n ? malloc((size_t)n * t->stride * sizeof(uint64_t)) : 0;
    if (n && !copy) return -1;
    if (n) memcpy(copy, rows, (size_t)n * t->stride * sizeof(uint64_t));
    uint64_t *old = t->rows;
    t->rows = copy; t->n = n;
    free(old);
    return 0;
}

void tb_table_default(void *inst, uint32_t id, const uint64_t *act) {
    tb_table *TB = ((tb_inst *)inst)->tables;
    if (id >= TB_N) return;
    uint32_t na = TB[id].stride - 2 * TB[id].nk;
    memcpy(TB[id].deflt, act, na * sizeof(uint64_t));
}

uint32_t tb_state_size(void) { return (uint32_t)sizeof(tb_state); }
uint32_t tb_max_header_bytes(void) { return MAX_HDR; }
uint32_t tb_priority(const tb_state *s) { return (uint32_t)s->sm.f_priority; }
uint32_t tb_job_length(const tb_state *s) { return s->length; }

/* meter `id`'s cell `index`: (cir, cburst, pir, pburst) per second and burst as a P4Runtime
 * MeterConfig, both buckets filled (runtime/meters.py set_config); configured 0 resets it */
int tb_meter_set(void *inst, uint32_t id, uint32_t index, uint32_t size, int configured, uint64_t cir,
                 uint64_t cburst, uint64_t pir, uint64_t pburst) {
    tb_inst *I = inst;
    if (id >= TB_NMTR || index >= size) return -1;
    tb_meter *c = &I->mtr[id][index];
    memset(c, 0, sizeof *c);
    if (!configured) return 0;
    c->configured = 1;
    c->rate_us[0] = (double)pir / 1e6, c->burst[0] = (int64_t)pburst, c->tokens[0] = (int64_t)pburst;
    c->rate_us[1] = (double)cir / 1e6, c->burst[1] = (int64_t)cburst, c->tokens[1] = (int64_t)cburst;
    return 0;
}

void tb_seed(void *inst, uint64_t seed) { ((tb_inst *)inst)->rng = seed; }

/* parser -> verify_checksum -> ingress on a zeroed-but-set-up *s */
static int64_t tb_ingress_run(tb_state *s, const uint8_t *d, uint32_t len, uint32_t drop_port) {
    s->data = d; s->data_len = len;
    s->payload_off = tb_parser(s, d, len);
    tb_verify(s, drop_port);
    tb_ingress_ctl(s, drop_port);
    if (s->sm.f_egress_spec == drop_port) return -1;
    return (int64_t)s->sm.f_egress_spec;
}

int64_t tb_ingress(void *inst, tb_state *s, const uint8_t *d, uint32_t len, uint32_t port,
                   uint64_t now_us, uint32_t drop_port) {
    memset(s, 0, sizeof *s);
    s->inst = inst;
    s->ingress_length = len;
    s->length = len;
    s->sm.f_ingress_port = port;
    s->sm.f_packet_length = len;
    s->sm.f_ingress_global_timestamp = now_us & UINT64_C(0xFFFFFFFFFFFF);
    s->now_us = now_us;
    return tb_ingress_run(s, d, len, drop_port);
}

/* a resubmitted (instance_type 6, the original bytes) or recirculated (4, the deparsed bytes)
 * pass: new metadata but field list `fl` of the pass before (old), then as tb_ingress */
int64_t tb_ingress_again(void *inst, tb_state *s, const tb_state *old, uint32_t fl, const uint8_t *d,
                         uint32_t len, uint32_t instance_type, uint64_t now_us, uint32_t drop_port) {
    memset(s, 0, sizeof *s);
    s->inst = inst;
    tb_fl_copy(fl, old, s);
    s->ingress_length = len;
    s->length = len;
    s->sm.f_instance_type = instance_type;
    s->sm.f_packet_length = len;
    s->now_us = now_us;
    return tb_ingress_run(s, d, len, drop_port);
}

/* an ingress-to-egress clone: the received bytes parsed again (ingress_port `port` for the
 * parse), then new metadata but field list `fl` of the original (orig), instance_type 1 */
void tb_clone_i2e(void *inst, tb_state *c, const tb_state *orig, uint32_t fl, const uint8_t *d, uint32_t len,
                  uint32_t port, uint64_t now_us) {
    memset(c, 0, sizeof *c);
    c->inst = inst;
    c->ingress_length = len;
    c->length = len;
    c->sm.f_ingress_port = port;
    c->now_us = now_us;
    c->data = d; c->data_len = len;
    c->payload_off = tb_parser(c, d, len);
    memset(&c->meta, 0, sizeof c->meta);
    memset(&c->sm, 0, sizeof c->sm);
    tb_fl_copy(fl, orig, c);
    c->sm.f_instance_type = 1;
    c->sm.f_packet_length = len;
    c->ingress_length = len;
    c->length = len;
}

/* an egress-to-egress clone: the headers as egress left them, the original's payload and
 * lengths, new metadata but field list `fl`, instance_type 2 */
void tb_clone_e2e(tb_state *c, const tb_state *orig, uint32_t fl) {
    memcpy(c, orig, sizeof *c);
    memset(&c->meta, 0, sizeof c->meta);
    memset(&c->sm, 0, sizeof c->sm);
    tb_fl_copy(fl, orig, c);
    c->sm.f_instance_type = 2;
    c->truncate = 0, c->req_digest = 0;   /* its own limit is its session's (the driver's) */
}

void tb_state_copy(tb_state *dst, const tb_state *src) { memcpy(dst, src, sizeof *dst); }
void tb_set_egress_rid(tb_state *s, uint32_t rid) { s->sm.f_egress_rid = rid & 0xFFFF; }
void tb_set_instance_type(tb_state *s, uint32_t t) { s->sm.f_instance_type = t; }
uint32_t tb_mcast_grp(const tb_state *s) { return (uint32_t)s->sm.f_mcast_grp; }
uint32_t tb_replicates(void) { return TB_REPLICATES; }

/* what a pass asked for: egress_spec, mcast_grp, priority, clone (1 + session, 0: none),
 * the clone's field list, resubmit and recirculate (1 + field list, 0: none) */
void tb_requests(const tb_state *s, uint64_t r[7]) {
    r[0] = s->sm.f_egress_spec; r[1] = s->sm.f_mcast_grp; r[2] = s->sm.f_priority;
    r[3] = s->req_clone ? (uint64_t)s->clone_session + 1 : 0; r[4] = s->clone_fl;
    r[5] = s->req_resubmit; r[6] = s->req_recirc;
}

/* the egress control alone (requests of the pass before forgotten); -1 when it dropped */
int64_t tb_egress_ctl_only(tb_state *s, const uint8_t *d, uint32_t len, uint32_t port,
                           const uint64_t q[5], uint32_t drop_port) {
    s->sm.f_egress_port = port;
    s->sm.f_egress_spec = drop_port != 0 ? 0 : 1;
#if !TB_REPLICATES
    s->sm.f_instance_type = 0;   /* unicast is all there is */
#endif
    s->sm.f_packet_length = s->length & UINT64_C(0xFFFFFFFF);
    s->sm.f_enq_timestamp = q[0] & UINT64_C(0xFFFFFFFF);
    s->sm.f_enq_qdepth = q[1] & UINT64_C(0x7FFFF);
    s->sm.f_deq_timedelta = q[2] & UINT64_C(0xFFFFFFFF);
    s->sm.f_deq_qdepth = q[3] & UINT64_C(0x7FFFF);
    s->sm.f_egress_global_timestamp = q[4] & UINT64_C(0xFFFFFFFFFFFF);
    s->now_us = q[4];
    s->data = d; s->data_len = len;   /* the received packet: its payload for *_with_payload */
    s->req_clone = s->req_resubmit = s->req_recirc = 0;
    uint32_t limit = s->truncate;     /* set by ingress: egress starts with none, the smaller one wins */
    s->truncate = 0;
    tb_egress_ctl(s, drop_port);
    if (s->truncate && (!limit || s->truncate < limit)) limit = s->truncate;
    s->truncate = limit;
    return s->sm.f_egress_spec == drop_port ? -1 : 0;
}

/* compute_checksum -> deparser -> the payload: the packet's length in out */
int64_t tb_deparse(tb_state *s, const uint8_t *d, uint32_t len, uint32_t drop_port, uint8_t *out) {
    tb_compute(s, drop_port);
    uint32_t n = tb_deparser(s, out);
    uint32_t rest = s->payload_off < len ? len - s->payload_off : 0;
    memcpy(out + n, d + s->payload_off, rest);
    return (int64_t)(n + rest);
}

int64_t tb_egress(tb_state *s, const uint8_t *d, uint32_t len, uint32_t port,
                  const uint64_t q[5], uint32_t drop_port, uint8_t *out) {
    if (tb_egress_ctl_only(s, d, len, port, q, drop_port) < 0) return -1;
    int64_t n = tb_deparse(s, d, len, drop_port, out);
    return s->truncate && n > (int64_t)s->truncate ? (int64_t)s->truncate : n;
}

/* the packet's truncation limit after egress (0: none; tb_egress applies it itself) */
uint32_t tb_truncate(const tb_state *s) { return s->truncate; }

/* the digest the pass asked for: its layout id + 1 (0: none), its digest_n words copied to out
 * (at least tb_digest_words()) */
uint32_t tb_digest(const tb_state *s, uint64_t *out) {
    if (!s->req_digest) return 0;
    memcpy(out, s->digest_w, s->digest_n * sizeof(uint64_t));
    return s->req_digest;
}
uint32_t tb_digest_words(void) { return TB_DIGEST_WORDS; }
"""
