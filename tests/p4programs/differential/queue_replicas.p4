// Regression for the STF queue model: copies made by the traffic manager
// (multicast replicas, ingress-to-egress clones) are queued like any
// packet and take their own priority.  Byte 0 selects: 0 = multicast to
// group 1 at priority 1, 1 = unicast to port 1 plus a clone to session 5,
// both at priority 0.  Egress writes egress_rid and instance_type into
// bytes 2 and 3, so each copy says what it is.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> mode; bit<8> seq; bit<8> rid; bit<8> itype; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        if (h.h.mode == 0) {
            sm.mcast_grp = 1;
            sm.priority = 1;
        } else {
            sm.egress_spec = 1;
            sm.priority = 0;
            clone(CloneType.I2E, 32w5);
        }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        h.h.rid = (bit<8>)sm.egress_rid;
        h.h.itype = (bit<8>)sm.instance_type;
    }
}
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
