"""@pkginfo and @platform_property on `main`, written as plain key = value
lists, fill P4Info's pkg_info as p4c does."""

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
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
@pkginfo(name = "lab", version = "2")
@platform_property(multicast_group_table_size = 7)
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""


def test_pkginfo_and_platform_property():
    pkg = generate(load_source(PROGRAM, "pk.p4")).pkg_info
    assert (pkg.name, pkg.version, pkg.arch) == ("lab", "2", "v1model")
    assert pkg.platform_properties.multicast_group_table_size == 7
    assert list(pkg.annotations) == []
