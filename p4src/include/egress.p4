/* egress.p4: source MAC, queue telemetry, ECN marking, in-band telemetry,
 * transmit counters.
 *
 * ECN marking looks at enq_qdepth, the packets already in this packet's
 * egress queue when it was enqueued:
 *   step (DCTCP):  mark iff q >= K;
 *   RED (DCQCN):   q < Kmin: never; q >= Kmax: always; in between with
 *                  probability Pmax/65536 * (q - Kmin) / (Kmax - Kmin).
 * Only ECT(0)/ECT(1) packets are marked (set to CE) and counted; Not-ECT
 * and CE packets pass unchanged. */
#ifndef FABRIC_EGRESS_P4
#define FABRIC_EGRESS_P4

control FabricEgress(inout headers_t hdr,
                     inout fabric_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {

    /* Packets and bytes sent per egress port. The controller only reads it
     * (port utilisation, the telemetry collector's tx). */
    counter(PORTS, CounterType.packets_and_bytes) tx_port;

    /* Packets dropped in egress, indexed by DROP_* reason; the only egress
     * reason is DROP_PORT_UNCONFIGURED. The controller only reads it. Queue
     * overflow drops happen in the traffic manager, which the program cannot
     * see: read them from the traffic manager's statistics. */
    counter(DROP_REASONS, CounterType.packets) drops;

    /* CE marks set per egress port. The controller only reads it. */
    counter(PORTS, CounterType.packets) ecn_marks;

    /* Largest enq_qdepth (packets) seen per egress port. The controller
     * reads it and writes 0 to start a new measurement interval. */
    register<bit<19>>(PORTS) max_qdepth;

    action set_source_mac(bit<48> mac) {
        hdr.ethernet.srcAddr = mac;
    }

    action drop_port_unconfigured() {
        meta.drop_reason = DROP_PORT_UNCONFIGURED;
        mark_to_drop(standard_metadata);
    }

    /* Egress port -> the switch's own MAC on that port (the source MAC of
     * every routed packet). The controller writes one entry per port it
     * uses; a packet routed to a port without one is dropped and counted,
     * rather than sent with the previous hop's source MAC. */
    table port_macs {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_source_mac;
            drop_port_unconfigured;
        }
        default_action = drop_port_unconfigured();
        size = PORTS;
    }

    action mark_step(bit<19> k) {
        meta.ecn_mode = ECN_MODE_STEP;
        meta.ecn_kmin = k;
    }

    action mark_red(bit<19> kmin, bit<19> kmax, bit<16> pmax) {
        meta.ecn_mode = ECN_MODE_RED;
        meta.ecn_kmin = kmin;
        meta.ecn_kmax = kmax;
        meta.ecn_pmax = pmax;
    }

    /* Egress port -> ECN marking scheme and thresholds (in packets of the
     * queue). The controller writes, per port, mark_step(K) for DCTCP-style
     * experiments or mark_red(Kmin, Kmax, Pmax in 1/65536) for DCQCN-style
     * ones; no entry (NoAction) means no marking on that port. */
    table ecn_config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            mark_step;
            mark_red;
            NoAction;
        }
        default_action = NoAction();
        size = PORTS;
    }

    action int_enable(bit<16> switch_id, bit<8> max_hops, bit<32> sample_mask) {
        meta.int_enabled = 1;
        meta.int_switch_id = switch_id;
        meta.int_max_hops = max_hops;
        meta.int_sample_mask = sample_mask;
    }

    /* In-band telemetry (keyless). NoAction (the default): this switch adds
     * nothing and forwards INT cells unchanged. int_enable: the switch's id,
     * the records a shim it starts allows, and which cells it starts one in
     * (psn & sample_mask == 0; 0 = every DATA cell). */
    table int_config {
        key = {}
        actions = {
            int_enable;
            NoAction;
        }
        default_action = NoAction();
    }

    /* INT on a forwarded DATA cell: the first INT switch on its path starts
     * a shim in sampled cells; every INT switch then pushes its hop record
     * (newest first) while the shim has room, else counts itself in the
     * overflow field. IPv4 and UDP lengths follow; the UDP checksum is
     * cleared (0 = none, allowed over IPv4) because the payload changed. */
    action int_start() {
        hdr.int_shim.setValid();
        hdr.int_shim.hop_count = 0;
        hdr.int_shim.max_hops = meta.int_max_hops;
        hdr.int_shim.overflow = 0;
        hdr.int_shim.hop_len = INT_HOP_BYTES;
        hdr.cell.flags = hdr.cell.flags | CELL_FLAG_INT;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen + (bit<16>)INT_SHIM_BYTES;
        hdr.udp.length = hdr.udp.length + (bit<16>)INT_SHIM_BYTES;
    }

    action int_push_hop() {
        hdr.int_hops.push_front(1);
        hdr.int_hops[0].setValid();
        hdr.int_hops[0].switch_id = meta.int_switch_id;
        hdr.int_hops[0].pad0 = 0;
        hdr.int_hops[0].egress_port = standard_metadata.egress_port;
        hdr.int_hops[0].pad1 = 0;
        hdr.int_hops[0].enq_qdepth = standard_metadata.enq_qdepth;
        hdr.int_hops[0].hop_latency = standard_metadata.deq_timedelta;
        hdr.int_shim.hop_count = hdr.int_shim.hop_count + 1;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen + (bit<16>)INT_HOP_BYTES;
        hdr.udp.length = hdr.udp.length + (bit<16>)INT_HOP_BYTES;
    }

    apply {
        /* The queue depth was observed whatever happens to the packet now. */
        max_qdepth.read(meta.max_qdepth, (bit<32>)standard_metadata.egress_port);
        if (standard_metadata.enq_qdepth > meta.max_qdepth) {
            max_qdepth.write((bit<32>)standard_metadata.egress_port,
                             standard_metadata.enq_qdepth);
        }

        port_macs.apply();

        if (meta.drop_reason == DROP_NONE) {
            if (hdr.ipv4.isValid() &&
                (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
                ecn_config.apply();
                if (meta.ecn_mode == ECN_MODE_STEP) {
                    if (standard_metadata.enq_qdepth >= meta.ecn_kmin) {
                        meta.ecn_mark = 1;
                    }
                } else if (meta.ecn_mode == ECN_MODE_RED) {
                    if (standard_metadata.enq_qdepth >= meta.ecn_kmax) {
                        meta.ecn_mark = 1;
                    } else if (standard_metadata.enq_qdepth >= meta.ecn_kmin) {
                        /* P(r < x/65536 of the range) without a division:
                         * mark iff r * (Kmax - Kmin) < Pmax * (q - Kmin). */
                        random(meta.ecn_rand, 16w0, 16w0xFFFF);
                        if ((bit<64>)meta.ecn_rand * (bit<64>)(meta.ecn_kmax - meta.ecn_kmin)
                            < (bit<64>)meta.ecn_pmax
                              * (bit<64>)(standard_metadata.enq_qdepth - meta.ecn_kmin)) {
                            meta.ecn_mark = 1;
                        }
                    }
                }
                if (meta.ecn_mark == 1) {
                    hdr.ipv4.ecn = ECN_CE;
                    ecn_marks.count((bit<32>)standard_metadata.egress_port);
                }
            }
            if (hdr.cell.isValid() && hdr.cell.type == CELL_TYPE_DATA) {
                int_config.apply();
                if (meta.int_enabled == 1) {
                    if (!hdr.int_shim.isValid()
                        && (hdr.cell.psn & meta.int_sample_mask) == 0) {
                        int_start();
                    }
                    if (hdr.int_shim.isValid()) {
                        if (hdr.int_shim.hop_count < hdr.int_shim.max_hops
                            && hdr.int_shim.hop_count < INT_MAX_HOPS) {
                            int_push_hop();
                        } else if (hdr.int_shim.overflow != 255) {
                            hdr.int_shim.overflow = hdr.int_shim.overflow + 1;
                        }
                        hdr.udp.checksum = 0;
                    }
                }
            }
            tx_port.count((bit<32>)standard_metadata.egress_port);
        } else {
            drops.count((bit<32>)meta.drop_reason);
        }
    }
}

#endif
