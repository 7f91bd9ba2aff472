"""Tables: matchers, priorities, validation, const rules, size, readback."""

import pytest
from hypothesis import given, settings, strategies as st

from testbed.p4model.clock import ManualClock
from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.externs import ActionProfile
from testbed.p4model.runtime.meters import MeterState
from testbed.p4model.runtime.tables import ActionCall, MatchField, Table, TableEntry

NOP = ActionCall("NoAction")


def fwd(port):
    return ActionCall("fwd", (port,))


def table(fields, size=1024, actions=("fwd", "NoAction"), **kw):
    kw.setdefault("entries_are_const", False)
    kw.setdefault("action_params", {"fwd": (9,), "NoAction": ()})
    return Table("t", fields, list(actions), NOP, False, size, **kw)


def code_of(fn, *args):
    with pytest.raises(ControlPlaneError) as info:
        fn(*args)
    return info.value.code


# ---------------------------------------------------------------- exact


def test_exact_lookup_and_miss():
    t = table([MatchField("a", "exact", 8), MatchField("b", "exact", 16)])
    t.insert(TableEntry((1, 2), action=fwd(3)))
    assert t.lookup((1, 2)).action == fwd(3)
    assert t.lookup((1, 3)) is None
    assert t.default == NOP


def test_keyless_table_only_default():
    t = table([])
    assert t.lookup(()) is None


def test_exact_duplicate_missing_and_delete():
    t = table([MatchField("a", "exact", 8)])
    t.insert(TableEntry((1,), action=fwd(3)))
    assert code_of(t.insert, TableEntry((1,), action=fwd(4))) == "ALREADY_EXISTS"
    assert code_of(t.modify, TableEntry((2,), action=fwd(4))) == "NOT_FOUND"
    assert code_of(t.delete, (2,)) == "NOT_FOUND"
    t.modify(TableEntry((1,), action=fwd(5)))
    assert t.lookup((1,)).action == fwd(5)
    t.delete((1,))
    assert t.lookup((1,)) is None and len(t) == 0


def test_exact_value_must_fit_width():
    t = table([MatchField("a", "exact", 8)])
    assert code_of(t.insert, TableEntry((256,), action=fwd(1))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((-1,), action=fwd(1))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((1, 2), action=fwd(1))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry(("x",), action=fwd(1))) == "INVALID_ARGUMENT"


# ---------------------------------------------------------------- lpm


def test_lpm_longest_prefix_wins_and_default_route():
    t = table([MatchField("dst", "lpm", 32)])
    t.insert(TableEntry(((0, 0),), action=fwd(9)))
    t.insert(TableEntry(((0x0A000000, 8),), action=fwd(1)))
    t.insert(TableEntry(((0x0A010000, 16),), action=fwd(2)))
    t.insert(TableEntry(((0x0A010203, 32),), action=fwd(3)))
    assert t.lookup((0x0A010203,)).action == fwd(3)
    assert t.lookup((0x0A010204,)).action == fwd(2)
    assert t.lookup((0x0A020000,)).action == fwd(1)
    assert t.lookup((0x0B000000,)).action == fwd(9)
    t.delete(((0x0A010000, 16),))
    assert t.lookup((0x0A010204,)).action == fwd(1)


def test_lpm_with_exact_keys():
    t = table([MatchField("vrf", "exact", 8), MatchField("dst", "lpm", 32)])
    t.insert(TableEntry((1, (0x0A000000, 8)), action=fwd(1)))
    t.insert(TableEntry((2, (0x0A000000, 16)), action=fwd(2)))
    assert t.lookup((1, 0x0A000001)).action == fwd(1)
    assert t.lookup((2, 0x0A000001)).action == fwd(2)
    assert t.lookup((2, 0x0A010001)) is None


def test_lpm_validation():
    t = table([MatchField("dst", "lpm", 32)])
    assert code_of(t.insert, TableEntry(((0x0A000001, 8),), action=fwd(1))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry(((0, 33),), action=fwd(1))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry(((0, -1),), action=fwd(1))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((5,), action=fwd(1))) == "INVALID_ARGUMENT"
    # priority is forbidden in lpm-only tables
    assert code_of(t.insert, TableEntry(((0, 0),), priority=3, action=fwd(1))) == "INVALID_ARGUMENT"


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 2**16 - 1), st.integers(0, 16)), max_size=40),
       st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=30))
