// Const entries with @priority annotations (p4c's bmv2 back end): an
// annotated entry's bmv2 priority is its @priority value, any other entry's
// is its 1-based position in the list; bmv2 prefers the smallest value.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> k;
    bit<8>  tag;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action out_to(bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
        hdr.h.tag = tag;
    }
    action keep() { }

    // positions 1, 2, 3, 4; bmv2 priorities 5, 2, 1, 4
    table annotated {
        key = { hdr.h.k : ternary; }
        actions = { out_to; keep; }
        default_action = keep();
        const entries = {
            0x0000 &&& 0x000f : out_to(1, 0xa1) @priority(5);
            0x1230 &&& 0xfff0 : out_to(2, 0xa2);
            0x1200 &&& 0xff00 : out_to(3, 0xa3) @priority(1);
            0x0000 &&& 0x0000 : out_to(4, 0xa4) @priority(4);
        }
    }

    // no annotation: the first listed match wins
    table listed {
        key = { hdr.h.k : ternary; }
        actions = { out_to; keep; }
        default_action = keep();
        const entries = {
            0x5500 &&& 0xff00 : out_to(5, 0xb1);
            0x0000 &&& 0x0000 : out_to(6, 0xb2);
        }
    }

    apply {
        if (hdr.h.k[15:12] == 0x5) {
            listed.apply();
        } else {
            annotated.apply();
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
