/* Stateful externs on the builtin target: hash, register, counter, meter,
 * direct counter, action selector and digest.  Also the benchmark's
 * "hash + register + action selector" program. */
#include <core.p4>
#include <v1model.p4>

header flow_t {
    bit<32> src;
    bit<32> dst;
    bit<16> sport;
    bit<16> dport;
    bit<8>  op;
    bit<32> val;
    bit<16> hash;
    bit<8>  color;
}

struct headers { flow_t f; }
struct metadata {
    bit<16> h;
    bit<32> r;
    bit<8>  color;
}
struct learn_t {
    bit<32> src;
    bit<8>  op;
}

parser P(packet_in pkt, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.f); transition accept; }
}

control VC(inout headers h, inout metadata m) { apply { } }

control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    register<bit<32>>(16) acc;
    counter(16, CounterType.packets_and_bytes) per_op;
    meter(4, MeterType.packets) rate;
    direct_counter(CounterType.packets) acl_hits;
    action_selector(HashAlgorithm.crc16, 32, 16) ecmp_sel;

    action set_port(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action count_it() { acl_hits.count(); }

    table ecmp {
        key = {
            h.f.dst: exact;
            h.f.src: selector;
            h.f.sport: selector;
        }
        actions = { set_port; drop; }
        implementation = ecmp_sel;
        default_action = drop();
    }
    table acl {
        key = { h.f.op: ternary; }
        actions = { count_it; NoAction; }
        counters = acl_hits;
        default_action = NoAction();
    }

    apply {
        hash(m.h, HashAlgorithm.crc16, 16w0, { h.f.src, h.f.dst, h.f.sport, h.f.dport }, 32w65536);
        h.f.hash = m.h;
        acc.read(m.r, (bit<32>) h.f.op);
        acc.write((bit<32>) h.f.op, m.r + h.f.val);
        h.f.val = m.r;
        per_op.count((bit<32>) h.f.op);
        rate.execute_meter((bit<32>) 0, m.color);
        h.f.color = m.color;
        acl.apply();
        ecmp.apply();
        if (h.f.op == 9) {
            digest<learn_t>(1, { h.f.src, h.f.op });
        }
    }
}

control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers h, inout metadata m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply { pkt.emit(h.f); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
