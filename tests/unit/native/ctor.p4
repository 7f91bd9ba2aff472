// Controls with constructor arguments: values (constants in each instance's body, a table's
// default action included), a control instance passed to two others that apply it, so that one
// instance (with its counter) is applied twice in a packet.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct H { eth_t eth; }
struct M { bit<16> x; }
control step_t(inout bit<16> x);
control Count(inout bit<16> x) {
  counter(32w16, CounterType.packets_and_bytes) seen;
  apply { x = x + 1; seen.count((bit<32>)x[3:0]); }
}
control Shift(inout bit<16> x)(bit<4> by, step_t then) {
  apply { x = x << by; then.apply(x); }
}
control AddK(inout bit<16> x)(bit<16> k) {
  action add(bit<16> v) { x = x + v; }
  table t { key = { x[0:0] : exact; } actions = { add; } default_action = add(k); }
  apply { t.apply(); }
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  Count() c;
  Shift(1, c) s1;
  Shift(3, c) s3;
  AddK(16w7) a7;
  AddK(16w300) a300;
  apply {
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
    s1.apply(h.eth.type);
    s3.apply(h.eth.type);
    if (h.eth.dst[4:4] == 1) { a7.apply(h.eth.type); } else { a300.apply(h.eth.type); }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
