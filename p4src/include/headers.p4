/* headers.p4: packet headers and metadata of fabric.p4.
 *
 * cell_t is THE cell header of p4src/README.md; tests/unit/p4src compares it
 * field by field (name, width, order) with CELL_FIELDS in
 * testbed/host/wire.py, so the switch and the hosts cannot drift apart. */
#ifndef FABRIC_HEADERS_P4
#define FABRIC_HEADERS_P4

#include "defines.p4"

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

/* The TOS byte is split into DSCP and ECN because egress rewrites ECN. */
header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
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

/* One 32-bit word of IPv4 options. IHL is at most 15, so at most 10 words
 * follow the fixed header; they are extracted (not skipped) so that the
 * deparser re-emits them and packets with options leave intact. */
header ipv4_option_t {
    bit<32> data;
}
#define IPV4_OPTION_WORDS 10

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

/* The cell header (24 bytes), in UDP to port CELL_UDP_PORT. Field names,
 * widths and order are those of p4src/README.md and wire.CELL_FIELDS. */
header cell_t {
    bit<4>  version;
    bit<4>  type;        /* CELL_TYPE_* */
    bit<8>  flags;       /* bit 0 LAST, bit 1 RETX, bit 2 ECE */
    bit<16> entropy;     /* sender's path choice for CELL_MODE_ENTROPY */
    bit<32> flow_id;
    bit<32> msg_id;
    bit<32> psn;
    bit<32> credit_seq;
    bit<32> aux;
}

/* In-band telemetry (p4src/README.md, "In-band telemetry"): a DATA cell
 * with CELL_FLAG_INT set carries this shim after its header, then
 * hop_count hop records, newest first, then its body. */
header int_shim_t {
    bit<8>  hop_count;   /* hop records that follow */
    bit<8>  max_hops;    /* records the first switch allows (<= INT_MAX_HOPS) */
    bit<8>  overflow;    /* switches crossed that found no room (saturates at 255) */
    bit<8>  hop_len;     /* bytes per hop record: INT_HOP_BYTES */
}

header int_hop_t {
    bit<16> switch_id;   /* the controller's id of the switch (int_config) */
    bit<7>  pad0;
    bit<9>  egress_port;
    bit<13> pad1;
    bit<19> enq_qdepth;  /* packets in the egress queue at enqueue */
    bit<32> hop_latency; /* deq_timedelta: microseconds in the egress queue */
}

struct headers_t {
    ethernet_t    ethernet;
    ipv4_t        ipv4;
    ipv4_option_t[IPV4_OPTION_WORDS] ipv4_options;
    tcp_t         tcp;
    udp_t         udp;
    cell_t        cell;
    int_shim_t    int_shim;
    int_hop_t[INT_MAX_HOPS] int_hops;
}

struct fabric_metadata_t {
    /* parser */
    bit<4>  ipv4_option_words;   /* option words still to extract */
    /* ingress: forwarding */
    bit<16> l4_src;              /* TCP/UDP ports, 0 for other protocols */
    bit<16> l4_dst;
    bit<16> cell_udp_length;     /* conforming DATA cell's UDP length; 0 = no check */
    bit<16> group_id;
    bit<8>  group_size;
    bit<2>  cell_mode;
    bit<16> entropy_divisor;     /* entropy mode: this tier's digit is (entropy / divisor) mod size */
    bit<8>  entropy_shift;       /* divisor = 2^shift * odd */
    bit<16> entropy_inverse;     /* odd^-1 mod 2^16 */
    bit<16> entropy_low;         /* entropy mod divisor */
    bit<16> entropy_quotient;    /* entropy / divisor */
    bit<32> hash_multiplier;     /* this switch's ECMP seed (hash_config) */
    bit<32> flow_hash;
    bit<8>  member;
    bit<8>  rr_following;        /* round robin: the member after this one */
    bit<16> rand16;
    bit<2>  credit_color;
    bit<8>  drop_reason;         /* DROP_*, DROP_NONE while forwarding */
    /* ingress: tenants (tenant_config, tenant_ports, tenant_hosts) */
    bit<1>  tenants_on;          /* this switch isolates tenants (a ToR with a tenants: section) */
    bit<1>  host_port;           /* the ingress port is a host's, bound to a tenant */
    bit<6>  tenant;              /* the packet's tenant: its host port's, or carried in DSCP */
    bit<6>  dst_tenant;          /* the destination's tenant (0: none) */
    bit<2>  tenant_color;        /* tenant_meter's colour of a host port's packet */
    bit<48> port_mac;            /* what the host port owns: its host's MAC and IPv4 */
    bit<32> port_ipv4;
    /* egress: ECN marking */
    bit<2>  ecn_mode;
    bit<19> ecn_kmin;            /* step: K; RED: Kmin */
    bit<19> ecn_kmax;
    bit<16> ecn_pmax;            /* in 1/65536 */
    bit<1>  ecn_mark;
    bit<16> ecn_rand;
    bit<19> max_qdepth;
    /* parser / egress: in-band telemetry */
    bit<8>  int_hops_left;       /* hop records still to extract */
    bit<1>  int_enabled;         /* int_config: this switch records hops */
    bit<16> int_switch_id;
    bit<8>  int_max_hops;
    bit<32> int_sample_mask;     /* the first switch adds a shim iff psn & mask == 0 */
}

#endif
