// Regression: a stack of header unions. extract(s.next.member) fills that
// member of the next free union (the other member stays invalid) and
// advances the stack; the deparser emits the valid member of each union.
#include <core.p4>
#include <v1model.p4>
header tag_t { bit<8> kinds; }
header one_t { bit<8> v; }
header two_t { bit<16> v; }
header_union either_t { one_t one; two_t two; }
struct H { tag_t tag; either_t[2] s; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.extract(h.tag);
        transition select(h.tag.kinds) { 1: first_two; default: first_one; }
    }
    state first_one { p.extract(h.s.next.one); transition second; }
    state first_two { p.extract(h.s.next.two); transition second; }
    state second { p.extract(h.s.next.one); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.s[0].two.isValid()) { h.s[0].two.v = h.s[0].two.v + 1; }
        if (h.s[1].one.isValid() && !h.s[1].two.isValid()) { h.s[1].one.v = 0xee; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
