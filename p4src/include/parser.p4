/* parser.p4: Ethernet / IPv4 (+ options) / TCP | UDP (/ cell).
 *
 * Only what forwarding needs is parsed. IPv4 options are extracted word by
 * word (IHL - 5 words) so that the deparser re-emits them unchanged; the
 * L4 header is parsed only in first fragments. A UDP datagram to
 * CELL_UDP_PORT carries a cell header; a cell too short for its header
 * ends parsing with PacketTooShort and ingress drops it as a bad cell.
 * A cell with CELL_FLAG_INT carries an INT shim and hop records. */
#ifndef FABRIC_PARSER_P4
#define FABRIC_PARSER_P4

parser FabricParser(packet_in packet,
                    out headers_t hdr,
                    inout fabric_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    state start {
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        meta.ipv4_option_words = hdr.ipv4.ihl - 5;
        transition select(hdr.ipv4.ihl) {
            /* IHL < 5 is malformed: nothing more is parsed, ingress drops it. */
            0: accept;
            1: accept;
            2: accept;
            3: accept;
            4: accept;
            5: parse_ipv4_payload;
            default: parse_ipv4_option;
        }
    }

    state parse_ipv4_option {
        packet.extract(hdr.ipv4_options.next);
        meta.ipv4_option_words = meta.ipv4_option_words - 1;
        transition select(meta.ipv4_option_words) {
            0: parse_ipv4_payload;
            default: parse_ipv4_option;
        }
    }

    state parse_ipv4_payload {
        transition select(hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            CELL_UDP_PORT: parse_cell;
            default: accept;
        }
    }

    state parse_cell {
        packet.extract(hdr.cell);
        transition select(hdr.cell.flags & CELL_FLAG_INT) {
            CELL_FLAG_INT: parse_int_shim;
            default: accept;
        }
    }

    /* INT: the shim, then hop_count records. A count above INT_MAX_HOPS is
     * not extracted (ingress drops the cell as bad). */
    state parse_int_shim {
        packet.extract(hdr.int_shim);
        meta.int_hops_left = hdr.int_shim.hop_count;
        transition select(hdr.int_shim.hop_count) {
            0: accept;
            1: parse_int_hop;
            2: parse_int_hop;
            3: parse_int_hop;
            4: parse_int_hop;
            5: parse_int_hop;
            6: parse_int_hop;
            7: parse_int_hop;
            8: parse_int_hop;
            default: accept;
        }
    }

    state parse_int_hop {
        packet.extract(hdr.int_hops.next);
        meta.int_hops_left = meta.int_hops_left - 1;
        transition select(meta.int_hops_left) {
            0: accept;
            default: parse_int_hop;
        }
    }
}

#endif
