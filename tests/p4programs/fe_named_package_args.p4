// V1Switch with named arguments in another order (p4c reorders them) and a
// typedef naming a control type, used as a constructor parameter type.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
control step_t(inout bit<8> v);
typedef step_t step_alias_t;
control Inc(inout bit<8> v) { apply { v = v + 1; } }
control Use(inout bit<8> v)(step_alias_t s) { apply { s.apply(v); s.apply(v); } }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) { state start { p.extract(h.h); transition accept; } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    Inc() inc;
    Use(inc) u;
    apply { sm.egress_spec = 1; u.apply(h.h.a); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(dep = D(), ig = I(), p = P(), vr = C(), eg = E(), ck = C()) main;
