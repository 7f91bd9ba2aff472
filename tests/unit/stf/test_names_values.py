"""Name resolution and number spellings, as the reference harness has them."""

import pytest

from testbed.p4model.stf import names, values


def test_exact_then_unique_suffix():
    tables = ["MyIngress.ipv4_lpm", "MyIngress.acl", "MyEgress.acl2"]
    assert names.resolve("MyIngress.acl", tables, "table") == "MyIngress.acl"
    assert names.resolve("ipv4_lpm", tables, "table") == "MyIngress.ipv4_lpm"
    assert names.resolve("lpm", tables, "table") == "MyIngress.ipv4_lpm"     # plain suffix, as bmv2stf.py


def test_ambiguous_and_unknown_names():
    with pytest.raises(names.NameError_, match="ambiguous between MyEgress.t, MyIngress.t"):
        names.resolve("t", ["MyIngress.t", "MyEgress.t"], "table")
    with pytest.raises(names.NameError_, match="no table named 'zz'"):
        names.resolve("zz", ["MyIngress.t"], "table")


def test_dotted_suffix_for_cli_objects():
    regs = ["MyIngress.reg", "MyIngress.myreg"]
    assert names.resolve("reg", regs, "register", dotted=True) == "MyIngress.reg"


def test_key_field_spellings():
    keys = ["hdr.ipv4.dstAddr", "hdr.h[0].f", "hdr.h.isValid()"]
    assert names.resolve_key("dstAddr", keys, "t") == "hdr.ipv4.dstAddr"
    assert names.resolve_key("hdr.h$0.f", keys, "t") == "hdr.h[0].f"
    assert names.resolve_key("hdr.h.$valid$", keys, "t") == "hdr.h.isValid()"
    with pytest.raises(names.NameError_, match="no key field"):
        names.resolve_key("srcAddr", keys, "t")
    # P4Info names a validity key `h.$valid$` (p4c): every spelling finds it
    p4c_keys = ["hdr.h.$valid$", "hdr.g.f"]
    for spelling in ("hdr.h.$valid$", "hdr.h.isValid()", "hdr.h.valid", "h.$valid$", "h.isValid()"):
        assert names.resolve_key(spelling, p4c_keys, "t") == "hdr.h.$valid$"
    with pytest.raises(names.NameError_, match="ambiguous"):
        names.resolve_key("f", ["a.f", "b.f"], "t")


def test_numbers():
    assert values.number("10") == 10 and values.number("0x1F") == 31 and values.number("0b101") == 5
    assert values.number("10.0.0.1") == 0x0A000001
    assert values.number("00:00:00:00:00:02") == 2
    with pytest.raises(values.ValueError_):
        values.number("zz")


def test_ternary_star_digits_make_the_mask():
    assert values.ternary("0x0A**", 16) == (0x0A00, 0xFF00)
    assert values.ternary("0x0800", 32) == (0x0800, 0xFFFF)      # digits written, not field width
    assert values.ternary("0b1*0", 3) == (0b100, 0b101)
    assert values.ternary("0x1&&&0xF", 8) == (1, 0xF)
    assert values.ternary("0x1FF", 9) == (0x1FF, 0x1FF)            # mask cut to the field
    with pytest.raises(values.ValueError_, match="decimal"):
        values.ternary("12", 8)


def test_lpm_lengths():
    assert values.lpm("0x0A000000/8", 32) == (0x0A000000, 8)
    assert values.lpm("0x0A01****", 32) == (0x0A010000, 16)       # digits written, stars excluded
    assert values.lpm("0x0A0102FF/24", 32) == (0x0A010200, 24)    # host bits cleared
    with pytest.raises(values.ValueError_):
        values.lpm("0x0A/40", 32)


def test_ranges():
    assert values.value_range("10->20") == (10, 20)
    assert values.value_range("7") == (7, 7)
