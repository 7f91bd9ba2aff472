"""Implicit conversions exactly as p4c's type checker allows them.

p4c facts (frontends/p4/typeChecking/typeUnification.cpp, and its error
"Cannot cast implicitly type 'bit<32>' to type 'bit<64>'"):
* no implicit cast between different widths, in either direction: the
  samples that once relied on it (arith-bmv2 and friends) now cast;
* a serializable enum converts to and from its underlying bit<W> where a
  value is assigned (assignment, initialiser, `in` argument);
* a block bound to a package parameter must repeat each parameter's
  direction (`in` for v1model's `inout H hdr` of VerifyChecksum is an error).
Execution of the accepted forms: tests/p4programs/fe_implicit_casts.*"""

from __future__ import annotations

import pytest

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir, load_source

from fe_util import BLOCKS, PRELUDE, apply_stmts

SE = "enum bit<8> SE { A = 1, B = 2 }\n"


@pytest.mark.parametrize("body, expected, got", [
    ("meta.z = hdr.h.a + hdr.h.a;", "bit<32>", "bit<8>"),      # widening
    ("bit<64> w = hdr.h.d;", "bit<64>", "bit<32>"),
    ("meta.x = hdr.h.c;", "bit<8>", "bit<16>"),                # narrowing
    ("meta.s = hdr.h.a;", "int<8>", "bit<8>"),                 # signedness
    ("bit<16> w = SE.A;", "bit<16>", "SE"),                    # enum of another width
])
def test_no_implicit_cast_between_widths(body, expected, got):
    with pytest.raises(P4Error, match=rf"type mismatch: expected {expected}, got {got}"):
        apply_stmts(body, SE)


def test_serializable_enum_converts_both_ways_with_its_underlying_type():
    to_enum, from_enum, init = apply_stmts("SE e = meta.x; meta.x = SE.B; bit<8> v = e;", SE)
    assert isinstance(to_enum.init, ir.Cast) and to_enum.init.type.name == "SE"
    assert from_enum.rhs.type == ir.BitT(8)
    assert init.init.type == ir.BitT(8)


def test_explicit_widening_cast_keeps_the_narrow_computation():
    (st,) = apply_stmts("meta.z = (bit<32>)(hdr.h.a + hdr.h.a);")
    assert isinstance(st.rhs, ir.Cast) and st.rhs.operand.type == ir.BitT(8)


def test_verify_checksum_with_in_headers_is_rejected_like_p4c():
    text = PRELUDE + BLOCKS.replace("control VC(inout headers hdr", "control VC2(in headers hdr") \
        + BLOCKS.split("\n")[3].replace("CC(", "VC(") + "\n" \
        + "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }\n" \
        + "V1Switch(P(), VC2(), I(), E(), CC(), D()) main;\n"
    with pytest.raises(P4Error, match=r"snippet.p4:\d+:\d+: parameter 'hdr' of VC2 must be inout "
                                      r"as in VerifyChecksum, not in"):
        load_source(text, "snippet.p4")
