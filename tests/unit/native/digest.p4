// Digests and truncate, chosen per packet by the bits of req.op: digests in ingress (a later one
// replaces an earlier one; one in egress is ignored), of structs with a header, a 128-bit field,
// a bool and an int; truncate in ingress and egress, beside the clone sessions' limits.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header req_t { bit<8> op; bit<8> a; bit<8> b; bit<8> n; bit<128> wide; int<8> s; }
struct learn_t { bit<48> src; bit<9> port; bool flag; int<8> s; }
struct wide_t { req_t req; bit<128> w; bit<16> type; }
struct H { eth_t eth; req_t req; }
struct M { bit<8> x; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition select(h.eth.type) { 0x88b6: req; default: accept; } }
  state req { p.extract(h.req); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
    if (h.eth.dst[4:4] == 1) { digest<learn_t>(1, {h.eth.src, sm.ingress_port, h.eth.dst[5:5] == 1, h.req.s}); }
    if (!h.req.isValid()) {
      if (h.eth.dst[6:6] == 1) { digest<wide_t>(2, {h.req, 7, h.eth.type}); }   // an invalid header's fields
      return;
    }
    if (h.req.op[0:0] == 1) { digest<wide_t>(2, {h.req, h.req.wide ^ 1, h.eth.type}); }
    if (h.req.op[1:1] == 1) { truncate((bit<32>)h.req.a); }
    if (h.req.op[2:2] == 1) { digest<learn_t>(1, {h.eth.dst, (bit<9>)h.req.n, h.req.s < 0, h.req.s - 3}); }
    if (h.req.op[3:3] == 1) { clone(CloneType.I2E, (bit<32>)h.req.n[2:0]); }
    if (h.req.op[6:6] == 1) { mark_to_drop(sm); }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    if (!h.req.isValid()) { return; }
    h.req.n = h.req.n + (bit<8>)sm.instance_type;
    if (h.req.op[4:4] == 1) { truncate((bit<32>)h.req.b); }
    if (h.req.op[5:5] == 1) { digest<learn_t>(1, {h.eth.src, sm.egress_port, true, h.req.s}); }   // ignored
    if (h.req.op[7:7] == 1 && sm.instance_type == 0) { clone(CloneType.E2E, (bit<32>)h.req.n[5:3]); }
  }
}
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); p.emit(h.req); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
