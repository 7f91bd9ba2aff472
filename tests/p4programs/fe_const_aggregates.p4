// Constants of struct, nested struct, header and tuple type (p4c substitutes
// the value at each use); tuple elements read by constant index.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<8> c; }
struct H { h_t h; }
struct M { }
struct pair_t { bit<8> x; bit<16> y; }
struct nest_t { pair_t p; bool f; }
const pair_t PAIR = { x = 8w0x12, y = 16w0x3456 };
const nest_t NEST = { p = { 7, 9 }, f = true };
const tuple<bit<8>, bit<8>> TUP = { 1, 2 };
const h_t HDR = { a = 0xaa, b = 0xbbbb, c = 0xcc };
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        pair_t q = PAIR;
        if (h.h.a == 1) { h.h.a = q.x; h.h.b = PAIR.y; }
        else if (h.h.a == 2) { h.h.a = NEST.p.x; h.h.b = (bit<16>)NEST.p.y; h.h.c = NEST.f ? 8w1 : 8w0; }
        else if (h.h.a == 3) { h.h = HDR; }
        else if (h.h.a == 4) { tuple<bit<8>, bit<8>> t = TUP; h.h.c = t[0] + t[1]; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
