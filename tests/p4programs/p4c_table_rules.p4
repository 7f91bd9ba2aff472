// Table rules p4c's front end applies that the control plane sees:
//  * `plain` has no default_action: its default is NoAction (listed
//    @defaultonly), so a miss just runs on;
//  * `by_valid` keys on validity tests, named `hdr.opt.$valid$` in P4Info;
//  * `setter` lists an action with its `out` parameter bound, so only
//    `val` is action data.
#include <core.p4>
#include <v1model.p4>

header base_t { bit<8> kind; bit<8> a; bit<8> b; }
header opt_t  { bit<8> c; }
struct headers_t { base_t base; opt_t opt; }
struct meta_t { bit<8> seen; }

parser Prs(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.base);
        transition select(hdr.base.kind) {
            1: parse_opt;
            default: accept;
        }
    }
    state parse_opt { pkt.extract(hdr.opt); transition accept; }
}

control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action to_port(bit<9> port) { sm.egress_spec = port; }
    action setbyte(out bit<8> dst, bit<8> val) { dst = val; }
    action mark(bit<8> v) { hdr.base.b = v; }

    table plain {
        key = { hdr.base.a : exact; }
        actions = { to_port; }
    }
    table by_valid {
        key = {
            hdr.opt.isValid() : exact;
            hdr.base.kind     : ternary;
        }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    table setter {
        key = { hdr.base.kind : exact; }
        actions = { setbyte(hdr.base.a); }
    }
    apply {
        sm.egress_spec = 2;
        plain.apply();
        by_valid.apply();
        setter.apply();
    }
}

control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Cks(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.base); pkt.emit(hdr.opt); }
}

V1Switch(Prs(), Vfy(), Ing(), Egr(), Cks(), Dep()) main;
