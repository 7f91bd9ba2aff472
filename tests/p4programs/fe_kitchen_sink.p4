/* Front-end coverage program: one of (almost) every v1model construct the
 * builtin target supports.  Loaded by tests/unit/frontend; small enough to
 * read, meant to compile with p4c too. */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define ETH_IPV4 0x0800
#define MAX_LABELS 4
#define PLUS_ONE(x) ((x) + 1)

typedef bit<48> mac_t;
type bit<32> ipv4_addr_t;
const bit<8> PROTO_UDP = 17;
const int BIG = 1 << 40;

enum Colour { RED, GREEN, BLUE }
enum bit<16> EtherType { IPV4 = ETH_IPV4, VLAN = 0x8100, MPLS = 0x8847 }

error { BadVersion, TooManyLabels }

header ethernet_t { mac_t dst; mac_t src; bit<16> etherType; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header ipv4_options_t { varbit<320> options; }
header udp_t { bit<16> srcPort; bit<16> dstPort; bit<16> len; bit<16> csum; }
header tcp_t { bit<16> srcPort; bit<16> dstPort; bit<32> seq; }
header_union l4_t { udp_t udp; tcp_t tcp; }

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> pad; }

struct headers {
    packet_in_t packet_in;
    ethernet_t ethernet;
    mpls_t[MAX_LABELS] mpls;
    ipv4_t ipv4;
    ipv4_options_t ipv4_options;
    l4_t l4;
}

struct digest_t { mac_t src; bit<9> port; }

struct metadata {
    @field_list(1, 2) bit<32> preserved;
    @field_list(2) bit<16> hash_out;
    bit<8> colour;
    bit<2> meter_colour;
    Colour c;
    EtherType et;
    tuple<bit<8>, bool> pair;
    bool flag;
    int<8> signed_val;
}