def test_lpm_equals_bruteforce(prefixes, keys):
    t = table([MatchField("dst", "lpm", 16)])
    installed = {}
    for value, plen in prefixes:
        value &= ((1 << plen) - 1) << (16 - plen)
        if (value, plen) in installed:
            continue
        installed[(value, plen)] = len(installed)
        t.insert(TableEntry(((value, plen),), action=fwd(installed[(value, plen)] % 512)))
    for key in keys:
        best = None
        for (value, plen), idx in installed.items():
            mask = ((1 << plen) - 1) << (16 - plen)
            if key & mask == value and (best is None or plen > best[0]):
                best = (plen, idx)
        got = t.lookup((key,))
        if best is None:
            assert got is None
        else:
            assert got.match[0][1] == best[0]
            assert got.action == fwd(best[1] % 512)


# ---------------------------------------------------------------- ternary & co


def test_ternary_larger_priority_wins_and_priority_required():
    t = table([MatchField("a", "ternary", 8)])
    t.insert(TableEntry(((0x10, 0xF0),), priority=1, action=fwd(1)))
    t.insert(TableEntry(((0x12, 0xFF),), priority=10, action=fwd(2)))
    assert t.lookup((0x12,)).action == fwd(2)
    assert t.lookup((0x13,)).action == fwd(1)
    assert t.lookup((0x23,)) is None
    assert code_of(t.insert, TableEntry(((0, 0),), action=fwd(1))) == "INVALID_ARGUMENT"
    # same match, different priority: a different entry
    t.insert(TableEntry(((0x12, 0xFF),), priority=11, action=fwd(3)))
    assert t.lookup((0x12,)).action == fwd(3)
    assert code_of(t.insert, TableEntry(((0x12, 0xFF),), priority=11, action=fwd(3))) \
        == "ALREADY_EXISTS"
    t.delete(((0x12, 0xFF),), 11)
    assert t.lookup((0x12,)).action == fwd(2)


def test_ternary_value_outside_mask_rejected():
    t = table([MatchField("a", "ternary", 8)])
    assert code_of(t.insert, TableEntry(((0x11, 0xF0),), priority=1, action=fwd(1))) \
        == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry(((0x1, 0x1FF),), priority=1, action=fwd(1))) \
        == "INVALID_ARGUMENT"


def test_range_and_optional():
    t = table([MatchField("port", "range", 16), MatchField("proto", "optional", 8)])
    t.insert(TableEntry(((1000, 2000), 6), priority=5, action=fwd(1)))
    t.insert(TableEntry(((0, 65535), None), priority=1, action=fwd(2)))
    assert t.lookup((1500, 6)).action == fwd(1)
    assert t.lookup((1500, 17)).action == fwd(2)
    assert t.lookup((2001, 6)).action == fwd(2)
    assert code_of(t.insert, TableEntry(((5, 4), None), priority=2, action=fwd(1))) \
        == "INVALID_ARGUMENT"


def test_single_range_key():
    t = table([MatchField("port", "range", 16)])
    t.insert(TableEntry(((10, 20),), priority=1, action=fwd(1)))
    assert t.lookup((10,)).action == fwd(1)
    assert t.lookup((20,)).action == fwd(1)
    assert t.lookup((21,)) is None and t.lookup((9,)) is None


def test_equal_priorities_older_wins():
    t = table([MatchField("a", "ternary", 8)])
    t.insert(TableEntry(((0, 0),), priority=3, action=fwd(1)))
    t.insert(TableEntry(((1, 1),), priority=3, action=fwd(2)))
    assert t.lookup((1,)).action == fwd(1)


def test_const_entries_earlier_listed_wins():
    const = [TableEntry(((0x10, 0xF0),), action=fwd(1)),
             TableEntry(((0x12, 0xFF),), action=fwd(2))]
    t = Table("c", [MatchField("a", "ternary", 8)], ["fwd", "NoAction"], NOP, True, 16,
              const_entries=const, entries_are_const=True)
    assert t.lookup((0x12,)).action == fwd(1)
    assert [e.priority for e in t.entries()] == [2, 1]
    assert all(e.is_const for e in t.entries())


def test_const_entries_explicit_priorities():
    const = [TableEntry(((0x10, 0xF0),), priority=1, action=fwd(1)),
             TableEntry(((0x12, 0xFF),), priority=2, action=fwd(2))]
    t = Table("c", [MatchField("a", "ternary", 8)], ["fwd"], NOP, False, 16,
              const_entries=const)
    assert t.lookup((0x12,)).action == fwd(2)


