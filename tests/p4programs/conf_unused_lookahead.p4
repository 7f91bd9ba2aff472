// Regression: a lookahead whose value is not used still checks that the
// packet is long enough; a short packet sets PacketTooShort.
#include <core.p4>
#include <v1model.p4>
struct Peek { bit<32> w; }
struct H { }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.lookahead<Peek>();
        p.lookahead<bit<24>>();
        transition accept;
    }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = sm.parser_error == error.PacketTooShort ? 9w2 : 9w1;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
