#include <core.p4>
#include <v1model.p4>
// IPv6 forwarding on 128-bit keys (LPM on the destination, ternary on the source), 128-bit
// arithmetic, shifts, slices and concatenation: the native back end's bit<W> for 64 < W <= 128
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip6_t { bit<4> v; bit<8> tc; bit<20> fl; bit<16> len; bit<8> nh; bit<8> hl; bit<128> sa; bit<128> da; }
struct H { eth_t eth; ip6_t ip6; }
struct M { bit<128> x; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  state start { p.extract(h.eth); transition select(h.eth.type) { 0x86dd: ip6; default: accept; } }
  state ip6 { p.extract(h.ip6); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  action fwd(bit<9> port) { sm.egress_spec = port; h.ip6.hl = h.ip6.hl - 1; }
  action rewrite(bit<9> port) { sm.egress_spec = port; h.ip6.sa = h.ip6.da ^ (h.ip6.sa << 8); }
  action drop() { mark_to_drop(sm); }
  table route { key = { h.ip6.da: lpm; } actions = { fwd; rewrite; drop; } default_action = drop(); }
  table acl { key = { h.ip6.sa: ternary; h.ip6.nh: exact; } actions = { drop; NoAction; } default_action = NoAction(); }
  apply {
    if (h.ip6.isValid()) {
      m.x = h.ip6.da + h.ip6.sa;
      route.apply();
      acl.apply();
      if (m.x[127:64] == h.ip6.da[63:0]) { h.ip6.fl = 1; }
      h.ip6.da = (h.ip6.da >> 4) | (bit<128>)(h.eth.src ++ h.eth.dst);
      h.eth.src = m.x[111:64];
    } else {
      sm.egress_spec = 1;
    }
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); p.emit(h.ip6); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
