// Local variables of tuple types: a control local with an initializer (read by an action too),
// block locals assigned from a list and from each other, elements read and written by constant
// index, the initializer's values computed in order around a function that changes its inout
// argument.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct H { eth_t eth; }
struct M { }
bit<16> bump(inout bit<16> x) { x = x + 3; return x << 1; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  tuple<bit<8>, bit<16>, bool> t = { h.eth.type[7:0], bump(h.eth.type), h.eth.dst[4:4] == 1 };
  action mix() { h.eth.src = h.eth.src ^ (bit<48>)t[1]; }
  apply {
    tuple<bit<16>, bit<48>> u = { h.eth.type + 1, h.eth.src };
    tuple<bit<16>, bit<48>> v;
    v = u;
    if (t[2]) { v[0] = v[0] + (bit<16>)t[0]; }
    h.eth.type = v[0] ^ t[1];
    h.eth.src = v[1] + 1;
    if (h.eth.dst[5:5] == 1) { mix(); }
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