parser SubParser(packet_in pkt, inout headers hdr) {
    state start {
        pkt.extract(hdr.l4.udp);
        transition accept;
    }
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t sm) {
    value_set<bit<16>>(4) custom_types;
    SubParser() sub;
    bit<8> n = 0;

    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            EtherType.IPV4: parse_ipv4;
            0x8847 &&& 0xFFFF: parse_mpls;
            0x9000 .. 0x90FF: accept;
            custom_types: parse_ipv4;
            default: accept;
        }
    }
    state parse_mpls {
        packet.extract(hdr.mpls.next);
        n = n + 1;
        verify(n <= MAX_LABELS, error.TooManyLabels);
        transition select(hdr.mpls.last.bos) {
            0: parse_mpls;
            1: parse_ipv4;
        }
    }
    state parse_ipv4 {
        bit<4> v = packet.lookahead<bit<4>>();
        verify(v == 4, error.BadVersion);
        packet.extract(hdr.ipv4);
        packet.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        transition select(hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (PROTO_UDP, 0): parse_udp;
            (6, _): parse_tcp;
            default: accept;
        }
    }
    state parse_udp {
        sub.apply(packet, hdr);
        transition accept;
    }
    state parse_tcp {
        packet.advance(32);
        transition reject;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

bit<16> fold16(in bit<32> x) {
    return x[31:16] + x[15:0];
}

control Acl(inout headers hdr, inout metadata meta, inout standard_metadata_t sm)(bit<9> drop_port) {
    direct_counter(CounterType.packets_and_bytes) acl_hits;
    action deny() { sm.egress_spec = drop_port; }
    action allow() { acl_hits.count(); }
    table acl {
        key = {
            hdr.ipv4.srcAddr: ternary @name("src");
            hdr.ipv4.dstAddr: ternary;
            hdr.l4.udp.dstPort: range;
            hdr.ipv4.protocol: optional;
        }
        actions = { deny; allow; }
        default_action = allow();
        counters = acl_hits;
        entries = {
            priority = 10: (0x0A000000 &&& 0xFF000000, _, 0 .. 1023, 17): deny();
            const (_, 32w0x0A000001, _, _): allow();
        }
    }
    apply { acl.apply(); }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    counter<bit<10>>(1024, CounterType.packets) port_counter;
    meter<bit<10>>(64, MeterType.bytes) port_meter;
    direct_meter<bit<2>>(MeterType.packets) flow_meter;
    register<bit<32>, bit<10>>(1024) last_seen;
    action_selector(HashAlgorithm.crc16, 32w1024, 32w14) ecmp_selector;
    Acl(9w511) acl_inst;
    bit<32> tmp;

    @name(".global_drop") action drop() { mark_to_drop(sm); }
    @name("fwd") action forward(bit<9> port, mac_t dmac) {
        sm.egress_spec = port;
        hdr.ethernet.dst = dmac;
    }
    action set_colour(inout bit<8> c, bit<8> v) { c = v; }
    action meter_it() { flow_meter.read(meta.meter_colour); }

    table l2 {
        key = { hdr.ethernet.dst: exact; }
        actions = { forward; drop; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 512;
        support_timeout = true;
    }
    table ecmp {
        key = { hdr.ipv4.dstAddr: lpm; hdr.ipv4.srcAddr: selector; hdr.l4.udp.srcPort: selector; }
        actions = { forward; drop; }
        implementation = ecmp_selector;
    }
    table profiled {
        key = { meta.colour: exact; }
        actions = { forward; }
        implementation = action_profile(128);
    }
    table colours {
        key = { meta.colour: exact; }
        actions = { set_colour(meta.colour); meter_it; }
        meters = flow_meter;
        entries = {
            1: set_colour(meta.colour, 5);
        }
    }

    apply {
        tmp = 0;
        port_counter.count((bit<10>)sm.ingress_port);
        port_meter.execute_meter((bit<10>)sm.ingress_port, meta.meter_colour);
        last_seen.read(tmp, (bit<10>)sm.ingress_port);
        last_seen.write((bit<10>)sm.ingress_port, tmp |+| 1);
        hash(meta.hash_out, HashAlgorithm.crc32, 16w0, { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }, 16w1024);
        random(meta.colour, 8w0, 8w255);
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            switch (l2.apply().action_run) {
                forward: { hdr.ipv4.ttl = hdr.ipv4.ttl - 1; }
                drop:
                default: { exit; }
            }
        } else if (!hdr.ethernet.isValid()) {
            drop();
            return;
        }
        if (ecmp.apply().hit) {
            acl_inst.apply(hdr, meta, sm);
        }
        profiled.apply();
        colours.apply();
        switch (meta.colour) {
            1: { meta.c = Colour.RED; }
            2: { meta.c = Colour.GREEN; }
            default: { meta.c = Colour.BLUE; }
        }
        meta.et = (EtherType)hdr.ethernet.etherType;
        meta.flag = meta.et == EtherType.VLAN ? true : false;
        meta.signed_val = -8s1 |-| 8s127;
        meta.pair = { 8w1, true };
        hdr.ethernet.etherType[15:8] = 8w0x08;
        hdr.ipv4.hdrChecksum = fold16(hdr.ipv4.srcAddr ++ 32w0 > 64w5 ? 32w1 : 32w2) ^ 16w0xFFFF;
        meta.preserved = (bit<32>)hdr.ipv4.minSizeInBits() + ipv4_t.minSizeInBytes() + PLUS_ONE(BIG >> 38);
        hdr.mpls.push_front(1);
        hdr.mpls[0].setValid();
        hdr.mpls[0] = { 20w5, 3w0, 1w1, 8w64 };
        hdr.mpls.pop_front(1);
        hdr.l4.udp = udp_t { srcPort = 1, dstPort = 2, len = 8, csum = 0 };
        digest<digest_t>(1, { hdr.ethernet.src, sm.ingress_port });
        clone_preserving_field_list(CloneType.I2E, 32w100, 1);
        resubmit_preserving_field_list(2);
        log_msg("ttl={}", { hdr.ipv4.ttl });
        log_msg("hello");
        assert(sm.ingress_port != 511);
        truncate(64);
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            recirculate_preserving_field_list(1);
        }
        mark_to_drop();
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum_with_payload(hdr.l4.udp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, hdr.l4.udp.len,
              hdr.l4.udp.srcPort, hdr.l4.udp.dstPort, hdr.l4.udp.len },
            hdr.l4.udp.csum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.mpls);
        packet.emit(hdr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
