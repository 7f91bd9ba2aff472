"""P4Runtime names, aliases and numeric ids, computed the way p4c does.

Controllers (p4runtime-shell, ONOS, our own) keep ids in configuration and
tests; for a program to move between bmv2 and the builtin target unchanged,
every id must be the one p4c would have given.  The rules:

* id = (type prefix << 24) | (Jenkins one-at-a-time hash of the name & 0xFFFFFF);
* `@id(n)` values are reserved first (their prefix is added when absent);
* the remaining names are numbered per type in ascending prefix order, each
  type's names in sorted (byte-wise) order, and a taken id makes the hash
  probe +1 (within the 24 bits, the prefix never changes);
* the alias is the shortest dot-separated suffix that no other name of any
  type shares;
* match fields, action parameters and packet-metadata fields get small ids
  1..n with `@id` values respected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

# Id prefixes (p4.config.v1.P4Ids).
ACTION = 0x01
TABLE = 0x02
VALUE_SET = 0x03
CONTROLLER_HEADER = 0x04
ACTION_PROFILE = 0x11
COUNTER = 0x12
DIRECT_COUNTER = 0x13
METER = 0x14
DIRECT_METER = 0x15
REGISTER = 0x16
DIGEST = 0x17

_MASK24 = 0xFFFFFF
_MASK32 = 0xFFFFFFFF


class IdError(ValueError):
    """An @id that P4Runtime cannot accept (wrong prefix, duplicate, zero)."""


def jenkins_one_at_a_time(data: bytes | str) -> int:
    """Bob Jenkins' one-at-a-time hash, 32-bit, over the bytes of `data`."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    h = 0
    for b in data:
        h = (h + b) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


def hashed_id(prefix: int, name: str) -> int:
    """The id a name gets when nothing collides with it."""
    return (prefix << 24) | (jenkins_one_at_a_time(name) & _MASK24)


def with_prefix(prefix: int, user_id: int) -> int:
    """An `@id` value as p4c stores it: the type prefix is or-ed in when the
    top byte is zero; a different non-zero top byte is an error."""
    if user_id < 0 or user_id > _MASK32:
        raise IdError(f"@id {user_id} is not a 32-bit unsigned integer")
    top = user_id & 0xFF000000
    if top and top != prefix << 24:
        raise IdError(f"@id 0x{user_id:08x} has the wrong 8-bit prefix (expected 0x{prefix:02x})")
    return user_id | (prefix << 24)


class SuffixSet:
    """The set of all control-plane names, answering 'shortest unique
    dot-suffix' queries.  A node of the suffix tree counts how many distinct
    names pass through it; the alias stops at the first component whose
    count is 1 (or at the whole name)."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._root: dict = {}

    def add(self, name: str) -> None:
        if name in self._names:
            return
        self._names.add(name)
        node = self._root
        for component in reversed(name.split(".")):
            child = node.get(component)
            if child is None:
                child = node[component] = [0, {}]
            child[0] += 1
            node = child[1]

    def alias(self, name: str) -> str:
        components = name.split(".")
        node = self._root
        needed = 0
        for component in reversed(components):
            child = node.get(component)
            if child is None:
                raise KeyError(f"{name!r} is not in the suffix set")
            needed += 1
            if child[0] < 2:
                break
            node = child[1]
        return ".".join(components[len(components) - needed:])


@dataclass
class SymbolTable:
    """Collects (type prefix, name, optional @id) triples, then assigns ids.

    Adding the same (prefix, name) twice is harmless (p4c sees localised
    copies of global actions once per control).  Call `assign()` once, after
    every symbol has been added; then `id()` and `alias()` answer."""

    _symbols: dict[int, dict[str, Optional[int]]] = field(default_factory=dict)
    _taken: set[int] = field(default_factory=set)
    _suffixes: SuffixSet = field(default_factory=SuffixSet)
    _assigned: bool = False

    def add(self, prefix: int, name: str, user_id: Optional[int] = None) -> None:
        if self._assigned:
            raise RuntimeError("symbols added after ids were assigned")
        table = self._symbols.setdefault(prefix, {})
        if name in table:
            return
        if user_id is not None:
            full = with_prefix(prefix, user_id)
            if full in self._taken:
                raise IdError(f"@id 0x{full:08x} is assigned to multiple declarations")
            self._taken.add(full)
            table[name] = full
        else:
            table[name] = None
        self._suffixes.add(name)

    def has(self, prefix: int, name: str) -> bool:
        return name in self._symbols.get(prefix, {})

    def assign(self) -> None:
        """Hash-and-probe every name without an @id, types in ascending
        prefix order, names sorted byte-wise (p4c's std::map<cstring>)."""
        for prefix in sorted(self._symbols):
            table = self._symbols[prefix]
            pending = sorted((n for n, i in table.items() if i is None),
                             key=lambda n: n.encode("utf-8"))
            for name in pending:
                source = jenkins_one_at_a_time(name)
                value = source
                while True:
                    candidate = (prefix << 24) | (value & _MASK24)
                    if candidate not in self._taken:
                        break
                    value = (value + 1) & _MASK32
                    if value == source:
                        raise IdError(f"no id left to represent {name} in P4Runtime")
                self._taken.add(candidate)
                table[name] = candidate
        self._assigned = True

    def id(self, prefix: int, name: str) -> int:
        value = self._symbols[prefix][name]
        if value is None:
            raise RuntimeError(f"id of {name} requested before assign()")
        return value

    def alias(self, name: str) -> str:
        return self._suffixes.alias(name)


def field_ids(user_ids: Sequence[Optional[int]]) -> list[int]:
    """Ids for match fields / action params / metadata fields, by position.

    p4c's rule: `@id` values are taken as given (zero and duplicates are
    errors); the others are numbered by a counter that starts at 1, steps
    over every position that carries an @id, and skips values already taken.
    """
    taken: set[int] = set()
    for uid in user_ids:
        if uid is None:
            continue
        if uid == 0:
            raise IdError("0 is not a valid @id value")
        if uid in taken:
            raise IdError(f"@id {uid} is used multiple times")
        taken.add(uid)
    result: list[int] = []
    index = 1
    for uid in user_ids:
        if uid is not None:
            result.append(uid)
            index += 1
            continue
        while index in taken:
            index += 1
        result.append(index)
        taken.add(index)
    return result


def aliases(names: Iterable[str]) -> dict[str, str]:
    """Convenience: the alias of every name in `names` among themselves."""
    suffixes = SuffixSet()
    names = list(names)
    for n in names:
        suffixes.add(n)
    return {n: suffixes.alias(n) for n in names}
