/* ingress.p4: tenant isolation, L3 forwarding, load balancing, cell checks,
 * credit limiting.
 *
 * Order of the checks (the first that fails drops the packet and counts
 * its reason in `drops`): IPv4 present and well formed, header checksum,
 * tenants (when on: port bound, source MAC, source IPv4, destination's
 * tenant), route, TTL, cell length, next-hop group and member, credit rate,
 * tenant rate (a host port's packet at the data priority, when its tenant
 * is metered).
 * Drops are decided in one place per reason and counted once, at the end. */
#ifndef FABRIC_INGRESS_P4
#define FABRIC_INGRESS_P4

control FabricIngress(inout headers_t hdr,
                      inout fabric_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

    /* Packets and bytes received per ingress port. The controller only
     * reads it (port utilisation, the telemetry collector's rx). */
    counter(PORTS, CounterType.packets_and_bytes) rx_port;

    /* Packets dropped in ingress, indexed by DROP_* reason (defines.p4).
     * The controller only reads it; the telemetry collector adds it to
     * FabricEgress.drops per reason. */
    counter(DROP_REASONS, CounterType.packets) drops;

    /* Round robin state: the member the next cell of each group takes,
     * indexed by group id. The controller writes nothing while it runs;
     * it may write 0s when it changes a group's members (stale values
     * >= the group size are treated as 0 anyway). */
    register<bit<8>>(GROUPS) rr_next;

    /* Credit rate limit per egress port (packets meter, indexed by the
     * egress port). The controller sets, per port, CIR = PIR = the credit
     * rate in credits/s (link rate x credit frame / (credit frame + data
     * frame), ExpressPass) and CBS = PBS = 2 credits (the bucket depth).
     * Credits it colours YELLOW or RED exceed the rate and are dropped, so
     * the data they would trigger can never overload that link. An
     * unconfigured port meters everything GREEN (no limit). */
    meter(PORTS, MeterType.packets) credit_meter;

    action drop_packet(bit<8> reason) {
        meta.drop_reason = reason;
        mark_to_drop(standard_metadata);
    }

    action drop_no_route() {
        drop_packet(DROP_NO_ROUTE);
    }

    /* ---- tenants (p4src/README.md, "Tenants") ---------------------------- */

    /* Per tenant id: packets and bytes a ToR admitted from its host ports
     * (tenant_packets) and packets of it the tenant checks dropped
     * (tenant_drops: spoofed sources, foreign destinations; index 0 holds
     * what unbound ports sent). The controller only reads them. */
    counter(TENANTS, CounterType.packets_and_bytes) tenant_packets;
    counter(TENANTS, CounterType.packets) tenant_drops;

    /* Performance isolation (p4src/README.md, "Tenants"): a bytes meter per
     * tenant id, executed on every packet a ToR admits from one of the
     * tenant's host ports at the data priority (all but credits, which have
     * their own meter, and CNPs), so it meters the tenant's aggregate
     * entering the fabric at this ToR: DATA cells, and the ACKs and NACKs
     * its receivers send back. With `fabric.tenant_isolation: meters` the
     * controller sets, per tenant, CIR = PIR = the tenant's share of the
     * ToR's uplink capacity in bytes/s; a packet coloured YELLOW or RED is
     * dropped (DROP_TENANT_RATE for DATA cells, DROP_TENANT_RATE_OTHER for
     * the rest) and counted in tenant_drops. An
     * unconfigured index meters everything GREEN: no limit, as without. */
    meter(TENANTS, MeterType.bytes) tenant_meter;

    /* Performance isolation by queues: the data-priority queue of a tenant. */
    action set_tenant_queue(bit<3> queue) {
        standard_metadata.priority = queue;
    }

    /* Carried tenant (IPv4 DSCP) -> the egress queue its data-priority
     * packets take, on every switch (fabric-tna's slicing maps slice and
     * traffic class to a queue id the same way). With
     * `fabric.tenant_isolation: queues` the controller writes one entry per
     * tenant, queues 0, 2, 3, ... (1 stays the credits' and CNPs'), and
     * gives those queues deficit round robin weights in the traffic manager,
     * so one tenant's backlog does not delay another's cells. A miss (no
     * entry: isolation off, or a packet of no tenant) keeps PRIORITY_DATA. */
    table tenant_queues {
        key = {
            hdr.ipv4.dscp: exact;
        }
        actions = {
            set_tenant_queue;
            NoAction;
        }
        default_action = NoAction();
        size = TENANTS;
    }

    action tenants_on() {
        meta.tenants_on = 1;
    }

    /* Keyless: NoAction (the initial default) = no tenant checks at all, a
     * switch forwards every host's packets as before; the controller sets
     * tenants_on() on every ToR of a scenario with a tenants: section. */
    table tenant_config {
        actions = {
            tenants_on;
            NoAction;
        }
        default_action = NoAction();
        size = 1;
    }

    /* A host port: its tenant, and the source MAC and IPv4 its host owns. */
    action bind_host(bit<6> tenant, bit<48> mac, bit<32> ipv4) {
        meta.host_port = 1;
        meta.tenant = tenant;
        meta.port_mac = mac;
        meta.port_ipv4 = ipv4;
    }

    /* A port to another switch: the packet's tenant is the one the source
     * ToR wrote in its DSCP field. */
    action fabric_port() {
        meta.tenant = hdr.ipv4.dscp;
    }

    action deny_unbound() {
        drop_packet(DROP_PORT_UNBOUND);
    }

    /* Ingress port -> what it is, when tenants are on: deny by default. The
     * controller writes bind_host for each host port of a host in a tenant
     * and fabric_port for each port to a switch; any other port's packets
     * (a host in no tenant) are dropped and counted (DROP_PORT_UNBOUND). */
    table tenant_ports {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            bind_host;
            fabric_port;
            deny_unbound;
        }
        default_action = deny_unbound();
        size = PORTS;
    }

    action set_dst_tenant(bit<6> tenant) {
        meta.dst_tenant = tenant;
    }

    /* Destination host address -> its tenant. The controller writes one
     * entry per host of a tenant; a miss leaves tenant 0, which no packet
     * has, so an address of no tenant is unreachable. */
    table tenant_hosts {
        key = {
            hdr.ipv4.dstAddr: exact;
        }
        actions = {
            set_dst_tenant;
            NoAction;
        }
        default_action = NoAction();
        size = ROUTES;
    }

    /* ---- fixed-length cells ------------------------------------------- */

    action set_cell_size(bit<16> data_udp_length) {
        meta.cell_udp_length = data_udp_length;
    }

    /* Keyless: its default action is the switch's cell size. The controller
     * sets the default action set_cell_size(8 + 24 + cell_size), the UDP
     * length of a conforming DATA cell, once per experiment (the cell size
     * is a per-fabric setting, p4src/README.md). NoAction, the initial
     * default, disables the length check. */
    table cell_config {
        actions = {
            set_cell_size;
            NoAction;
        }
        default_action = NoAction();
        size = 1;
    }

    /* ---- routing -------------------------------------------------------- */

    action route_to_group(bit<16> group_id) {
        meta.group_id = group_id;
    }

    /* Destination prefix -> next-hop group. The controller writes one entry
     * per destination (a host /32 or a ToR's /24) naming the group of
     * equal-cost next hops towards it. A miss is "no route". */
    table ipv4_routes {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            route_to_group;
            drop_no_route;
        }
        default_action = drop_no_route();
        size = ROUTES;
    }

    /* entropy_divisor = 2^entropy_shift * odd, entropy_inverse = odd^-1 mod
     * 2^16: the entropy digit of this group's tier is
     * (entropy / entropy_divisor) mod size (p4src/README.md, "Path choice"). */
    action set_group(bit<8> size, bit<2> cell_mode, bit<16> entropy_divisor,
                     bit<8> entropy_shift, bit<16> entropy_inverse) {
        meta.group_size = size;
        meta.cell_mode = cell_mode;
        meta.entropy_divisor = entropy_divisor;
        meta.entropy_shift = entropy_shift;
        meta.entropy_inverse = entropy_inverse;
    }

    /* Next-hop group -> its size, how cells choose a member (CELL_MODE_*:
     * 0 ECMP flow hash, 1 round robin, 2 entropy, 3 random) and, for the
     * entropy mode, which digit of the entropy value this group's tier
     * reads. The controller writes one entry per group it uses in routes;
     * the cell mode is the experiment's load-balancing scheme. Non-cell
     * traffic ignores cell_mode and always uses the flow hash, so TCP is
     * never reordered. */
    table groups {
        key = {
            meta.group_id: exact;
        }
        actions = {
            set_group;
            drop_no_route;
        }
        default_action = drop_no_route();
        size = GROUPS;
    }

    action set_next_hop(bit<9> port, bit<48> next_hop_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = next_hop_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* (group, member index) -> egress port and the neighbour's MAC on it.
     * The controller writes members 0..size-1 of every group, ordered by
     * the neighbour's index (so member i of every leaf's uplink group is
     * the same spine: see the entropy mode below). */
    table group_members {
        key = {
            meta.group_id: exact;
            meta.member: exact;
        }
        actions = {
            set_next_hop;
            drop_no_route;
        }
        default_action = drop_no_route();
        size = GROUP_MEMBERS;
    }

    /* ---- member choice ------------------------------------------------ */

    action set_hash_multiplier(bit<32> multiplier) {
        meta.hash_multiplier = multiplier;
    }

    /* Keyless: its default action is this switch's own ECMP hash seed, an
     * odd 32-bit multiplier the controller draws per switch from the
     * scenario's seed. Every switch hashing the same 5-tuple the same way
     * would repeat the ToR's choice at the next tier (hash polarisation:
     * half of a fat-tree's core idles); crc32 is linear, so a seed XORed or
     * prepended to the key would not help, a multiplication does. */
    table hash_config {
        actions = {
            set_hash_multiplier;
        }
        default_action = set_hash_multiplier(32w0x9E3779B1);
        size = 1;
    }

    /* 5-tuple flow hash: every packet of a flow takes the same member.
     * member = (high 16 bits of crc32(5-tuple) * multiplier) mod size. */
    action pick_by_flow_hash() {
        hash(meta.flow_hash, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               meta.l4_src, meta.l4_dst },
             64w0x100000000);
        meta.flow_hash = meta.flow_hash * meta.hash_multiplier;
        hash(meta.member, HashAlgorithm.identity, 8w0,
             { meta.flow_hash[31:16] }, meta.group_size);
    }

    /* member = (entropy / divisor) mod size: the digit of the entropy value
     * that belongs to this group's tier. A pure function of the entropy and
     * the group, so a DATA cell that carries its credit's entropy (mirrored
     * by the sender, p4src/README.md) retraces the credit's path in reverse
     * on every tier (ExpressPass needs data on its credit's path). The
     * division is exact: entropy - (entropy mod divisor) is a multiple of
     * the divisor, so shifting out its power of two and multiplying by the
     * inverse of its odd part mod 2^16 gives the quotient. */
    action pick_by_entropy() {
        hash(meta.entropy_low, HashAlgorithm.identity, 16w0,
             { hdr.cell.entropy }, meta.entropy_divisor);
        meta.entropy_quotient = ((hdr.cell.entropy - meta.entropy_low) >> meta.entropy_shift)
                                * meta.entropy_inverse;
        hash(meta.member, HashAlgorithm.identity, 8w0,
             { meta.entropy_quotient }, meta.group_size);
    }

    /* A uniformly random member per cell. random() draws 16 bits; the
     * member is that value mod size (bias below 0.4% for size <= 255). */
    action pick_at_random() {
        random(meta.rand16, 16w0, 16w0xFFFF);
        hash(meta.member, HashAlgorithm.identity, 8w0,
             { meta.rand16 }, meta.group_size);
    }

    /* The group's next member in turn: 0, 1, ..., size-1, 0, ... */
    action pick_round_robin() {
        rr_next.read(meta.member, (bit<32>)meta.group_id);
    }

    apply {
        rx_port.count((bit<32>)standard_metadata.ingress_port);

        if (!hdr.ipv4.isValid() || hdr.ipv4.ihl < 5) {
            drop_packet(DROP_NOT_IPV4);
        } else if (standard_metadata.checksum_error == 1) {
            drop_packet(DROP_BAD_IPV4_CSUM);
        } else {
            tenant_config.apply();
            if (meta.tenants_on == 1) {
                /* Deny by default; a host port's source must be its host's;
                 * the source ToR writes the tenant into DSCP, where the
                 * destination ToR reads it; the destination must be of the
                 * same tenant (checked at both ToRs). */
                tenant_ports.apply();
                if (meta.drop_reason == DROP_NONE && meta.host_port == 1) {
                    if (hdr.ethernet.srcAddr != meta.port_mac) {
                        drop_packet(DROP_SPOOFED_MAC);
                    } else if (hdr.ipv4.srcAddr != meta.port_ipv4) {
                        drop_packet(DROP_SPOOFED_IPV4);
                    } else {
                        hdr.ipv4.dscp = meta.tenant;
                    }
                }
                if (meta.drop_reason == DROP_NONE) {
                    tenant_hosts.apply();
                    if (meta.tenant == 0 || meta.dst_tenant != meta.tenant) {
                        drop_packet(DROP_FOREIGN_TENANT);
                    }
                }
                if (meta.drop_reason != DROP_NONE) {
                    tenant_drops.count((bit<32>)meta.tenant);
                } else if (meta.host_port == 1) {
                    tenant_packets.count((bit<32>)meta.tenant);
                }
            }
            if (meta.drop_reason == DROP_NONE) {
                ipv4_routes.apply();
            }
        }

        if (meta.drop_reason == DROP_NONE && hdr.ipv4.ttl <= 1) {
            drop_packet(DROP_TTL_EXPIRED);
        }

        if (meta.drop_reason == DROP_NONE) {
            if (hdr.tcp.isValid()) {
                meta.l4_src = hdr.tcp.srcPort;
                meta.l4_dst = hdr.tcp.dstPort;
            } else if (hdr.udp.isValid()) {
                meta.l4_src = hdr.udp.srcPort;
                meta.l4_dst = hdr.udp.dstPort;
            }
            if (hdr.udp.isValid() && hdr.udp.dstPort == CELL_UDP_PORT && !hdr.cell.isValid()) {
                /* On the cell port but too short for a cell header. */
                drop_packet(DROP_BAD_CELL);
            } else if (hdr.cell.isValid() && (hdr.cell.flags & CELL_FLAG_INT) != 0
                       && (!hdr.int_shim.isValid() || hdr.int_shim.hop_count > INT_MAX_HOPS)) {
                /* INT flag without a shim, or more hop records than a stack holds. */
                drop_packet(DROP_BAD_CELL);
            } else if (hdr.cell.isValid() && hdr.cell.type == CELL_TYPE_DATA) {
                cell_config.apply();
                if (meta.cell_udp_length != 0 && hdr.int_shim.isValid()) {
                    /* The INT shim and its records lengthen a conforming cell. */
                    meta.cell_udp_length = meta.cell_udp_length + (bit<16>)INT_SHIM_BYTES
                        + (bit<16>)hdr.int_shim.hop_count * (bit<16>)INT_HOP_BYTES;
                }
                if (meta.cell_udp_length != 0 && hdr.udp.length != meta.cell_udp_length) {
                    drop_packet(DROP_BAD_CELL);
                }
            }
        }

        if (meta.drop_reason == DROP_NONE) {
            hash_config.apply();
            groups.apply();
            if (meta.drop_reason == DROP_NONE && meta.group_size == 0) {
                drop_no_route();
            }
        }

        if (meta.drop_reason == DROP_NONE) {
            if (!hdr.cell.isValid() || meta.cell_mode == CELL_MODE_ECMP) {
                pick_by_flow_hash();
            } else if (meta.cell_mode == CELL_MODE_RR) {
                pick_round_robin();
                if (meta.member >= meta.group_size) {
                    meta.member = 0;
                }
                meta.rr_following = meta.member + 1;
                if (meta.rr_following >= meta.group_size) {
                    meta.rr_following = 0;
                }
                rr_next.write((bit<32>)meta.group_id, meta.rr_following);
            } else if (meta.cell_mode == CELL_MODE_ENTROPY) {
                pick_by_entropy();
            } else {
                pick_at_random();
            }
            group_members.apply();
        }

        if (meta.drop_reason == DROP_NONE) {
            if (hdr.cell.isValid() && hdr.cell.type == CELL_TYPE_CREDIT) {
                standard_metadata.priority = PRIORITY_CREDIT;
                credit_meter.execute_meter((bit<32>)standard_metadata.egress_spec,
                                           meta.credit_color);
                if (meta.credit_color != METER_GREEN) {
                    drop_packet(DROP_CREDIT_RATE);
                }
            } else if (hdr.cell.isValid() && hdr.cell.type == CELL_TYPE_CNP) {
                standard_metadata.priority = PRIORITY_CNP;
            } else {
                standard_metadata.priority = PRIORITY_DATA;
                tenant_queues.apply();
                if (meta.host_port == 1) {
                    tenant_meter.execute_meter((bit<32>)meta.tenant, meta.tenant_color);
                    if (meta.tenant_color != METER_GREEN) {
                        /* DATA cells apart, so the simulator's DATA conservation counts them */
                        if (hdr.cell.isValid() && hdr.cell.type == CELL_TYPE_DATA) {
                            drop_packet(DROP_TENANT_RATE);
                        } else {
                            drop_packet(DROP_TENANT_RATE_OTHER);
                        }
                        tenant_drops.count((bit<32>)meta.tenant);
                    }
                }
            }
        }

        if (meta.drop_reason != DROP_NONE) {
            drops.count((bit<32>)meta.drop_reason);
        }
    }
}

#endif
