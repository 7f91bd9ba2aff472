/* egress.p4: source MAC, queue telemetry, ECN marking, transmit counters.
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
            tx_port.count((bit<32>)standard_metadata.egress_port);
        } else {
            drops.count((bit<32>)meta.drop_reason);
        }
    }
}

#endif
