/* Expression semantics on the builtin target: wrap-around, signed
 * arithmetic, saturation, shifts, slices (read and write), concatenation,
 * casts, functions with out params, switch on expressions. */
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<8> a;
    bit<8> b;
    int<8> c;
    int<8> d;
}

header out_t {
    bit<8>  add;
    bit<8>  sub;
    bit<8>  satadd;
    bit<8>  satsub;
    int<8>  sadd;
    int<8>  ssat;
    bit<8>  shl;
    bit<8>  shr;
    int<8>  sshr;
    bit<16> cat;
    bit<8>  slice;
    bit<8>  slicew;
    bit<8>  neg;
    bit<8>  cmpl;
    bit<8>  narrow;
    bit<8>  mux;
    bit<8>  fn_out;
    bit<8>  sw;
}

struct headers { in_t i; out_t o; }
struct metadata { bit<8> tmp; }

bit<8> twice(in bit<8> x, out bit<8> y) {
    y = x + 1;
    return x << 1;
}

parser P(packet_in pkt, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}

control VC(inout headers h, inout metadata m) { apply { } }

control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        h.o.setValid();
        h.o.add = h.i.a + h.i.b;
        h.o.sub = h.i.a - h.i.b;
        h.o.satadd = h.i.a |+| h.i.b;
        h.o.satsub = h.i.a |-| h.i.b;
        h.o.sadd = h.i.c + h.i.d;
        h.o.ssat = h.i.c |+| h.i.d;
        h.o.shl = h.i.a << 3;
        h.o.shr = h.i.a >> h.i.b[2:0];
        h.o.sshr = h.i.c >> 2;
        h.o.cat = h.i.a ++ h.i.b;
        h.o.slice = (bit<8>) h.i.a[7:4];
        h.o.slicew = h.i.b;
        h.o.slicew[3:0] = 4w0xF;
        h.o.neg = -h.i.a;
        h.o.cmpl = ~h.i.a;
        h.o.narrow = (bit<8>) ((bit<16>) h.i.a * 16w3);
        h.o.mux = h.i.a > h.i.b ? h.i.a : h.i.b;
        bit<8> y;
        bit<8> r = twice(h.i.a, y);
        h.o.fn_out = r ^ y;
        switch (h.i.b) {
            1: { h.o.sw = 10; }
            2:
            3: { h.o.sw = 20; }
            default: { h.o.sw = 30; }
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers h, inout metadata m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply { pkt.emit(h.i); pkt.emit(h.o); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
