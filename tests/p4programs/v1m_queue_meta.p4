/* Queueing metadata in the output frame: egress copies what the traffic
 * manager handed it (enq_timestamp, enq_qdepth, deq_timedelta, deq_qdepth,
 * egress_global_timestamp) and egress_port, packet_length, instance_type
 * and ingress_global_timestamp into a header emitted after ctl.
 *
 * ctl.port is the egress port; ctl.op 1 drops in egress.  Built with
 * -DREQUESTS the program also asks for packet-context requests in egress
 * (op 2: E2E clone to session 5, op 3: one recirculation, op 4:
 * truncate(8)), so it is not plain (CompiledProgram.requests is not empty). */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> op;
    bit<8> port;
}

header qmeta_t {
    bit<32> enq_timestamp;
    bit<32> enq_qdepth;
    bit<32> deq_timedelta;
    bit<32> deq_qdepth;
    bit<48> egress_global_timestamp;
    bit<48> ingress_global_timestamp;
    bit<16> egress_port;
    bit<32> packet_length;
    bit<8>  instance_type;
}

struct headers {
    ctl_t   ctl;
    qmeta_t q;
}

struct metadata {
    @field_list(1)
    bit<8> kept;
}

parser P(packet_in pkt, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.ctl); transition accept; }
}

control VC(inout headers h, inout metadata m) { apply { } }

control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>) h.ctl.port;
        m.kept = h.ctl.op;
    }
}

control E(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        h.q.setValid();
        h.q.enq_timestamp = sm.enq_timestamp;
        h.q.enq_qdepth = (bit<32>) sm.enq_qdepth;
        h.q.deq_timedelta = sm.deq_timedelta;
        h.q.deq_qdepth = (bit<32>) sm.deq_qdepth;
        h.q.egress_global_timestamp = sm.egress_global_timestamp;
        h.q.ingress_global_timestamp = sm.ingress_global_timestamp;
        h.q.egress_port = (bit<16>) sm.egress_port;
        h.q.packet_length = sm.packet_length;
        h.q.instance_type = (bit<8>) sm.instance_type;
        if (h.ctl.op == 1) {
            mark_to_drop(sm);
        }
#ifdef REQUESTS
        if (h.ctl.op == 2 && sm.instance_type == 0) {
            clone_preserving_field_list(CloneType.E2E, 5, 1);
        }
        if (h.ctl.op == 3 && sm.instance_type == 0) {
            recirculate_preserving_field_list(1);
        }
        if (h.ctl.op == 4) {
            truncate(8);
        }
#endif
    }
}

control CC(inout headers h, inout metadata m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply { pkt.emit(h.ctl); pkt.emit(h.q); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
