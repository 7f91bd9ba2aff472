// Sub-parsers: one applied from two states (a header stack by reference, an in scalar, an out
// and an inout scalar, a local; accept, reject, an unmatched select and verify errors), one nested
// inside it with an out header; the ingress writes what the parse found into the packet.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tlv_t { bit<8> kind; bit<8> len; bit<16> val; }
header tail_t { bit<8> a; bit<8> b; }
struct H { eth_t eth; tlv_t[4] tlv; tail_t tail; tail_t tail2; }
struct M { bit<8> seen; bit<8> last; bit<16> sum; }
error { BadKind }
parser Tail(packet_in p, out tail_t t, inout bit<16> sum) {
  state start { p.extract(t); sum = sum + (bit<16>)t.a; transition accept; }
}
parser Tlv(packet_in p, inout tlv_t[4] stack, in bit<8> limit, out bit<8> kind, inout bit<16> sum,
           inout tail_t tail) {
  Tail() tl;
  bit<8> count = 0;
  state start {
    p.extract(stack.next);
    count = count + 1;
    kind = stack.last.kind;
    sum = sum + stack.last.val;
    verify(stack.last.kind != 0xee, error.BadKind);
    transition select(stack.last.kind) {
      1: more;
      2: reject;
      3: tail;
      4: accept;
    }
  }
  state more { transition select(count < limit) { true: start; false: accept; } }
  state tail { tl.apply(p, tail, sum); transition accept; }
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
  Tlv() tlvs;
  state start {
    p.extract(h.eth);
    transition select(h.eth.type) { 0x88b7: one; 0x88b8: two; default: accept; }
  }
  state one { tlvs.apply(p, h.tlv, 2, m.last, m.sum, h.tail); m.seen = 1; transition accept; }
  state two {
    tlvs.apply(p, h.tlv, 1, m.last, m.sum, h.tail);
    m.seen = m.seen + 2;
    tlvs.apply(p, h.tlv, 3, m.last, m.sum, h.tail2);
    m.seen = m.seen + 4;
    transition select(m.last) { 9: reject; default: accept; }
  }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
  apply {
    sm.egress_spec = (bit<9>)h.eth.dst[3:0];
    bit<16> e = 0;
    if (sm.parser_error == error.BadKind) { e = 1; }
    else if (sm.parser_error == error.StackOutOfBounds) { e = 2; }
    else if (sm.parser_error == error.PacketTooShort) { e = 3; }
    else if (sm.parser_error != error.NoError) { e = 4; }
    h.eth.src = m.seen ++ m.last ++ m.sum ++ e;
  }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.eth); p.emit(h.tlv); p.emit(h.tail); p.emit(h.tail2); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
