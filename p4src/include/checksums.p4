/* checksums.p4: the IPv4 header checksum, verified on arrival and
 * recomputed before departure (TTL and ECN change in the pipeline).
 *
 * The option words are part of the checksummed header. All ten stack
 * elements are listed: fields of invalid headers are skipped by the
 * checksum calculation (bmv2 and the builtin target alike), so the list
 * covers exactly the IHL * 4 bytes of the header whatever its length. */
#ifndef FABRIC_CHECKSUMS_P4
#define FABRIC_CHECKSUMS_P4

#define IPV4_CHECKSUM_FIELDS                                              \
    { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,       \
      hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,        \
      hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,              \
      hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,                                \
      hdr.ipv4_options[0].data, hdr.ipv4_options[1].data,                \
      hdr.ipv4_options[2].data, hdr.ipv4_options[3].data,                \
      hdr.ipv4_options[4].data, hdr.ipv4_options[5].data,                \
      hdr.ipv4_options[6].data, hdr.ipv4_options[7].data,                \
      hdr.ipv4_options[8].data, hdr.ipv4_options[9].data }

/* A mismatch sets standard_metadata.checksum_error; ingress drops and
 * counts the packet (DROP_BAD_IPV4_CSUM). */
control FabricVerifyChecksum(inout headers_t hdr, inout fabric_metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(), IPV4_CHECKSUM_FIELDS,
                        hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control FabricComputeChecksum(inout headers_t hdr, inout fabric_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(), IPV4_CHECKSUM_FIELDS,
                        hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

#endif
