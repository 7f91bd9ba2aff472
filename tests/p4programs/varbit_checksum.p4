// A varbit field inside checksum and hash field lists: bmv2 packs it at
// its current (extracted) length, MSB first, and pads the whole list
// with zeros at the end.  `len` gives the option length in bytes.
#include <core.p4>
#include <v1model.p4>

header opts_t {
    bit<8>      len;
    bit<16>     csum;
    bit<16>     hash;
    varbit<32>  opt;
}
struct headers_t { opts_t h; }
struct meta_t { }

parser Prs(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h, (bit<32>)(8 * pkt.lookahead<bit<8>>()));
        transition accept;
    }
}

control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hash(hdr.h.hash, HashAlgorithm.crc16, 16w0, { hdr.h.opt, hdr.h.len }, 32w65536);
    }
}

control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control Cks(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, { hdr.h.len, hdr.h.opt }, hdr.h.csum, HashAlgorithm.csum16);
    }
}

control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(Prs(), Vfy(), Ing(), Egr(), Cks(), Dep()) main;
