// Parser/control/extern instances passed as constructor arguments.
// Cnt is declared once and handed to Twice: both applications use the
// same instance (and the same register), so x and y see consecutive
// counts and the count goes on from packet to packet.  P's sub-parser
// comes in as a constructor argument at the V1Switch instantiation.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<16> x; bit<16> y; bit<16> z; bit<16> w; }
header opt_t { bit<16> v; }
struct H { h_t h; opt_t o; }
struct M { }

control step_t(inout bit<16> v);
parser sub_t(packet_in p, inout H h);

parser Opt(packet_in p, inout H h) {
    state start { p.extract(h.o); transition accept; }
}

parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm)(sub_t sub) {
    state start {
        p.extract(h.h);
        transition select(h.h.op) { 2: more; default: accept; }
    }
    state more { sub.apply(p, h); transition accept; }
}

control Count(inout bit<16> v)(register<bit<16>> r) {
    apply {
        bit<16> c;
        r.read(c, 0);
        c = c + 1;
        r.write(0, c);
        v = c;
    }
}

control Twice(inout bit<16> a, inout bit<16> b)(step_t s) {
    apply { s.apply(a); s.apply(b); }
}

control Once(inout bit<16> v)(step_t s) {
    apply { s.apply(v); }
}

control Lookup(inout bit<16> v) {
    action set(bit<16> n) { v = n; }
    table t {
        key = { v : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}

control I(inout H h, inout M m, inout standard_metadata_t sm) {
    register<bit<16>>(1) hits;
    Count(hits) cnt;
    Twice(cnt) tw;
    Once(Count(hits)) again;
    Lookup() lk;
    Once(lk) look;
    apply {
        sm.egress_spec = 1;
        tw.apply(h.h.x, h.h.y);
        again.apply(h.h.z);
        look.apply(h.h.w);
        if (h.o.isValid()) { h.o.v = h.h.x; }
    }
}

control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); p.emit(h.o); } }

V1Switch(P(Opt()), C(), I(), E(), C(), D()) main;
