// The implicit conversions p4c's type checker inserts, and only those:
// serializable enum <-> its underlying bit<W> (assignment, initialiser, in
// argument).  Widening between widths needs an explicit cast, which
// computes at the narrow width first (p4c's arith-bmv2 pattern).
#include <core.p4>
#include <v1model.p4>
enum bit<8> Op { ADD = 1, SUB = 2, NOP = 0 }
header h_t { bit<8> op; bit<32> a; bit<32> b; bit<64> c; bit<8> echo; }
struct headers { h_t h; }
struct metadata { Op op; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
bit<8> code(in bit<8> v) { return v; }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        meta.op = hdr.h.op;                 // bit<8> -> Op
        Op local = hdr.h.op;
        if (meta.op == Op.ADD) {
            hdr.h.c = (bit<64>)(hdr.h.a + hdr.h.b);   // wraps at 32 bits, then widens
        } else if (local == Op.SUB) {
            hdr.h.c = (bit<64>)hdr.h.a - (bit<64>)hdr.h.b;
        }
        hdr.h.echo = code(Op.SUB);          // Op -> bit<8> in an argument
        sm.egress_spec = 1;
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
