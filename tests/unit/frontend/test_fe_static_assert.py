"""core.p4's static_assert is evaluated while loading, as in p4c: true can
initialise a constant; false stops loading with its message."""

import pytest

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import load_source

TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
const bool ok = static_assert(V1MODEL_VERSION >= 20160101, "needs a newer v1model");
const bool checked = CHECK;
struct H { }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { static_assert(ok); } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""


def test_true_static_assert_is_a_constant():
    load_source(TEMPLATE.replace("CHECK", "static_assert(1 < 2)"), "sa.p4")


def test_false_static_assert_stops_loading_with_its_message():
    with pytest.raises(P4Error) as info:
        load_source(TEMPLATE.replace("CHECK", 'static_assert(1 > 2, "one is small")'), "sa.p4")
    assert str(info.value) == "sa.p4:5:22: static assertion failed: one is small"
