#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip_t { bit<4> v; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> fl; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> sa; bit<32> da; }
struct H { eth_t eth; ip_t ip; }
struct M { bit<8> x; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition select(h.eth.type) { 0x800: ip; default: accept; } }
  state ip { p.extract(h.ip); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    if (h.ip.isValid()) { h.ip.ttl = h.ip.ttl - 1; sm.egress_spec = (bit<9>)h.ip.da[3:0]; m.x = h.ip.ttl ^ 8w0xff; h.eth.src = h.eth.src + 48w1; }
    else if (h.eth.type == 0x1234) { mark_to_drop(sm); }
    else { sm.egress_spec = 2; h.eth.dst = h.eth.dst << 3; switch (h.eth.type[1:0]) { 1: { h.eth.src = 7; } 2: 3: { h.eth.src = 9; } default: { } } }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { if (m.x == 0xf0) { mark_to_drop(sm); } h.eth.type = h.eth.type | (bit<16>)sm.egress_port; } }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); p.emit(h.ip); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
