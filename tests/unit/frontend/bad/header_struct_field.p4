// error: 5:18: unsupported: header field 'inner' of struct type pair_t
#include <core.p4>
#include <v1model.p4>
struct pair_t { bit<8> a; bit<8> b; }
header outer_t { pair_t inner; }
struct H { outer_t o; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.o); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.o); } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
