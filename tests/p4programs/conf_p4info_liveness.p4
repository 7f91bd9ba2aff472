// P4Info regression: what p4c's front end keeps. An action called only
// from the never-taken branch of `if (true)` is dropped; a table applied
// only inside another table's key expression is kept; an action only
// called directly (no table lists it) has no parameters in P4Info.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> t; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action dead_only() { h.h.t = 1; }
    action live_one() { h.h.t = 2; }
    action called(bit<16> v) { h.h.t = v; }
    table inner { key = { h.h.t : exact; } actions = { live_one; } }
    table outer { key = { inner.apply().hit : exact @name("inner_hit"); } actions = { live_one; } }
    apply {
        if (true) {
            outer.apply();
            called(7);
        } else {
            dead_only();
        }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
