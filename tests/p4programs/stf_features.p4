/* STF features: a ternary table with priorities, multicast groups with
 * replication ids, an ingress-to-egress clone session, a register the
 * control plane reads and writes, and an indexed counter.
 *
 * Packet: one 8-byte header h (op, key, val, res).  op 1 increments
 * reg[val] and reports the new value in `res`; op 2 asks for a clone to
 * session 5.  Egress marks clones with op 0xCC and multicast copies with
 * their replication id in `val`. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;
    bit<8>  key;
    bit<16> val;
    bit<32> res;
}

struct headers { h_t h; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<32>>(8) reg;
    counter(8, CounterType.packets_and_bytes) port_count;

    action fwd(bit<9> port) { sm.egress_spec = port; }
    action to_mcast(bit<16> grp) { sm.mcast_grp = grp; }
    action drop() { mark_to_drop(sm); }

    table acl {
        key = { hdr.h.key: ternary; }
        actions = { fwd; to_mcast; drop; }
        default_action = drop();
    }

    apply {
        port_count.count((bit<32>) sm.ingress_port);
        acl.apply();
        if (hdr.h.op == 1) {
            bit<32> v;
            reg.read(v, (bit<32>) hdr.h.val);
            v = v + 1;
            reg.write((bit<32>) hdr.h.val, v);
            hdr.h.res = v;
        } else if (hdr.h.op == 2) {
            clone(CloneType.I2E, 32w5);
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            hdr.h.op = 0xCC;
        } else if (sm.egress_rid != 0) {
            hdr.h.val = sm.egress_rid;
        }
    }
}

control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
