// Arrays of non-header types (P4-16 1.2.4): `bit<8>[4] arr` and the C-style
// `bit<8> c[2]` as header fields, an array of arrays, bool elements, a local
// array; constant and run-time indices, read and written. Element 0 is first
// on the wire.
#include <core.p4>
#include <v1model.p4>

header data_t {
    bit<32>      f1;
    bit<8>[4]    arr;
    bit<8>       c[2];
    bit<8>       idx;
    bit<8>       r;
    bit<4>[2][2] n;
    bool[8]      flags;
}

struct headers_t { data_t data; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.data); transition accept; }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.data.r = hdr.data.arr[hdr.data.idx];      // run-time read (0 when idx >= 4)
        hdr.data.arr[0] = hdr.data.f1[0 +: 8];
        hdr.data.arr[1] = hdr.data.f1[8 +: 8];
        hdr.data.c[1] = hdr.data.arr[3];
        hdr.data.c[hdr.data.idx] = 0x77;              // run-time write (none when idx >= 2)
        bit<8>[2] t;
        t[0] = hdr.data.c[1];
        t[1] = hdr.data.c[0];
        if (t != hdr.data.c) {
            hdr.data.r = hdr.data.r + 1;
        }
        hdr.data.c = t;
        hdr.data.n[1][0] = hdr.data.n[0][1];
        hdr.data.n[0][hdr.data.idx[0:0]] = 0xF;
        hdr.data.flags[hdr.data.idx] = !hdr.data.flags[0];
        hdr.data.flags[7] = true;
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.data); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
