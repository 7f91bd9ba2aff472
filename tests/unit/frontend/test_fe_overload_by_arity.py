"""A call inside an action named like an extern function resolves by
argument count, as in p4c: `action hash() { hash(...5 args...); }` calls
the extern."""

from testbed.p4model.frontend import ir, load_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
struct H { }
struct M { bit<16> x; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action hash() { hash(m.x, HashAlgorithm.crc16, 16w0, { sm.ingress_port }, 16w7); }
    apply { hash(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_action_named_like_an_extern_calls_the_extern():
    program = load_source(PROGRAM, "ar.p4")
    action = next(d for d in program.block("ingress").type.decl.locals if isinstance(d, ir.ActionDecl))
    [stmt] = action.body.stmts
    assert isinstance(stmt.call, ir.ExternFunctionCall) and stmt.call.decl.name == "hash"
