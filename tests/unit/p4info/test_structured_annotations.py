"""Structured annotations `@a[...]` become P4Info structured_annotations
(constant expressions evaluated, as p4c does), not annotation strings."""

from testbed.p4model.frontend import load_source
from testbed.p4model.p4info import generate

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
#define LIMIT 4
struct H { }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    @Exprs[2, "two", false, 3 == 3, 1 + LIMIT * 2]
    @Pairs[owner="lab", strict=true, depth=LIMIT - 1]
    table t {
        key = { }
        actions = { @tag[7] a; }
    }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def expression_value(e):
    return getattr(e, e.WhichOneof("value"))


def test_structured_annotations_are_evaluated_messages():
    [t] = generate(load_source(PROGRAM, "sa.p4")).tables
    exprs, pairs = t.preamble.structured_annotations
    assert list(t.preamble.annotations) == []
    assert exprs.name == "Exprs"
    assert [expression_value(e) for e in exprs.expression_list.expressions] == [2, "two", False, True, 9]
    assert pairs.name == "Pairs"
    assert [(kv.key, expression_value(kv.value)) for kv in pairs.kv_pair_list.kv_pairs] == [
        ("owner", "lab"), ("strict", True), ("depth", 3)]
    [tag] = t.action_refs[0].structured_annotations
    assert (tag.name, [expression_value(e) for e in tag.expression_list.expressions]) == ("tag", [7])
