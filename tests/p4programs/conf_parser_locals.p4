// Regression: parser locals whose struct type (and its header type) is met
// nowhere before, in the top-level parser and in a sub-parser, and an
// acyclic parser that inlines a state with an empty body. The classes of
// those types are generated while the parser's frame class is being
// written; they must still end up whole at module level.
#include <core.p4>
#include <v1model.p4>
header b_t { bit<8> v; }
header w_t { bit<16> v; }
struct Wide { w_t w; }
struct H { b_t a; b_t b; }
struct Only { b_t x; }
struct M { }
parser Sub(packet_in p, inout H h) {
    Only tmp;
    state start {
        p.extract(tmp.x);
        h.b = tmp.x;
        transition accept;
    }
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    Sub() sub;
    Wide wide;
    state start {
        p.extract(h.a);
        wide.w.setValid();
        wide.w.v = 16w0x0102;
        transition select(h.a.v) { 1: more; default: none; }
    }
    state more { sub.apply(p, h); transition accept; }
    state none { }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = h.b.isValid() ? 9w2 : 9w3; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
