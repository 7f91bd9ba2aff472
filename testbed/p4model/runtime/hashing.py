"""bmv2's hash algorithms, byte-exact, for v1model `hash()`, action
selectors and checksums.

Why each detail is the way it is (all checked against bmv2's
`calculations.cpp` and `simple_switch/primitives.cpp`):

* The input of a hash is the field list packed bit after bit, most
  significant bit first, with no alignment between fields; the total is
  padded with zero bits at the END up to a whole byte (bmv2 deparses the
  field list into a byte buffer that way).  So a lone 9-bit port value `p`
  is hashed as the two bytes `p << 7`.
* crc16 is CRC-16/ARC (poly 0x8005, reflected in and out, init 0, no final
  xor); crc32 is the CRC-32 of zlib.  crc16_custom / crc32_custom start
  with exactly those parameters and can be reconfigured per instance (as
  bmv2's `set_crc16_parameters` / `set_crc32_parameters` do).
* csum16 is the RFC 1071 internet checksum: the complement of the ones'-
  complement sum of big-endian 16-bit words, an odd byte padded with zero.
* xor16 XORs big-endian 16-bit words, an odd last byte padded with zero.
* identity is the first (at most) 8 bytes read as a big-endian integer;
  longer data is truncated to its first 8 bytes, shorter data is NOT
  padded (2 bytes 0xab 0xcd give 0xabcd).
* hash_result: bmv2 computes `(H mod max) + base` in 64 bits and a max of
  0 is treated as 1 (so the result is `base`); the caller wraps the result
  to the destination width, as bmv2's field assignment does.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Callable

ALGORITHMS = frozenset({
    "crc16", "crc32", "crc16_custom", "crc32_custom", "csum16", "xor16", "identity",
})

_U64 = (1 << 64) - 1


# --------------------------------------------------------------------------
# Input packing


def pack_fields(values) -> bytes:
    """Pack (value, width) pairs MSB-first into bytes, zero-padded at the
    end to a byte boundary.  Values are masked to their width."""
    acc = 0
    bits = 0
    for value, width in values:
        if width <= 0:
            continue
        acc = (acc << width) | (value & ((1 << width) - 1))
        bits += width
    pad = -bits % 8
    return (acc << pad).to_bytes((bits + pad) // 8, "big")


# --------------------------------------------------------------------------
# CRCs


def _reflect(value: int, width: int) -> int:
    result = 0
    for _ in range(width):
        result = (result << 1) | (value & 1)
        value >>= 1
    return result


_REFLECT8 = tuple(_reflect(b, 8) for b in range(256))


@dataclass(frozen=True)
class CrcParams:
    """A CRC's parameters in bmv2's terms (crc_config_t): the polynomial
    in normal (MSB-first) form without its top bit, the initial remainder,
    the final xor, and whether input bytes / the final remainder are
    bit-reflected."""

    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool

    def __post_init__(self) -> None:
        if self.width not in (8, 16, 32, 64):
            raise ValueError(f"unsupported CRC width {self.width}")
        limit = 1 << self.width
        for name in ("poly", "init", "xor_out"):
            value = getattr(self, name)
            if not 0 <= value < limit:
                raise ValueError(f"CRC {name} {value:#x} does not fit {self.width} bits")


CRC16_DEFAULT = CrcParams(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32_DEFAULT = CrcParams(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)


def _crc_function(params: CrcParams) -> Callable[[bytes], int]:
    """Build a table-driven CRC for `params` that gives exactly bmv2's
    crc_custom result.  The fully reflected case (the usual one) runs the
    LSB-first form with a reflected table; mixed reflection runs bmv2's
    MSB-first form with a byte-reflection table."""
    if params == CRC32_DEFAULT:
        return zlib.crc32
    width = params.width
    mask = (1 << width) - 1
    if params.reflect_in and params.reflect_out:
        rpoly = _reflect(params.poly, width)
        table = []
        for byte in range(256):
            crc = byte
            for _ in range(8):
                crc = (crc >> 1) ^ rpoly if crc & 1 else crc >> 1
            table.append(crc)
        table = tuple(table)
        init = _reflect(params.init, width)
        xor_out = params.xor_out

        def crc_reflected(data: bytes) -> int:
            crc = init
            for byte in data:
                crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
            return crc ^ xor_out

        return crc_reflected

    top = 1 << (width - 1)
    shift = width - 8
    table = []
    for byte in range(256):
        crc = byte << shift
        for _ in range(8):
            crc = ((crc << 1) ^ params.poly) & mask if crc & top else (crc << 1) & mask
        table.append(crc)
    table = tuple(table)
    byte_map = _REFLECT8 if params.reflect_in else tuple(range(256))
    reflect_out = params.reflect_out
    init = params.init
    xor_out = params.xor_out

    def crc_normal(data: bytes) -> int:
        crc = init
        for byte in data:
            crc = ((crc << 8) & mask) ^ table[(byte_map[byte] ^ (crc >> shift)) & 0xFF]
        if reflect_out:
            crc = _reflect(crc, width)
        return crc ^ xor_out

    return crc_normal


crc16 = _crc_function(CRC16_DEFAULT)


def crc32(data: bytes) -> int:
    return zlib.crc32(data)


class CustomCrc:
    """A crc16_custom / crc32_custom hash instance; bmv2 keeps one
    parameter set per calculation and lets the control plane change it."""

    def __init__(self, width: int) -> None:
        self.default = CRC16_DEFAULT if width == 16 else CRC32_DEFAULT
        if width not in (16, 32):
            raise ValueError("custom CRCs are crc16_custom and crc32_custom")
        self.params = self.default
        self._fn = _crc_function(self.params)

    def configure(self, poly: int, init: int, xor_out: int,
                  reflect_in: bool, reflect_out: bool) -> None:
        self.params = CrcParams(self.default.width, poly, init, xor_out,
                                bool(reflect_in), bool(reflect_out))
        self._fn = _crc_function(self.params)

    def reset(self) -> None:
        self.params = self.default
        self._fn = _crc_function(self.params)

    def __call__(self, data: bytes) -> int:
        return self._fn(data)


# --------------------------------------------------------------------------
# Checksums and the rest


def _ones_sum16(data: bytes) -> int:
    # The 16-bit words of `data` are the base-65536 digits of n, and
    # 65536 = 1 (mod 0xffff), so their end-around-carry sum is n mod 0xffff,
    # taken in 1..0xffff unless every word is zero (then 0).
    n = int.from_bytes(data, "big")
    if len(data) & 1:
        n <<= 8
    if not n:
        return 0
    return (n - 1) % 0xFFFF + 1


def csum16(data: bytes) -> int:
    """RFC 1071 checksum: ~(ones'-complement sum) & 0xffff, as bmv2 returns
    (_ones_sum16 inlined: this runs for every IPv4 packet)."""
    n = int.from_bytes(data, "big")
    if len(data) & 1:
        n <<= 8
    return ~((n - 1) % 0xFFFF + 1) & 0xFFFF if n else 0xFFFF


def xor16(data: bytes) -> int:
    if len(data) % 2:
        data = data + b"\x00"
    result = 0
    for word in struct.unpack(f">{len(data) // 2}H", data):
        result ^= word
    return result


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


_FIXED: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc32": zlib.crc32,
    "crc16_custom": crc16,
    "crc32_custom": zlib.crc32,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
}


def make_hasher(algorithm: str) -> Callable[[bytes], int]:
    """A hash function for one calculation instance.  The custom CRCs get
    their own CustomCrc (configurable); the others are shared functions."""
    if algorithm == "crc16_custom":
        return CustomCrc(16)
    if algorithm == "crc32_custom":
        return CustomCrc(32)
    try:
        return _FIXED[algorithm]
    except KeyError:
        raise ValueError(f"unknown hash algorithm {algorithm!r} "
                         f"(bmv2 has {', '.join(sorted(ALGORITHMS))})") from None


def compute(algorithm: str, data: bytes) -> int:
    """The raw hash value of `data` with the algorithm's default parameters."""
    try:
        fn = _FIXED[algorithm]
    except KeyError:
        raise ValueError(f"unknown hash algorithm {algorithm!r} "
                         f"(bmv2 has {', '.join(sorted(ALGORITHMS))})") from None
    return fn(data)


def reduce(h: int, base: int, max_: int) -> int:
    """bmv2's `(h mod max) + base` in 64-bit arithmetic, max 0 taken as 1."""
    max_ &= _U64
    if max_ == 0:
        max_ = 1
    return ((h % max_) + (base & _U64)) & _U64


def hash_result(algorithm: str, data: bytes, base: int, max: int) -> int:  # noqa: A002
    """v1model hash(): base + (H(data) mod max); max 0 gives base.  The
    caller wraps the result to the destination field's width."""
    return reduce(compute(algorithm, data), base, max)
