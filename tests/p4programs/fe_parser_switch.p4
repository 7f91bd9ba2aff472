// switch statements in parser states (P4 1.2.4): expression and enum subjects,
// fall-through labels, default.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> op; bit<8> v; }
struct H { h_t h; }
struct M { }
enum Kind { A, B }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.extract(h.h);
        switch (h.h.op) {
            1: { h.h.v = 0x11; }
            2:
            3: { h.h.v = h.h.v + 1; }
            default: { }
        }
        Kind k = h.h.op == 9 ? Kind.B : Kind.A;
        switch (k) { Kind.B: { h.h.v = 0x99; } }
        transition accept;
    }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
