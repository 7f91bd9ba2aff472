"""`transition select() { default: s; }` (no keys) is valid P4, accepted
by p4c: only the default case can match."""

from testbed.p4model.frontend import load_source
from testbed.p4model.pipeline import Pipeline

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> v; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition select() { default: take; } }
    state take { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 3; h.h.v = h.h.v + 1; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_select_without_keys_takes_default():
    pipeline = Pipeline(load_source(PROGRAM, "es.p4"))
    assert pipeline.process(0, b"\x41\x99") == [(3, b"\x42\x99")]
