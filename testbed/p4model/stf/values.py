"""Numbers as STF files spell them, turned into match values.

Spellings follow the reference harness (bmv2stf.py) and simple_switch_CLI:
decimal, 0x hex, 0b binary, 0o octal; ternary keys use `*` digits for
don't-care (the mask has all bits of a digit set, or none), lpm keys are
`value/length` or, without a length, as many bits as the digits written
(`*` digits excluded); `v&&&m` and `lo->hi` (the CLI's ternary and range
forms) are accepted too, as are dotted IPv4 and colon MAC addresses.
"""

from __future__ import annotations

import re

_BASES = {"0x": (16, 4), "0b": (2, 1), "0o": (8, 3)}
_IPV4 = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")
_MAC = re.compile(r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$")


class ValueError_(Exception):
    """A value that cannot be read; the message says why."""


def number(text: str) -> int:
    """A plain number (no don't-care digits)."""
    text = text.strip()
    m = _IPV4.match(text)
    if m and all(int(g) < 256 for g in m.groups()):
        return int.from_bytes(bytes(int(g) for g in m.groups()), "big")
    if _MAC.match(text):
        return int("".join(p.zfill(2) for p in text.split(":")), 16)
    try:
        return int(text, 0) if text[:2].lower() in _BASES else int(text, 10)
    except ValueError:
        raise ValueError_(f"{text!r} is not a number") from None


def _digits(text: str):
    """(base, bits per digit, digits) of a prefixed number, or None for decimal."""
    prefix = text[:2].lower()
    if prefix in _BASES:
        base, bits = _BASES[prefix]
        return base, bits, text[2:]
    return None


def ternary(text: str, width: int) -> tuple:
    """(value, mask) of a ternary key."""
    if "&&&" in text:
        value, _, mask = text.partition("&&&")
        return number(value), number(mask)
    parsed = _digits(text)
    if parsed is None:
        if text.strip() == "*":
            return 0, 0
        raise ValueError_(f"decimal value {text} is not supported for a ternary key "
                          f"(write it in hex or binary, with * for don't-care digits)")
    base, bits, digits = parsed
    if not digits:
        raise ValueError_(f"{text!r} has no digits")
    value = mask = 0
    full = (1 << bits) - 1
    for d in digits:
        value <<= bits
        mask <<= bits
        if d == "*":
            continue
        try:
            v = int(d, base)
        except ValueError:
            raise ValueError_(f"{text!r}: {d!r} is not a base-{base} digit") from None
        value |= v
        mask |= full
    if value >> width:
        raise ValueError_(f"{text} does not fit in {width} bits")
    return value, mask & ((1 << width) - 1)


def lpm(text: str, width: int) -> tuple:
    """(value, prefix length) of an lpm key; the value is cut to its prefix."""
    if "/" in text:
        value_text, _, length_text = text.partition("/")
        value = number(value_text.replace("*", "0"))
        try:
            length = int(length_text, 0)
        except ValueError:
            raise ValueError_(f"{text!r}: bad prefix length {length_text!r}") from None
    else:
        parsed = _digits(text)
        if parsed is None:
            raise ValueError_(f"lpm value {text} needs a /length (the reference harness "
                              f"cannot derive one from a decimal number)")
        base, bits, digits = parsed
        value = int(digits.replace("*", "0") or "0", base)
        length = (len(digits) - digits.count("*")) * bits
    if value >> width:
        raise ValueError_(f"{text} does not fit in {width} bits")
    if not 0 <= length <= width:
        raise ValueError_(f"{text}: prefix length {length} is outside 0..{width}")
    keep = ((1 << length) - 1) << (width - length)
    return value & keep, length


def value_range(text: str) -> tuple:
    """(low, high) of a range key: `lo->hi`, or a single number."""
    if "->" in text:
        low, _, high = text.partition("->")
        return number(low), number(high)
    v = number(text)
    return v, v


def hex_bytes(nibbles: str) -> bytes:
    return bytes.fromhex(nibbles)
