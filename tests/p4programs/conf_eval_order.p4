// Regression: side effects inside expressions happen in P4's order.
// Operands are evaluated left to right (a read before a call with an inout
// argument sees the old value), `?:` evaluates only the arm taken, and
// `&&`/`||` skip their right operand when the left decides.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; }
struct H { h_t h; }
struct M { }
struct Pair { bit<8> x; bit<8> y; }
bit<8> bump(inout bit<8> v) {
    v = v + 1;
    return 8w10;
}
bool mark(inout bit<8> v) {
    v = 0xee;
    return true;
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        // a = 5 (read first), then bump makes it 6; result 5 + 10
        h.h.b = h.h.a + bump(h.h.a);
        // only the false arm runs: c is bumped, d is not
        h.h.e = (h.h.a == 0) ? bump(h.h.d) : bump(h.h.c);
        // the left operand decides: mark is not called
        if (h.h.a == 0 && mark(h.h.f)) { h.h.e = 0; }
        if (h.h.a != 0 || mark(h.h.f)) { h.h.e = h.h.e + 1; }
        // the struct is built in order: x reads a before bump changes it
        Pair q = { h.h.a, bump(h.h.a) };
        h.h.f = q.x;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
