"""@p4runtime_translation's SDN type may be written `32`, `bit<32>` or
`string`; p4c reads the first two as sdn_bitwidth 32."""

from testbed.p4model.frontend import load_source
from testbed.p4model.p4info import generate

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
@p4runtime_translation("lab/a", 32) type bit<9> A_t;
@p4runtime_translation("lab/b", bit<32>) type bit<9> B_t;
@p4runtime_translation("lab/c", string) type bit<9> C_t;
struct H { }
struct M { A_t a; B_t b; C_t c; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action x() { }
    table t { key = { m.a : exact; m.b : exact; m.c : exact; } actions = { x; } }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_translation_sdn_type_forms():
    info = generate(load_source(PROGRAM, "tr.p4"))
    [t] = info.tables
    assert [m.bitwidth for m in t.match_fields] == [32, 32, 0]
    new = info.type_info.new_types
    assert new["A_t"].translated_type.sdn_bitwidth == 32
    assert new["B_t"].translated_type.sdn_bitwidth == 32
    assert new["C_t"].translated_type.HasField("sdn_string")
