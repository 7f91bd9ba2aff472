// Regression for the STF queue model: byte 0 of a packet is its
// egress port, byte 1 its standard_metadata.priority (the egress queue),
// byte 2 a sequence number.  Egress stamps byte 3 with the priority it saw,
// so an expectation also says which queue the packet went through.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> port; bit<8> prio; bit<8> seq; bit<8> seen; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>)h.h.port;
        sm.priority = (bit<3>)h.h.prio;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { h.h.seen = (bit<8>)sm.priority; }
}
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
