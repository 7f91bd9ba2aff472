// error: header field 'f' cannot have type tuple_struct
#include <core.p4>
#include <v1model.p4>
struct tuple_struct { tuple<bit<8>, bool> z; }
header bad_t { tuple_struct f; }
header h_t { bit<8> a; bit<16> b; }
struct headers { h_t h; }
struct metadata { bit<8> x; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
