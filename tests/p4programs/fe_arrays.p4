// Arrays of other than headers (P4-16 1.2.4): `T[N] name` and the C-style `T name[N]`, in a
// header (elements on the wire one after the other, element 0 first) and in metadata; constant
// and run-time indices; an index out of bounds reads 0 and writes nothing (undefined in P4);
// equality of elements; `.size`.
#include <core.p4>
#include <v1model.p4>
header arr_h { bit<8> idx; bit<8>[4] a; bit<4> c[2]; }
struct H { arr_h h; }
struct M { bit<16>[3] m; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        if (h.h.c[0] == h.h.c[1]) { sm.egress_spec = 2; } else { sm.egress_spec = 1; }
        m.m[0] = (bit<16>) h.h.a[0];
        h.h.a[1] = h.h.a[h.h.idx];
        h.h.a[h.h.idx + 1] = 0xEE;
        h.h.c[0] = (bit<4>) h.h.a.size;
        h.h.c[1] = m.m[0][3:0];
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
