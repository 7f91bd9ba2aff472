// Regression: `exit` inside an action (called directly, from a table, or
// through another action) and inside a sub-control still copies the
// out/inout arguments out; and an action that writes the control's own
// header while holding it as an inout parameter loses that write when the
// parameter is copied back.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control Sub(inout bit<8> v) {
    apply { v = 0x5b; exit; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    Sub() sub;
    action set_and_exit(inout bit<8> v, bit<8> x) { v = x; exit; }
    action outer(inout bit<8> v) { set_and_exit(v, 0x0c); }
    action via_copy(inout H copy) { h.h.e = 0xff; copy.h.d = 0xdd; }
    table t {
        key = { h.h.a: exact; }
        actions = { set_and_exit(h.h.b); }
        const entries = { 1 : set_and_exit(h.h.b, 0x0b); 2 : set_and_exit(h.h.b, 0x0b); }
    }
    apply {
        sm.egress_spec = 1;
        via_copy(h);
        if (h.h.a == 1) {
            t.apply();
        } else if (h.h.a == 2) {
            outer(h.h.c);
        } else if (h.h.a == 3) {
            sub.apply(h.h.d);
        } else {
            set_and_exit(h.h.b, 0x0a);
        }
        h.h.e = 0x99;     // never reached: every branch exits
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
