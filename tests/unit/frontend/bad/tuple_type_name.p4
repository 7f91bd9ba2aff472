// error: type mismatch: expected bit<8>, got tuple<bit<8>, bit<16>>
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) { state start { p.extract(h.h); transition accept; } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        tuple<bit<8>, bit<16>> t = { 1, 2 };
        h.h.a = t;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
