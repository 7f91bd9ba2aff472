// error: 13:9: Use constructor: argument 's': Wrong(inout bit<8>, in bit<8>) does not match step_t(inout bit<8>)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
control step_t(inout bit<8> v);
control Wrong(inout bit<8> v, in bit<8> w) { apply { v = w; } }
control Use(inout bit<8> v)(step_t s) { apply { s.apply(v); } }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) { state start { p.extract(h.h); transition accept; } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    Wrong() w;
    Use(w) sub;
    apply { sub.apply(h.h.a); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
