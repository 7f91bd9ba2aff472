// Multicast, I2E and E2E clones (field lists by index and by data), resubmit and recirculate,
// chosen per packet by the bits of tag.op; egress writes what each copy sees into the packet.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> op; bit<8> n; bit<16> grp; bit<8> a; bit<8> b; bit<8> c; bit<8> it; bit<16> rid; bit<16> port; }
struct H { eth_t eth; tag_t tag; }
struct inner_t { @field_list(1) bit<8> c; }
struct M { @field_list(0) bit<8> a; @field_list(0, 1) bit<8> b; inner_t inner; bit<8> loops; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition select(h.eth.type) { 0x88b5: tag; default: accept; } }
  state tag { p.extract(h.tag); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    m.loops = m.loops + 1;
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
    if (!h.tag.isValid()) { return; }
    h.tag.it = h.tag.it + (bit<8>)sm.instance_type;
    h.tag.port = h.tag.port + (bit<16>)sm.ingress_port;
    m.a = m.a + h.tag.a; m.b = m.b + 1; m.inner.c = m.inner.c + h.tag.c;
    // copies of copies stay few: only a first or resubmitted pass multicasts, only a first pass,
    // a replica or a recirculated packet recirculates, clones are not cloned again
    if (h.tag.op[0:0] == 1 && (sm.instance_type == 0 || sm.instance_type == 6)) { sm.mcast_grp = h.tag.grp; }
    if (h.tag.op[1:1] == 1) { clone_preserving_field_list(CloneType.I2E, (bit<32>)h.tag.n[2:0], 0); }
    if (h.tag.op[2:2] == 1) { clone3(CloneType.I2E, (bit<32>)h.tag.n[2:0] + 1, { m.inner.c, sm.ingress_port }); }
    if (h.tag.op[3:3] == 1 && m.b < (bit<8>)h.tag.n[7:4]) {
      if (h.tag.op[7:7] == 1) { resubmit({ m.a, m.b }); } else { resubmit_preserving_field_list(1); }
    }
    if (h.eth.dst[7:4] == 0xf) { mark_to_drop(sm); }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    if (!h.tag.isValid()) { return; }
    h.tag.a = m.a; h.tag.b = m.b; h.tag.c = m.inner.c + m.loops;
    h.tag.it = h.tag.it ^ ((bit<8>)sm.instance_type << 4);
    h.tag.rid = h.tag.rid + sm.egress_rid;
    h.tag.port = h.tag.port ^ ((bit<16>)sm.egress_port << 8);
    if (h.tag.op[4:4] == 1 && sm.instance_type != 1 && sm.instance_type != 2) {
      clone_preserving_field_list(CloneType.E2E, (bit<32>)h.tag.n[2:0], 1);
    }
    if (h.tag.op[5:5] == 1 && sm.instance_type != 1 && sm.instance_type != 2 && m.b < (bit<8>)h.tag.n[7:4]) {
      if (h.tag.op[7:7] == 1) { recirculate({ m.b }); } else { recirculate_preserving_field_list(0); }
    }
    if (h.tag.op[6:6] == 1) { mark_to_drop(sm); }
  }
}
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); p.emit(h.tag); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
