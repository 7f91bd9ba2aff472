/* The v1model packet flow on the builtin target: resubmit, I2E and E2E
 * clones, recirculation (with @field_list preservation), multicast,
 * mark_to_drop, exit, truncate, packet_length after setValid, and the
 * instance_type each copy sees in egress. */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8>  op;
    bit<8>  itype;
    bit<8>  count;
    bit<8>  kept;
    bit<8>  lost;
    bit<16> rid;
    bit<16> len;
}
header extra_t {
    bit<16> x;
}

struct headers {
    ctl_t ctl;
    extra_t extra;
}
struct metadata {
    @field_list(1)
    bit<8> kept;
    bit<8> lost;
}

parser P(packet_in pkt, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.ctl); transition accept; }
}

control VC(inout headers h, inout metadata m) { apply { } }

control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0) {
            m.kept = 0xAA;
            m.lost = 0xBB;
        }
        if (h.ctl.op == 7) {
            exit;
        }
        sm.egress_spec = 1;
        if (h.ctl.op == 1 && sm.instance_type == 0) {
            resubmit_preserving_field_list(1);
        }
        if (h.ctl.op == 2) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        }
        if (h.ctl.op == 3) {
            sm.mcast_grp = 7;
        }
        if (h.ctl.op == 6) {
            mark_to_drop(sm);
        }
        if (h.ctl.op == 8) {
            truncate(3);
        }
        if (h.ctl.op == 10) {
            h.extra.setValid();
        }
        if (h.ctl.op == 11) {
            sm.mcast_grp = 7;
            mark_to_drop(sm);
        }
        if (h.ctl.op == 12) {
            resubmit_preserving_field_list(1);
        }
    }
}

control E(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        h.ctl.itype = (bit<8>) sm.instance_type;
        h.ctl.count = h.ctl.count + 1;
        h.ctl.kept = m.kept;
        h.ctl.lost = m.lost;
        h.ctl.rid = sm.egress_rid;
        h.ctl.len = (bit<16>) sm.packet_length;
        if (h.ctl.op == 4 && sm.instance_type == 0 && h.ctl.count == 1) {
            recirculate_preserving_field_list(1);
        }
        if (h.ctl.op == 5 && sm.instance_type == 0) {
            clone_preserving_field_list(CloneType.E2E, 5, 1);
        }
        if (h.ctl.op == 9) {
            mark_to_drop(sm);
        }
        if (h.ctl.op == 13) {
            recirculate_preserving_field_list(1);
        }
    }
}

control CC(inout headers h, inout metadata m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply { pkt.emit(h.ctl); pkt.emit(h.extra); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
