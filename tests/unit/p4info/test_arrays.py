"""P4Info of programs with arrays of non-header types: an array field is
part of its header and, like in p4c's array1.p4/array2.p4, adds nothing to
P4Info; where P4Info needs a type spec of it (P4Runtime's type specs have
no array), the generator refuses in one located line."""

import re
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from testbed.p4model.errors import P4Unsupported
from testbed.p4model.p4info import generate_file

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


@pytest.mark.parametrize("program", ["fe_arrays.p4", "fe_arrays_wide.p4"])
def test_array_fields_add_nothing_to_p4info(program):
    expected = text_format.Parse('pkg_info { arch: "v1model" }', p4info_pb2.P4Info())
    assert generate_file(PROGRAMS / program) == expected


DIGEST = """\
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct digest_t {
    bit<8> a;
    bit<8>[2] pair;
}
struct metadata { digest_t d; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { digest<digest_t>(1, meta.d); }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_a_digest_with_an_array_field_is_refused_in_one_line(tmp_path):
    path = tmp_path / "digest_array.p4"
    path.write_text(DIGEST)
    with pytest.raises(P4Unsupported) as info:
        generate_file(path)
    text = str(info.value)
    assert "\n" not in text
    assert re.fullmatch(rf"{re.escape(str(path))}:7:\d+: unsupported: field 'pair' of digest_t has the array "
                        r"type bit<8>\[2\], .*", text), text
