"""bmv2 hash algorithms: check values, packing, reduction rules."""

import struct
import zlib

import pytest
from hypothesis import given, strategies as st

from testbed.p4model.runtime import hashing
from testbed.p4model.runtime.hashing import (
    CrcParams, CustomCrc, compute, hash_result, make_hasher, pack_fields,
)

CHECK = b"123456789"


def crc_bitwise(params: CrcParams, data: bytes) -> int:
    """Bit-at-a-time reference CRC (bmv2's MSB-first formulation)."""
    w = params.width
    top, mask = 1 << (w - 1), (1 << w) - 1
    crc = params.init
    for byte in data:
        if params.reflect_in:
            byte = int(f"{byte:08b}"[::-1], 2)
        crc ^= byte << (w - 8)
        for _ in range(8):
            crc = ((crc << 1) ^ params.poly) & mask if crc & top else (crc << 1) & mask
    if params.reflect_out:
        crc = int(f"{crc:0{w}b}"[::-1], 2)
    return crc ^ params.xor_out


def test_check_values():
    assert compute("crc16", CHECK) == 0xBB3D          # CRC-16/ARC
    assert compute("crc32", CHECK) == 0xCBF43926      # CRC-32 (zlib)
    assert compute("crc16_custom", CHECK) == 0xBB3D   # bmv2 default = crc16
    assert compute("crc32_custom", CHECK) == 0xCBF43926


def test_crc16_is_not_ccitt():
    import binascii
    assert compute("crc16", CHECK) != binascii.crc_hqx(CHECK, 0)


@pytest.mark.parametrize("params,check", [
    ((16, 0x1021, 0xFFFF, 0x0000, False, False), 0x29B1),   # CRC-16/CCITT-FALSE
    ((16, 0x1021, 0x0000, 0x0000, True, True), 0x2189),     # CRC-16/KERMIT
    ((16, 0x8005, 0x0000, 0x0000, False, False), 0xFEE8),   # CRC-16/BUYPASS
    ((32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, False, False), 0xFC891918),  # BZIP2
    ((32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True), 0xE3069283),    # CRC-32C
    ((32, 0x04C11DB7, 0xFFFFFFFF, 0x00000000, False, False), 0x0376E6E7),  # MPEG-2
])
def test_custom_crc_catalogue(params, check):
    crc = CustomCrc(params[0])
    crc.configure(*params[1:])
    assert crc(CHECK) == check
    crc.reset()
    assert crc(CHECK) == (0xBB3D if params[0] == 16 else 0xCBF43926)


@given(st.binary(max_size=40), st.integers(0, 0xFFFF), st.integers(0, 0xFFFF),
       st.integers(0, 0xFFFF), st.booleans(), st.booleans())
def test_custom_crc16_matches_bitwise_reference(data, poly, init, xor_out, rin, rout):
    params = CrcParams(16, poly, init, xor_out, rin, rout)
    crc = CustomCrc(16)
    crc.configure(poly, init, xor_out, rin, rout)
    assert crc(data) == crc_bitwise(params, data)


@given(st.binary(max_size=40))
def test_default_crcs_match_reference(data):
    assert compute("crc16", data) == crc_bitwise(hashing.CRC16_DEFAULT, data)
    assert compute("crc32", data) == zlib.crc32(data) == crc_bitwise(hashing.CRC32_DEFAULT, data)


def test_custom_instances_are_independent():
    a, b = make_hasher("crc16_custom"), make_hasher("crc16_custom")
    a.configure(0x1021, 0xFFFF, 0, False, False)
    assert a(CHECK) == 0x29B1 and b(CHECK) == 0xBB3D


def test_crc_params_validated():
    with pytest.raises(ValueError):
        CrcParams(16, 0x10000, 0, 0, True, True)


def test_csum16_real_ipv4_header():
    # 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert compute("csum16", header) == 0xB861
    filled = header[:10] + struct.pack(">H", 0xB861) + header[12:]
    assert compute("csum16", filled) == 0   # a correct header sums to 0xffff


def test_csum16_odd_length_pads_at_end():
    assert compute("csum16", b"\x01") == (~0x0100) & 0xFFFF
    assert compute("csum16", b"") == 0xFFFF


def test_xor16():
    assert compute("xor16", bytes.fromhex("1234abcd")) == 0x1234 ^ 0xABCD
    assert compute("xor16", bytes.fromhex("1234ab")) == 0x1234 ^ 0xAB00
    assert compute("xor16", b"") == 0


def test_identity_first_eight_bytes_unpadded():
    assert compute("identity", b"\xab\xcd") == 0xABCD
    data = bytes(range(1, 11))
    assert compute("identity", data) == int.from_bytes(data[:8], "big")


def test_pack_fields_non_aligned():
    assert pack_fields([(0x1FF, 9)]) == b"\xff\x80"          # 9-bit port, padded at end
    assert pack_fields([(1, 1), (0, 3), (0xF, 4), (0x3, 2)]) == bytes([0x8F, 0xC0])
    assert pack_fields([(0x0A000001, 32), (6, 8)]) == bytes.fromhex("0a00000106")
    assert pack_fields([(0x1FF, 4)]) == b"\xf0"               # masked to width
    assert pack_fields([]) == b""


@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(1, 40)), max_size=8))
def test_pack_fields_length_and_content(fields):
    data = pack_fields(fields)
    total = sum(w for _, w in fields)
    assert len(data) == (total + 7) // 8
    expected = 0
    for v, w in fields:
        expected = (expected << w) | (v & ((1 << w) - 1))
    assert int.from_bytes(data, "big") == expected << (-total % 8)


def test_hash_result_rules():
    h = compute("crc16", CHECK)
    assert hash_result("crc16", CHECK, 0, 0x10000) == h
    assert hash_result("crc16", CHECK, 10, 7) == 10 + h % 7
    assert hash_result("crc16", CHECK, 5, 0) == 5          # bmv2 treats max 0 as 1
    # 64-bit arithmetic as bmv2: (2^64-1) mod (2^64-2) = 1, + (2^64-1) wraps to 0
    assert hash_result("identity", b"\xff" * 8, 2**64 - 1, 2**64 - 2) == 0


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="unknown hash algorithm"):
        compute("random", b"")
    with pytest.raises(ValueError):
        make_hasher("md5")
