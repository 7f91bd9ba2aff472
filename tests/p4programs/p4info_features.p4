/* Exercises what P4Info describes: every kind of table key, action scopes,
 * const and initial defaults, const entries, action profiles (declared and
 * in a table property), selectors, counters, meters, direct resources,
 * registers, a digest, controller headers, a parser value set, @id, @name,
 * @brief, a serializable enum, a translated `type`, a sub-control, and
 * declarations p4c drops (an unused action, a table never applied). */
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("tb.example/port", 32)
type bit<9> port_t;

enum bit<8> color_t { RED = 1, GREEN = 2 }

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> pad;
}

@controller_header("packet_out")
header packet_out_t {
    @id(2) bit<9> egress_port;
    @id(1) bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
}

struct learn_t {
    bit<48> src;
    bit<9>  port;
}

struct meta_t {
    bit<16> hash;
    bit<8>  tag;
}

parser TbParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    value_set<bit<16>>(4) special_types;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            special_types: accept;
            default: accept;
        }
    }
}

control TbVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control Acl(inout headers_t hdr, inout standard_metadata_t sm) {
    action deny() { mark_to_drop(sm); }
    table acl {
        key = { hdr.ethernet.ether_type : ternary; }
        actions = { deny; NoAction; }
        const entries = {
            0x0806 &&& 0xFFFF : deny();
        }
        default_action = NoAction();
    }
    apply { acl.apply(); }
}

control TbIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(64, CounterType.packets_and_bytes) port_counter;
    meter(32, MeterType.bytes) port_meter;
    register<bit<32>>(128) last_seen;
    direct_counter(CounterType.packets) fwd_hits;
    action_selector(HashAlgorithm.crc16, 256, 16) ecmp_selector;
    Acl() acl_block;

    @brief("Send out of a port")
    action forward(port_t port, color_t color) {
        sm.egress_spec = (bit<9>)port;
        meta.tag = (bit<8>)color;
    }
    @id(0x100)
    action learn() {
        digest<learn_t>(1, { hdr.ethernet.src, sm.ingress_port });
    }
    @name(".global_drop")
    action drop() { mark_to_drop(sm); }
    action never_used() { meta.tag = 1; }
    action set_tag(bit<8> tag) { meta.tag = tag; }

    table fwd {
        key = {
            hdr.ethernet.dst : exact;
            hdr.ethernet.src : lpm @name("source");
            sm.ingress_port  : range;
            meta.tag         : optional;
        }
        actions = {
            forward;
            @tableonly learn;
            @defaultonly drop;
        }
        const default_action = drop();
        counters = fwd_hits;
        size = 512;
    }

    table ecmp {
        key = {
            hdr.ethernet.dst : exact;
            meta.hash        : selector;
        }
        actions = { forward; }
        implementation = ecmp_selector;
    }

    table tagger {
        key = { meta.hash : exact; }
        actions = { set_tag; NoAction; }
        default_action = set_tag(7);
        @name("tag_profile") implementation = action_profile(64);
    }

    table unused_table {
        key = { meta.tag : exact; }
        actions = { never_used; }
    }

    apply {
        port_counter.count((bit<32>)sm.ingress_port);
        port_meter.execute_meter((bit<32>)sm.ingress_port, meta.tag);
        last_seen.write(0, 1);
        fwd.apply();
        ecmp.apply();
        tagger.apply();
        acl_block.apply(hdr, sm);
    }
}

control TbEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) rate;
    action mark() { rate.read(meta.tag); }
    table limit {
        key = { sm.egress_port : exact; }
        actions = { mark; NoAction; }
        meters = rate;
        default_action = NoAction();
    }
    apply { limit.apply(); }
}

control TbCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control TbDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(TbParser(), TbVerify(), TbIngress(), TbEgress(), TbCompute(), TbDeparser()) main;
