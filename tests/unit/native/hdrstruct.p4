// Headers with struct fields (nested too): extracted, looked ahead, compared, hashed, written
// field by field and whole, emitted, in wire order (a struct field's fields in turn).
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct inner_t { bit<8> c; bit<8> d; }
struct row_t { bit<4> a; bit<12> b; inner_t inner; }
header rec_t { bit<8> tag; row_t row; bit<8> tail; }
struct H { eth_t eth; rec_t r1; rec_t r2; }
struct M { bit<16> h; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start {
    p.extract(h.eth);
    transition select(h.eth.type) { 0x88b7: one; 0x88b8: two; default: accept; }
  }
  state one { p.extract(h.r1); transition accept; }
  state two {
    transition select(p.lookahead<rec_t>().row.inner.d) { 1: first; default: both; }
  }
  state first { p.extract(h.r1); transition accept; }
  state both { p.extract(h.r1); p.extract(h.r2); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  action swap() { rec_t t = h.r1; h.r1 = h.r2; h.r2 = t; }
  table by_d { key = { h.r1.row.inner.d : exact; } actions = { swap; NoAction; } default_action = NoAction();
               const entries = { 8w2 : swap(); } }
  apply {
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
    hash(m.h, HashAlgorithm.crc16, 16w0, { h.r1, h.r2.row }, 32w65536);
    h.eth.src[15:0] = m.h;
    h.eth.src[16:16] = (bit<1>)(h.r1 == h.r2);
    if (h.r1.isValid()) { h.r1.row.inner.d = h.r1.row.inner.d + (h.r1.row.a ++ 4w0); h.r1.tail = h.r1.tag; }
    by_d.apply();
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); p.emit(h.r1); p.emit(h.r2); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