def test_const_table_refuses_writes():
    t = Table("c", [MatchField("a", "exact", 8)], ["fwd", "NoAction"], NOP, True, 16,
              const_entries=[TableEntry((1,), action=fwd(1))], entries_are_const=True)
    assert t.lookup((1,)).action == fwd(1)
    assert code_of(t.insert, TableEntry((2,), action=fwd(1))) == "PERMISSION_DENIED"
    assert code_of(t.delete, (1,)) == "PERMISSION_DENIED"
    assert code_of(t.modify, TableEntry((1,), action=fwd(2))) == "PERMISSION_DENIED"
    assert code_of(t.set_default, fwd(1)) == "PERMISSION_DENIED"
    t.clear()
    assert len(t) == 1


def test_non_const_initial_entries_are_writable():
    """`entries = {...}` without const: initial entries the control plane
    may modify and delete, not flagged const."""
    t = Table("c", [MatchField("a", "exact", 8)], ["fwd", "NoAction"], NOP, False, 16,
              const_entries=[TableEntry((1,), action=fwd(1))], entries_are_const=False)
    assert not t.lookup((1,)).is_const
    t.insert(TableEntry((2,), action=fwd(2)))
    t.modify(TableEntry((1,), action=fwd(3)))
    assert t.lookup((1,)).action == fwd(3)
    t.delete((1,))
    t.clear()
    assert len(t) == 0


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(1, 20)),
                max_size=30),
       st.lists(st.integers(0, 255), min_size=1, max_size=20))
def test_ternary_equals_bruteforce(rows, keys):
    t = table([MatchField("a", "ternary", 8)])
    installed = []
    for value, mask, prio in rows:
        value &= mask
        if any(m == (value, mask, prio) for m, _ in installed):
            continue
        t.insert(TableEntry(((value, mask),), priority=prio, action=fwd(len(installed))))
        installed.append(((value, mask, prio), len(installed)))
    for key in keys:
        candidates = [(prio, -idx, idx) for (value, mask, prio), idx in installed
                      if key & mask == value]
        got = t.lookup((key,))
        if not candidates:
            assert got is None
        else:
            assert got.action == fwd(max(candidates)[2])


def test_multi_field_ternary_with_exact_and_lpm():
    t = table([MatchField("e", "exact", 4), MatchField("l", "lpm", 8),
               MatchField("t", "ternary", 8)])
    t.insert(TableEntry((1, (0xA0, 4), (0, 0)), priority=1, action=fwd(1)))
    t.insert(TableEntry((1, (0xA0, 4), (5, 0xFF)), priority=2, action=fwd(2)))
    assert t.lookup((1, 0xAB, 5)).action == fwd(2)
    assert t.lookup((1, 0xAB, 6)).action == fwd(1)
    assert t.lookup((2, 0xAB, 5)) is None
    assert t.lookup((1, 0xBB, 5)) is None


# ---------------------------------------------------------------- actions, size, default


def test_action_validation():
    t = table([MatchField("a", "exact", 8)], default_only=frozenset({"NoAction"}))
    assert code_of(t.insert, TableEntry((1,), action=ActionCall("drop"))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((1,), action=ActionCall("fwd", ()))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((1,), action=ActionCall("fwd", (512,)))) \
        == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((1,), action=NOP)) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((1,))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((1,), member_id=1)) == "INVALID_ARGUMENT"


def test_size_limit():
    t = table([MatchField("a", "exact", 8)], size=2)
    t.insert(TableEntry((1,), action=fwd(1)))
    t.insert(TableEntry((2,), action=fwd(1)))
    assert code_of(t.insert, TableEntry((3,), action=fwd(1))) == "RESOURCE_EXHAUSTED"
    t.delete((1,))
    t.insert(TableEntry((3,), action=fwd(1)))


def test_default_action():
    t = table([MatchField("a", "exact", 8)], table_only=frozenset({"fwd"}))
    assert code_of(t.set_default, fwd(1)) == "INVALID_ARGUMENT"
    t2 = table([MatchField("a", "exact", 8)])
    t2.set_default(fwd(4))
    assert t2.default == fwd(4)
    assert code_of(t2.set_default, ActionCall("nope")) == "INVALID_ARGUMENT"
    t2.reset_default()
    assert t2.default == NOP


def test_readback_is_what_was_written():
    t = table([MatchField("a", "ternary", 8), MatchField("b", "lpm", 16)])
    e1 = TableEntry(((0x10, 0xF0), (0xAB00, 8)), priority=7, action=fwd(3))
    e2 = TableEntry(((0, 0), (0, 0)), priority=1, action=fwd(4))
    t.insert(e1)
    t.insert(e2)
    back = t.entries()
    assert [(e.match, e.priority, e.action) for e in back] == [
        (((0x10, 0xF0), (0xAB00, 8)), 7, fwd(3)), (((0, 0), (0, 0)), 1, fwd(4))]
    assert t.find(((0x10, 0xF0), (0xAB00, 8)), 7) is e1
    assert t.find(((0x10, 0xF0), (0xAB00, 8)), 6) is None
    assert t.find("garbage", 1) is None


