"""P4 runtime library speed: table lookups and hash computations per second.

Every packet through the builtin target does a few table lookups and,
for load-balancing programs, a hash; the target must reach 100,000
packets/s, so each of these must cost well under a microsecond or two.
Keys are drawn at random in advance so the figures are lookup cost only.
"""

from __future__ import annotations

import random
import time

from testbed.p4model.runtime import hashing
from testbed.p4model.runtime.tables import ActionCall, MatchField, Table, TableEntry

LOOKUPS = 200_000
HASHES = 100_000


def _rate(fn, keys) -> float:
    start = time.perf_counter()
    for key in keys:
        fn(key)
    return len(keys) / (time.perf_counter() - start)


def _exact(rng: random.Random) -> float:
    t = Table("exact", [MatchField("dst", "exact", 48)], ["fwd"], ActionCall("fwd", (0,)),
              False, 4096, entries_are_const=False)
    macs = [rng.getrandbits(48) for _ in range(1000)]
    for i, mac in enumerate(dict.fromkeys(macs)):
        t.insert(TableEntry((mac,), action=ActionCall("fwd", (i % 64,))))
    keys = [(rng.choice(macs),) for _ in range(LOOKUPS)]
    return _rate(t.lookup, keys)


def _lpm(rng: random.Random) -> tuple[float, int]:
    t = Table("lpm", [MatchField("dst", "lpm", 32)], ["fwd"], ActionCall("fwd", (0,)),
              False, 4096, entries_are_const=False)
    seen = set()
    while len(seen) < 1000:
        plen = rng.choice((8, 12, 16, 20, 22, 24, 24, 24, 28, 32))
        value = rng.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        if (value, plen) not in seen:
            seen.add((value, plen))
            t.insert(TableEntry(((value, plen),), action=ActionCall("fwd", (len(seen) % 64,))))
    prefixes = list(seen)
    keys = []
    for _ in range(LOOKUPS):      # 3/4 hits somewhere in a prefix, 1/4 random
        if rng.random() < 0.75:
            value, plen = rng.choice(prefixes)
            keys.append((value | (rng.getrandbits(32) & ((1 << (32 - plen)) - 1)),))
        else:
            keys.append((rng.getrandbits(32),))
    hits = sum(t.lookup(k) is not None for k in keys[:10000])
    return _rate(t.lookup, keys), hits


def _ternary(rng: random.Random) -> float:
    fields = [MatchField("src", "ternary", 32), MatchField("dport", "ternary", 16),
              MatchField("proto", "ternary", 8)]
    t = Table("acl", fields, ["permit", "deny"], ActionCall("permit"), False, 1024,
              entries_are_const=False)
    for prio in range(1, 101):
        mask = rng.choice((0, 0xFF000000, 0xFFFF0000, 0xFFFFFF00))
        t.insert(TableEntry(((rng.getrandbits(32) & mask, mask),
                             (rng.getrandbits(16), 0xFFFF), (6, 0xFF)),
                            priority=prio, action=ActionCall("deny")))
    keys = [(rng.getrandbits(32), rng.getrandbits(16), 6) for _ in range(LOOKUPS // 10)]
    return _rate(t.lookup, keys)


def _hash(algorithm: str, rng: random.Random) -> float:
    # a 5-tuple: src, dst, proto, sport, dport = 13 bytes
    blobs = [hashing.pack_fields([(rng.getrandbits(32), 32), (rng.getrandbits(32), 32),
                                  (6, 8), (rng.getrandbits(16), 16), (rng.getrandbits(16), 16)])
             for _ in range(HASHES)]
    compute = hashing.compute
    start = time.perf_counter()
    for blob in blobs:
        compute(algorithm, blob)
    return HASHES / (time.perf_counter() - start)


def _pack(rng: random.Random) -> float:
    values = [[(rng.getrandbits(32), 32), (rng.getrandbits(32), 32), (6, 8),
               (rng.getrandbits(16), 16), (rng.getrandbits(16), 16)] for _ in range(HASHES)]
    return _rate(hashing.pack_fields, values)


def run() -> list[str]:
    rng = random.Random(1)
    lpm_rate, hits = _lpm(rng)
    return [
        f"exact lookup (1,000 entries, 48-bit key): {_exact(rng):,.0f} lookups/s",
        f"lpm lookup (1,000 prefixes, {hits / 100:.0f}% hits): {lpm_rate:,.0f} lookups/s",
        f"ternary lookup (100 entries, 3 keys): {_ternary(rng):,.0f} lookups/s",
        f"crc32 of a 13-byte 5-tuple: {_hash('crc32', rng):,.0f} hashes/s",
        f"crc16 of a 13-byte 5-tuple: {_hash('crc16', rng):,.0f} hashes/s",
        f"csum16 of a 13-byte 5-tuple: {_hash('csum16', rng):,.0f} hashes/s",
        f"pack_fields of a 5-tuple: {_pack(rng):,.0f} packs/s",
    ]


if __name__ == "__main__":
    for line in run():
        print(line)
