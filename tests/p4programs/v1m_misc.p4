/* Control-flow and value features on the builtin target: sub-controls
 * with inout params, action_run switch with fall-through and default,
 * const entries (ternary, first listed wins), header unions, varbit
 * extract/emit, verify_checksum, assert, direct action calls with
 * out params, struct assignment copying header validity. */
#include <core.p4>
#include <v1model.p4>

header cmd_t {
    bit<8>  op;
    bit<8>  res;
    bit<8>  res2;
    bit<8>  vlen;
    bit<16> ck;
}
header opt_t {
    varbit<32> data;
}
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union ab_t {
    a_t a;
    b_t b;
}

struct headers {
    cmd_t cmd;
    opt_t opt;
    ab_t ab;
    a_t copy;
}
struct metadata {
    bit<8> acc;
}

parser P(packet_in pkt, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.cmd);
        pkt.extract(h.opt, (bit<32>) h.cmd.vlen * 8);
        transition select(h.cmd.op) {
            5: parse_a;
            6: parse_b;
            default: accept;
        }
    }
    state parse_a { pkt.extract(h.ab.a); transition accept; }
    state parse_b { pkt.extract(h.ab.b); transition accept; }
}

control VC(inout headers h, inout metadata m) {
    apply {
        verify_checksum(h.cmd.op == 7, { h.cmd.op, h.cmd.res }, h.cmd.ck, HashAlgorithm.csum16);
    }
}

control Adder(inout bit<8> value, in bit<8> amount) {
    apply { value = value + amount; }
}

control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    Adder() add1;
    Adder() add2;

    action set_res(bit<8> v) { h.cmd.res = v; }
    action other() { h.cmd.res = 0xEE; }
    action both(out bit<8> o, inout bit<8> io) { o = 3; io = io + 1; }

    table classify {
        key = { h.cmd.op: ternary; }
        actions = { set_res; other; NoAction; }
        const entries = {
            0x01 &&& 0x0F: set_res(0x11);
            0x01 &&& 0x01: set_res(0x22);
            0x02: other();
        }
        default_action = NoAction();
    }

    apply {
        switch (classify.apply().action_run) {
            set_res:
            other: { h.cmd.res2 = 1; }
            default: { h.cmd.res2 = 2; }
        }
        if (h.cmd.op == 3) {
            add1.apply(h.cmd.res, 5);
            add2.apply(h.cmd.res, 7);
        }
        if (h.cmd.op == 4) {
            bit<8> io = 10;
            both(h.cmd.res, io);
            h.cmd.res2 = io;
        }
        if (h.cmd.op == 6) {
            h.ab.a.setValid();      // invalidates b
            h.ab.a.x = 0x5A;
        }
        if (h.cmd.op == 5) {
            h.copy = h.ab.a;        // copies validity and fields
        }
        if (h.cmd.op == 7) {
            h.cmd.res = (bit<8>) sm.checksum_error;
        }
        if (h.cmd.op == 8) {
            assert(h.cmd.res == 1);
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers h, inout metadata m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply {
        pkt.emit(h.cmd);
        pkt.emit(h.opt);
        pkt.emit(h.ab);
        pkt.emit(h.copy);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
