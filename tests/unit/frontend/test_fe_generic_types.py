"""Generic headers and structs (`header pair_t<T> { T a; }`): each distinct
type-argument list is one specialised type, named as p4c names it
(`pair_t_bit8`); wrong uses are one line.  Execution is covered by
tests/p4programs/fe_generic_types.{p4,stf}."""

from __future__ import annotations

import pytest

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir, load_source
from testbed.p4model.frontend.types import same_type

from fe_util import ingress

TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
header pair_t<T> { T first; T second; }
struct wrap_t<T> { pair_t<T> p; bool ok; }
struct H { pair_t<bit<8>> a; pair_t<bit<8>> b; pair_t<bit<16>> c; }
struct M { wrap_t<bit<4>> w; }
parser P(packet_in pkt, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.a); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { %s } }
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out pkt, in H h) { apply { pkt.emit(h.a); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def load(body: str = ""):
    return load_source(TEMPLATE % body, "generic.p4")


def test_one_type_per_argument_list_with_p4c_names():
    prog = load()
    hdr_t = ingress(prog).params[0].type
    a, b, c = (f.type for f in hdr_t.fields)
    assert a is b and not same_type(a, c)
    assert (a.name, c.name) == ("pair_t_bit8", "pair_t_bit16")
    assert isinstance(a, ir.HeaderT) and a.bit_width() == 16 and c.bit_width() == 32
    w = ingress(prog).params[1].type.fields[0].type
    assert isinstance(w, ir.StructT) and w.name == "wrap_t_bit4"
    assert w.fields[0].type.name == "pair_t_bit4" and w.fields[0].type.bit_width() == 8


def test_assignment_between_specialisations_is_a_type_error():
    with pytest.raises(P4Error, match="pair_t_bit16|pair_t_bit8"):
        load("h.a = h.c;")


def test_wrong_number_of_type_arguments_is_one_line():
    with pytest.raises(P4Error, match=r"pair_t takes 1 type arguments, got 2") as e:
        load_source((TEMPLATE % "").replace("pair_t<bit<16>> c;", "pair_t<bit<16>, bit<8>> c;"), "g.p4")
    assert "\n" not in str(e.value)


def test_a_generic_type_needs_its_arguments():
    with pytest.raises(P4Error, match=r"generic type pair_t needs type arguments"):
        load_source((TEMPLATE % "").replace("pair_t<bit<16>> c;", "pair_t c;"), "g.p4")


def test_a_generic_header_field_must_still_be_a_header_field_type():
    with pytest.raises(P4Error, match=r"header field 'first' cannot have type"):
        load_source((TEMPLATE % "").replace("pair_t<bit<16>> c;", "pair_t<error> c;"), "g.p4")
