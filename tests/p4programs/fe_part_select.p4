// Indexed part-selects `e[lo +: w]` (the w bits from bit lo up) read and
// written, next to the equivalent `e[hi:lo]`.
#include <core.p4>
#include <v1model.p4>

header data_t {
    bit<32> f1;
    bit<8>  b0;
    bit<8>  b1;
    bit<16> h;
}

struct headers_t { data_t data; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.data); transition accept; }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.data.b0 = hdr.data.f1[0 +: 8];
        hdr.data.b1 = hdr.data.f1[24 +: 8];
        hdr.data.h[4 +: 8] = hdr.data.f1[15:8];
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.data); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
