/* stamp.p4: basic.p4 plus what the traffic manager decided, written into
 * each packet, for the fabric engine's differential test.  Ingress picks
 * the priority queue from diffserv's low three bits; egress stamps
 * enq_qdepth into identification, deq_qdepth into ttl, and the low 16 bits
 * of deq_timedelta and of enq_timestamp into srcAddr. */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct basic_metadata_t {
}

parser BasicParser(packet_in packet,
                   out headers_t hdr,
                   inout basic_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control BasicVerifyChecksum(inout headers_t hdr, inout basic_metadata_t meta) {
    apply { }
}

control BasicIngress(inout headers_t hdr,
                     inout basic_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* The previous destination MAC (this switch's) becomes the source. */
    action set_nhop(bit<48> dmac, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* Destination prefix -> next hop. The controller (or an STF file)
     * writes one entry per reachable prefix: the next hop's MAC and the
     * egress port towards it. Misses are dropped. */
    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            set_nhop;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            standard_metadata.priority = hdr.ipv4.diffserv[2:0];
            ipv4_lpm.apply();
        } else {
            drop();
        }
    }
}

control BasicEgress(inout headers_t hdr,
                    inout basic_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.identification = (bit<16>)standard_metadata.enq_qdepth;
            hdr.ipv4.ttl = (bit<8>)standard_metadata.deq_qdepth;
            hdr.ipv4.srcAddr = standard_metadata.deq_timedelta[15:0] ++ standard_metadata.enq_timestamp[15:0];
        }
    }
}

control BasicComputeChecksum(inout headers_t hdr, inout basic_metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control BasicDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(
    BasicParser(),
    BasicVerifyChecksum(),
    BasicIngress(),
    BasicEgress(),
    BasicComputeChecksum(),
    BasicDeparser()
) main;
