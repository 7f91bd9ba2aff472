// Regression: bmv2 extracts a varbit field in whole bytes only; a length
// that is not a multiple of 8 is the parser error ParserInvalidArgument.
#include <core.p4>
#include <v1model.p4>
header len_t { bit<8> bits; }
header opt_t { varbit<32> data; }
struct H { len_t l; opt_t o; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.extract(h.l);
        p.extract(h.o, (bit<32>) h.l.bits);
        transition accept;
    }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = sm.parser_error == error.ParserInvalidArgument ? 9w2 : 9w1;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
