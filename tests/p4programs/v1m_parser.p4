/* Parser behaviour on the builtin target: header stacks (next/last,
 * push_front/pop_front), lookahead, advance, verify with a custom error,
 * parser errors reported to ingress, reject and select-without-match
 * (accept with NoError under the bmv2 back end). */
#include <core.p4>
#include <v1model.p4>

error { BadValue }

header report_t {
    bit<8> err;
    bit<8> la;
    bit<8> ntags;
}
header tag_t {
    bit<7> v;
    bit<1> bos;
}
header b8_t {
    bit<8> v;
}

struct headers {
    report_t r;
    tag_t[3] tags;
    b8_t after;
}
struct metadata {
    bit<8> la;
}

parser P(packet_in pkt, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start {
        m.la = pkt.lookahead<bit<8>>();
        transition select(pkt.lookahead<bit<8>>()) {
            0xFF: skip;
            default: tags;
        }
    }
    state skip {
        pkt.advance(8);
        transition tags;
    }
    state tags {
        pkt.extract(h.tags.next);
        transition select(h.tags.last.bos) {
            1: after;
            default: tags;
        }
    }
    state after {
        pkt.extract(h.after);
        verify(h.after.v != 0xEE, error.BadValue);
        transition select(h.after.v) {
            0x99: reject;
            0x77: accept;
            0x55: accept;
            0x66: accept;
        }
    }
}

control VC(inout headers h, inout metadata m) { apply { } }

control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        h.r.setValid();
        if (sm.parser_error == error.NoError) {
            h.r.err = 0;
        } else if (sm.parser_error == error.PacketTooShort) {
            h.r.err = 1;
        } else if (sm.parser_error == error.StackOutOfBounds) {
            h.r.err = 2;
        } else if (sm.parser_error == error.BadValue) {
            h.r.err = 3;
        } else {
            h.r.err = 9;
        }
        h.r.la = m.la;
        if (h.tags[0].isValid()) { h.r.ntags = h.r.ntags + 1; }
        if (h.tags[1].isValid()) { h.r.ntags = h.r.ntags + 1; }
        if (h.tags[2].isValid()) { h.r.ntags = h.r.ntags + 1; }
        if (h.after.isValid() && h.after.v == 0x55) {
            h.tags.push_front(1);
            h.tags[0].setValid();
            h.tags[0].v = 0x11;
            h.tags[0].bos = 0;
        }
        if (h.after.isValid() && h.after.v == 0x66) {
            h.tags.pop_front(1);
        }
        sm.egress_spec = 2;
    }
}

control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers h, inout metadata m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply {
        pkt.emit(h.r);
        pkt.emit(h.tags);
        pkt.emit(h.after);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
