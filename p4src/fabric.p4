/* fabric.p4: the fabric switch program (v1model).
 *
 * One program for every switch of every experiment: the controller makes a
 * switch a leaf, spine or core, and an experiment ECMP or cell spraying,
 * through table entries, meters and registers alone. The wire format and
 * the control-plane contract (every table, register, counter and meter,
 * and what the controller writes there) are in p4src/README.md.
 *
 *   parser.p4     Ethernet / IPv4 (+ options) / TCP | UDP / cell (+ INT shim, hops)
 *   checksums.p4  IPv4 header checksum verify + update
 *   ingress.p4    routing, load balancing, cell length, credit meter
 *   egress.p4     source MAC, ECN marking, queue-depth telemetry, in-band
 *                 telemetry (INT hop records in DATA cells)
 *   deparser.p4   headers back in order
 *
 * Plain P4-16 for p4c's bmv2 back end (p4c-bm2-ss) and the builtin target. */
#include <core.p4>
#include <v1model.p4>

#include "include/defines.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/checksums.p4"
#include "include/ingress.p4"
#include "include/egress.p4"
#include "include/deparser.p4"

V1Switch(
    FabricParser(),
    FabricVerifyChecksum(),
    FabricIngress(),
    FabricEgress(),
    FabricComputeChecksum(),
    FabricDeparser()
) main;
