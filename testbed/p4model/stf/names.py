"""Name resolution for STF files, as the reference harness resolves them.

bmv2stf.py looks a table up by its exact name, then by a name that ends
with the given text (any suffix, unique or an "ambiguous" error); actions
likewise among the table's own actions; key fields by exact name, then by a
`.`-suffix (`dstAddr` for `hdr.ipv4.dstAddr`), with `x$N` meaning `x[N]`;
action parameters only by their exact name.  simple_switch_CLI resolves
registers, counters and meters by full name or by a unique `.`-suffix.
"""

from __future__ import annotations

import re


class NameError_(Exception):
    """Resolution failed; the message says why (the caller adds file:line)."""


def resolve(name: str, candidates, what: str, dotted: bool = False) -> str:
    """The candidate `name` designates: exact, else the unique candidate
    ending with it (with `dotted`, ending with '.' + name)."""
    candidates = list(candidates)
    if name in candidates:
        return name
    suffix = "." + name if dotted else name
    found = [c for c in candidates if c.endswith(suffix)]
    if len(found) == 1:
        return found[0]
    if not found:
        known = ", ".join(sorted(candidates)) or "none"
        raise NameError_(f"no {what} named {name!r} (known: {known})")
    raise NameError_(f"{what} name {name!r} is ambiguous between "
                     f"{', '.join(sorted(found))}")


_STACK = re.compile(r"\$([0-9]+)")


def resolve_key(name: str, fields, table: str) -> str:
    """A key field of `table` by exact name, stack spelling `x$0` = `x[0]`,
    validity spellings (`h.$valid$`, `h.valid`, `h.isValid()`: P4Info names
    a validity key `h.$valid$` as p4c does), then a unique '.'-suffix."""
    fields = list(fields)
    spellings = [name, _STACK.sub(r"[\1]", name)]
    for s in list(spellings):
        for valid in (".$valid$", ".valid", "$valid$", ".isValid()"):
            if s.endswith(valid):
                base = s[: -len(valid)].rstrip(".")
                spellings += [base + ".$valid$", base + ".isValid()"]
    for s in spellings:
        if s in fields:
            return s
    for s in spellings:
        found = [f for f in fields if f.endswith("." + s)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise NameError_(f"key field {name!r} of table {table} is ambiguous between "
                             f"{', '.join(found)}")
    raise NameError_(f"table {table} has no key field {name!r} "
                     f"(keys: {', '.join(fields) or 'none'})")
