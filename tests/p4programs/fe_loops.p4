// P4 1.2.4 for loops as bmv2 runs them (p4c lowers them to jumps):
// header h: n (loop bound, from the packet), then three results.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; bit<8> op; bit<16> r1; bit<16> r2; bit<16> r3; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

bit<16> triangle(in bit<8> n) {
    bit<16> acc = 0;
    for (bit<8> i = 1; i <= n; i = i + 1) {
        acc = acc + (bit<16>)i;
        if (acc > 1000) { return 0xffff; }
    }
    return acc;
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action grid(bit<8> k) {
        // nested loops, two init/update clauses, compound update
        hdr.h.r2 = 0;
        for (bit<8> i = 0, bit<8> j = 0; i < k; i = i + 1, j = j + 2) {
            for (bit<8> x = 0; x < k; x += 1) {
                hdr.h.r2 = hdr.h.r2 + 1;
            }
            hdr.h.r3 = (bit<16>)j;
        }
    }
    action skip_and_stop() {
        // continue still runs the update; break leaves the inner loop only
        hdr.h.r2 = 0;
        hdr.h.r3 = 0;
        for (bit<8> i = 0; i < 20; i = i + 1) {
            if ((i & 1) == 0) { continue; }
            if (i > 9) { break; }
            hdr.h.r2 = hdr.h.r2 + (bit<16>)i;
            for (bit<8> j = 0; ; j = j + 1) {
                if (j == 3) { break; }
                hdr.h.r3 = hdr.h.r3 + 1;
            }
        }
    }
    table t {
        key = { hdr.h.op : exact; }
        actions = { grid; skip_and_stop; NoAction; }
        const entries = { 1 : grid(3); 2 : skip_and_stop(); }
        default_action = NoAction;
    }
    apply {
        hdr.h.r1 = triangle(hdr.h.n);
        t.apply();
        sm.egress_spec = 1;
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
