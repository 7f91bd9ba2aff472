/* Header layouts the generated struct codec must read and write exactly:
 * sub-byte fields sharing a byte, a signed nibble, a 48-bit field (two
 * struct items), a 24-bit field (odd item sizes), a field wider than 16
 * bytes (one bytes item), a signed 16-bit field and a bool.  Ingress
 * reports what it read in `res` (emitted first) and changes some fields of
 * `mix`, so both extraction and emission are checked. */
#include <core.p4>
#include <v1model.p4>

header mix_t {
    bit<4>   a;
    int<4>   b;
    bit<48>  mac;
    bit<24>  x;
    bit<1>   f;
    bit<7>   g;
    bit<136> wide;
    int<16>  s;
    bool     flag;
    bit<7>   pad;
}

header res_t {
    bit<8>   a;
    bit<8>   b_negative;
    bit<8>   s_negative;
    bit<8>   flag;
    bit<8>   g;
    bit<48>  mac_plus_1;
    bit<136> wide_xor_1;
}

struct headers {
    res_t res;
    mix_t mix;
}
struct metadata { }

parser P(packet_in pkt, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.mix);
        transition accept;
    }
}

control NoVerify(inout headers h, inout metadata m) { apply { } }

control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        h.res.setValid();
        h.res.a = (bit<8>) h.mix.a;
        h.res.b_negative = h.mix.b < 0 ? 8w1 : 8w0;
        h.res.s_negative = h.mix.s < 0 ? 8w1 : 8w0;
        h.res.flag = h.mix.flag ? 8w1 : 8w0;
        h.res.g = (bit<8>) h.mix.g;
        h.res.mac_plus_1 = h.mix.mac + 1;
        h.res.wide_xor_1 = h.mix.wide ^ 1;
        h.mix.x = h.mix.x + 1;
        h.mix.s = h.mix.s - 1;
        h.mix.flag = !h.mix.flag;
        h.mix.b = h.mix.b + 1;
    }
}

control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout headers h, inout metadata m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply {
        pkt.emit(h.res);
        pkt.emit(h.mix);
    }
}

V1Switch(P(), NoVerify(), I(), E(), NoCompute(), D()) main;
