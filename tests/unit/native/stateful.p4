#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct H { eth_t eth; }
struct M { bit<8> x; bit<32> r; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  register<bit<32>>(8) regs;
  counter(8, CounterType.packets_and_bytes) cnt;
  action fwd(bit<9> port, bit<32> add) { sm.egress_spec = port; regs.read(m.r, (bit<32>)h.eth.type[2:0]); m.r = m.r + add; regs.write((bit<32>)h.eth.type[2:0], m.r); }
  action drop() { mark_to_drop(sm); }
  table t { key = { h.eth.dst: ternary; h.eth.type: exact; } actions = { fwd; drop; } default_action = drop(); }
  apply {
    cnt.count((bit<32>)h.eth.type[3:0]);
    if (h.eth.type == 2) { sm.egress_spec = 3; h.eth.dst = 1; exit; }
    switch (t.apply().action_run) {
      fwd: { h.eth.src = (bit<48>)m.r; }
      default: { sm.egress_spec = 1; }
    }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
