// Fields wider than 128 bits as data: extracted at an odd bit offset, looked ahead, copied into
// metadata and into another header, compared, emitted.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header big_t { bit<4> lo; bit<200> data; bit<4> hi; }
struct H { eth_t eth; big_t b1; big_t b2; }
struct M { bit<200> keep; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start {
    p.extract(h.eth);
    transition select(h.eth.type) { 0x88b7: one; 0x88b8: two; default: accept; }
  }
  state one { p.extract(h.b1); transition accept; }
  state two {
    transition select(p.lookahead<big_t>().hi) { 0: one; default: both; }
  }
  state both { p.extract(h.b1); p.extract(h.b2); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
    m.keep = h.b1.data;
    h.eth.src[0:0] = (bit<1>)(h.b1.data == h.b2.data);
    h.eth.src[1:1] = (bit<1>)(h.b1 == h.b2);
    if (h.eth.dst[4:4] == 1 && h.b2.isValid()) { h.b2.data = m.keep; }
    if (h.eth.dst[5:5] == 1) { h.b1 = h.b2; }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); p.emit(h.b1); p.emit(h.b2); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
