"""An action parameter's @name is its P4Info name (p4c), and so the
name STF lines and P4Runtime clients use; a struct field's @name names
it in match-field names."""

from testbed.p4model.frontend import load_source
from testbed.p4model.p4info import generate

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
struct H { }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(@name("egress") bit<9> port, bit<8> plain) { sm.egress_spec = port; }
    table t { key = { sm.ingress_port : exact; } actions = { fwd; } }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_param_name_annotation_renames_it():
    [fwd] = [a for a in generate(load_source(PROGRAM, "pn.p4")).actions if a.preamble.name == "I.fwd"]
    assert [(p.id, p.name, list(p.annotations)) for p in fwd.params] == [(1, "egress", []), (2, "plain", [])]


KEY_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
struct inner_t { bit<8> x; }
struct H { }
struct M { @name("outer_name") inner_t local; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    table t { key = { m.local.x : exact; } actions = { a; } }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_key_name_uses_struct_field_name_annotation():
    [t] = generate(load_source(KEY_PROGRAM, "kn.p4")).tables
    assert [m.name for m in t.match_fields] == ["m.outer_name.x"]
