// Regression: an assignment evaluates its left-hand side once and before
// its right-hand side. A compound assignment whose stack index calls a
// function with an inout argument calls it once; a run-time index is read
// before a right-hand side call changes it.
#include <core.p4>
#include <v1model.p4>
header i_t { bit<8> i; bit<8> j; }
header e_t { bit<8> v; }
struct H { i_t idx; e_t[4] s; }
struct M { }
bit<8> take(inout bit<8> n) {
    bit<8> old = n;
    n = n + 1;
    return old;
}
bit<8> zero_it(inout bit<8> n) {
    n = 0;
    return 8w0x77;
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.extract(h.idx);
        p.extract(h.s.next); p.extract(h.s.next); p.extract(h.s.next); p.extract(h.s.next);
        transition accept;
    }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.s[take(h.idx.i) & 3].v |= 0x80;     // s[1] |= 80, i becomes 2
        h.s[take(h.idx.i) & 3].v[3:0] = 4w0xf; // s[2].v low nibble, i becomes 3
        h.s[h.idx.j & 3].v = zero_it(h.idx.j); // s[3] (j read before the call)
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
