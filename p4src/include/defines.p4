/* defines.p4: constants shared by fabric.p4's includes.
 *
 * The values that also appear on the wire or in the control-plane contract
 * (cell port, cell types, drop reasons, cell modes) are defined in
 * p4src/README.md; change them there first. */
#ifndef FABRIC_DEFINES_P4
#define FABRIC_DEFINES_P4

/* ---- wire format (p4src/README.md, testbed/host/wire.py) ---------------- */
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<16> CELL_UDP_PORT  = 4793;

const bit<4> CELL_TYPE_DATA           = 0;
const bit<4> CELL_TYPE_CREDIT         = 1;
const bit<4> CELL_TYPE_CREDIT_REQUEST = 2;
const bit<4> CELL_TYPE_ACK            = 3;
const bit<4> CELL_TYPE_NACK           = 4;
const bit<4> CELL_TYPE_CNP            = 5;
const bit<4> CELL_TYPE_CREDIT_STOP    = 6;

/* Cell flags (byte 1 of the cell header). FLAG_INT: an INT shim and its hop
 * records follow the cell header (p4src/README.md, "In-band telemetry"). */
const bit<8> CELL_FLAG_INT = 0x08;

/* ---- in-band telemetry (INT) ------------------------------------------- */
/* Hop records a cell can carry (the header stack's size); a switch that
 * finds the stack full counts itself in the shim's overflow field instead. */
#define INT_MAX_HOPS 8
const bit<8> INT_SHIM_BYTES = 4;
const bit<8> INT_HOP_BYTES  = 12;

/* IPv4 ECN codepoints (RFC 3168), the low two bits of the TOS byte. */
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1    = 1;
const bit<2> ECN_ECT0    = 2;
const bit<2> ECN_CE      = 3;

/* ---- sizes of the control-plane objects ---------------------------------- */
/* Counters, registers and meters indexed by a 9-bit port number cover every
 * port number bmv2 can give (0..511), so no index is ever out of range. */
#define PORTS 512
/* Next-hop group ids 0..GROUPS-1 (the rr_next register is indexed by them). */
#define GROUPS 1024
#define ROUTES 4096
/* Largest next-hop group: members are numbered 0..size-1 (bit<8>). */
#define GROUP_MEMBERS 16384
#define DROP_REASONS 16
/* Tenant ids a ToR binds host ports to: 1..TENANTS-1, carried in the IPv4
 * DSCP field (6 bits); 0 is "no tenant" (p4src/README.md, "Tenants"). */
#define TENANTS 64

/* ---- drop reasons: the index into FabricIngress.drops / FabricEgress.drops */
const bit<8> DROP_NONE             = 0;
const bit<8> DROP_NO_ROUTE         = 1;  /* no route, no group or no member */
const bit<8> DROP_TTL_EXPIRED      = 2;  /* TTL 0 or 1 on arrival */
const bit<8> DROP_BAD_CELL         = 3;  /* DATA cell of the wrong length, truncated cell */
const bit<8> DROP_CREDIT_RATE      = 4;  /* credit over its port's rate (meter not GREEN) */
const bit<8> DROP_NOT_IPV4         = 5;  /* not IPv4, or IHL < 5 */
const bit<8> DROP_BAD_IPV4_CSUM    = 6;  /* IPv4 header checksum wrong */
const bit<8> DROP_PORT_UNCONFIGURED = 7; /* egress port has no port_macs entry (egress) */
/* tenants on (tenant_config): ingress of a ToR */
const bit<8> DROP_PORT_UNBOUND     = 8;  /* ingress port bound to no tenant and not a fabric port */
const bit<8> DROP_SPOOFED_MAC      = 9;  /* source MAC not the one the host port owns */
const bit<8> DROP_SPOOFED_IPV4     = 10; /* source IPv4 not the one the host port owns */
const bit<8> DROP_FOREIGN_TENANT   = 11; /* destination of another tenant, or of none */
const bit<8> DROP_TENANT_RATE      = 12; /* DATA cell over its tenant's rate (tenant_meter not GREEN) */
const bit<8> DROP_TENANT_RATE_OTHER = 13; /* any other packet over its tenant's rate (ACK, NACK, ...) */

/* ---- load balancing: FabricIngress.groups' cell_mode --------------------- */
const bit<2> CELL_MODE_ECMP    = 0;  /* 5-tuple flow hash, as non-cell traffic */
const bit<2> CELL_MODE_RR      = 1;  /* round robin per group (rr_next register) */
const bit<2> CELL_MODE_ENTROPY = 2;  /* member = cell entropy mod group size */
const bit<2> CELL_MODE_RANDOM  = 3;  /* uniformly random member per cell */

/* ---- ECN marking: what FabricEgress.ecn_config selected ------------------ */
const bit<2> ECN_MODE_OFF  = 0;
const bit<2> ECN_MODE_STEP = 1;
const bit<2> ECN_MODE_RED  = 2;

/* ---- queues and meters ---------------------------------------------------- */
const bit<3> PRIORITY_DATA   = 0;
const bit<3> PRIORITY_CREDIT = 1;   /* strict priority: credits jump data */
const bit<3> PRIORITY_CNP    = 1;   /* DCQCN's CNPs jump data, as RoCE NICs send them */
const bit<2> METER_GREEN = 0;

#endif
