// Regression: a table keyed on a value of type `error` (was refused as
// "table key of type error"). bmv2 keeps an error in a 32-bit field holding
// its number in declaration order (NoError 0, PacketTooShort 1, ...), and a
// table matches that number. A packet too short for the second header
// reaches ingress with parser_error = PacketTooShort.
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> v; }
header b_t { bit<16> v; }
struct H { a_t a; b_t b; }
struct M { error err; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.a); p.extract(h.b); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    table by_error {
        key = { m.err : exact; }
        actions = { to; }
        default_action = to(3);
    }
    apply {
        m.err = sm.parser_error;
        by_error.apply();
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.a); p.emit(h.b); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
