// Regression: a header field whose type is a struct of bit-strings (valid
// P4; was rejected). Extract and emit see the struct's fields in order,
// setValid zeroes them, and they are read and written by path.
#include <core.p4>
#include <v1model.p4>
struct pair_t { bit<3> hi; bool flag; bit<12> lo; }
struct nest_t { pair_t p; bit<8> z; }
header h_t { bit<8> a; nest_t n; }
header x_t { pair_t q; }
struct H { h_t h; x_t x; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.n.p.lo = h.h.n.p.lo + 1;
        h.h.n.z = (bit<8>) h.h.n.p.hi;
        h.x.setValid();
        h.x.q.hi = 7;
        h.x.q.flag = !h.h.n.p.flag;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
