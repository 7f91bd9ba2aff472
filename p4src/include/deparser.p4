/* deparser.p4: headers back in wire order; invalid ones (and unused
 * option words) are not emitted. Whatever the parser did not extract
 * (cell bodies, TCP payload) follows unchanged. */
#ifndef FABRIC_DEPARSER_P4
#define FABRIC_DEPARSER_P4

control FabricDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.cell);
        packet.emit(hdr.int_shim);
        packet.emit(hdr.int_hops);
    }
}

#endif
