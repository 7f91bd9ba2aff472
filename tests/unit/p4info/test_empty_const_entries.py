"""`const entries = { }` makes a const table in P4Info (p4c sets
is_const_table) without initial entries."""

from testbed.p4model.frontend import load_source
from testbed.p4model.p4info import generate

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    table none_yet { key = { h.h.k : exact; } actions = { a; } const entries = { } }
    table plain { key = { h.h.k : exact; } actions = { a; } }
    apply { none_yet.apply(); plain.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_empty_const_entries_is_a_const_table():
    tables = {t.preamble.name: t for t in generate(load_source(PROGRAM, "ce.p4")).tables}
    assert tables["I.none_yet"].is_const_table
    assert not tables["I.none_yet"].has_initial_entries
    assert not tables["I.plain"].is_const_table


ONE_TUPLE = PROGRAM.replace("const entries = { }", "const entries = { { 8w0x20 } : a(); }")


def test_one_key_entry_written_as_a_one_tuple():
    """`{ x } : a()` for a one-key table is the key x (p4c accepts it)."""
    program = load_source(ONE_TUPLE, "ce1.p4")
    table = next(d for d in program.block("ingress").type.decl.locals
                 if getattr(d, "name", "") == "none_yet")
    [entry] = table.entries
    assert [k.value for k in entry.keys] == [0x20]
