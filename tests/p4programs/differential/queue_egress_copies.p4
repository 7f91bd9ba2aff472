// Regression for the STF queue model: packets that egress makes go back
// through the queues after the burst's first pass.  Byte 0 selects: 1 = an
// egress-to-egress clone (session 6, port 2) of a packet sent to port 1;
// 2 = recirculate once, then leave on port 3.  Byte 2 counts passes,
// byte 3 is the instance_type egress saw.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> mode; bit<8> seq; bit<8> passes; bit<8> itype; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (h.h.mode == 2 && h.h.passes > 0) ? 9w3 : 9w1;
        sm.priority = 0;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        h.h.itype = (bit<8>)sm.instance_type;
        if (h.h.mode == 1 && sm.instance_type == 0) {
            clone(CloneType.E2E, 32w6);
        }
        if (h.h.mode == 2 && h.h.passes == 0) {
            h.h.passes = 1;
            recirculate_preserving_field_list(0);
        }
    }
}
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
