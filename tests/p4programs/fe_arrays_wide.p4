// p4c's array1.p4/array2.p4 shape: a 128-bit array field `bit<8>[16] arr` and
// a C-style `bit<8> carr[4]`, int<4> elements, an array in a struct
// (metadata); constant and run-time indices. Element 0 is first on the wire.
#include <core.p4>
#include <v1model.p4>

header data_t {
    bit<32>     f1;
    bit<32>     f2;
    bit<16>     h1;
    bit<16>     h2;
    bit<8>[16]  arr;
    bit<8>      carr[4];
    int<4>[2]   sa;
    bit<8>      idx;
}

struct headers_t { data_t data; }
struct meta_t { bit<16>[3] m; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.data); transition accept; }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.data.arr[0] = hdr.data.f1[0+:8];
        hdr.data.arr[1] = hdr.data.f1[8+:8];
        hdr.data.arr[2] = hdr.data.f1[16+:8];
        hdr.data.arr[3] = hdr.data.f1[24+:8];
        hdr.data.arr[4] = hdr.data.f2[0+:8];
        hdr.data.arr[5] = hdr.data.f2[8+:8];
        hdr.data.arr[6] = hdr.data.f2[16+:8];
        hdr.data.arr[7] = hdr.data.f2[24+:8];
        hdr.data.carr[3] = hdr.data.arr[15];
        hdr.data.carr[hdr.data.idx] = hdr.data.arr[hdr.data.idx];
        hdr.data.sa[0] = hdr.data.sa[1] - 7;
        hdr.data.sa[1] += 1;
        meta.m[2] = hdr.data.h1;
        hdr.data.h2 = meta.m[2];
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.data); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