def test_selector_keys_are_not_matched():
    t = table([MatchField("a", "exact", 8), MatchField("h", "selector", 32)])
    assert [f.name for f in t.match_fields] == ["a"]
    t.insert(TableEntry((1,), action=fwd(1)))
    assert t.lookup((1,)).action == fwd(1)


# ---------------------------------------------------------------- direct resources, profiles


def test_direct_meter_and_counter_live_on_entry():
    clock = ManualClock()
    t = table([MatchField("a", "exact", 8)], direct_counter_kind="packets_and_bytes",
              direct_meter_kind="bytes", clock=clock)
    t.insert(TableEntry((1,), action=fwd(1)))
    entry = t.lookup((1,))
    assert isinstance(entry.meter, MeterState) and entry.meter.get_config() is None
    entry.counter_packets += 1
    entry.meter.set_config(1000, 100, 2000, 200)
    t.modify(TableEntry((1,), action=fwd(2)))
    assert entry.action == fwd(2) and entry.counter_packets == 1
    assert entry.meter.get_config() == (1000, 100, 2000, 200)


def test_indirect_table_with_profile():
    prof = ActionProfile("sel", 16, with_selector=True)
    prof.insert_member(1, fwd(1))
    prof.insert_member(2, fwd(2))
    prof.insert_group(10, [2, 1])
    t = table([MatchField("a", "exact", 8), MatchField("h", "selector", 16)],
              implementation=prof)
    assert code_of(t.insert, TableEntry((1,), action=fwd(1))) == "INVALID_ARGUMENT"
    assert code_of(t.insert, TableEntry((1,), member_id=3)) == "NOT_FOUND"
    assert code_of(t.insert, TableEntry((1,), group_id=11)) == "NOT_FOUND"
    assert code_of(t.insert, TableEntry((1,), member_id=1, group_id=10)) == "INVALID_ARGUMENT"
    t.insert(TableEntry((1,), member_id=1))
    t.insert(TableEntry((2,), group_id=10))
    assert prof.resolve(t.lookup((1,)), None) == fwd(1)
    assert prof.resolve(t.lookup((2,)), 0) == fwd(1)
    assert prof.resolve(t.lookup((2,)), 5) == fwd(2)
    assert code_of(prof.delete_member, 1) == "FAILED_PRECONDITION"
    assert code_of(prof.delete_group, 10) == "FAILED_PRECONDITION"
    t.delete((2,))
    prof.delete_group(10)
    t.modify(TableEntry((1,), member_id=2))
    prof.delete_member(1)


def _matches(match, key):
    (tv, tm), (lo, hi), opt = match
    return key[0] & tm == tv and lo <= key[1] <= hi and (opt is None or opt == key[2])


@settings(max_examples=80)
@given(st.lists(st.tuples(st.integers(0, 15), st.sampled_from([0, 0xC, 0xF, 0x3]),
                          st.integers(0, 15), st.integers(0, 15),
                          st.one_of(st.none(), st.integers(0, 3)),
                          st.integers(1, 6), st.booleans()),
                max_size=40),
       st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 3)),
                min_size=1, max_size=20))
def test_mixed_kinds_with_deletes_equal_bruteforce(ops, keys):
    """ternary + range + optional, inserts interleaved with deletes: the
    lookup is always the max-priority (then oldest) matching entry."""
    t = table([MatchField("t", "ternary", 4), MatchField("r", "range", 4),
               MatchField("o", "optional", 2)])
    live = []   # (match, priority, tag) in insertion order
    tag = 0
    for v, m, a, b, opt, prio, delete in ops:
        match = ((v & m, m), (min(a, b), max(a, b)), opt)
        existing = [x for x in live if x[0] == match and x[1] == prio]
        if delete and existing:
            t.delete(match, prio)
            live.remove(existing[0])
        elif not existing:
            tag += 1
            t.insert(TableEntry(match, priority=prio, action=fwd(tag)))
            live.append((match, prio, tag))
    for key in keys:
        best = None
        for match, prio, tg in live:       # oldest first: keep the first max
            if _matches(match, key) and (best is None or prio > best[0]):
                best = (prio, tg)
        got = t.lookup(key)
        assert (got.action == fwd(best[1])) if best else got is None
