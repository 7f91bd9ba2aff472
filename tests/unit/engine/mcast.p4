// Multicast only: a tagged frame goes to group eth.dst[15:0]; egress writes the copy's egress_rid,
// instance_type and egress_port into eth.src; an untagged frame is unicast to eth.dst[3:0].
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct H { eth_t eth; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
    if (h.eth.type == 0x88b5) { sm.mcast_grp = h.eth.dst[15:0]; }
    if (h.eth.dst[47:40] == 0xff) { mark_to_drop(sm); }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
  apply { h.eth.src = (bit<16>)sm.egress_rid ++ (bit<16>)sm.instance_type ++ (bit<16>)sm.egress_port; }
}
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
