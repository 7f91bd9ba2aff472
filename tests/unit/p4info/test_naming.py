"""Id, alias and field-id rules of P4Info, checked against ids that p4c
published for real programs (facts) and against the rules themselves."""

import pytest

from testbed.p4model.p4info import naming as nm


# (prefix, name, id) as p4c emitted them in its own test outputs.
KNOWN = [
    (nm.ACTION, "NoAction", 21257015),
    (nm.ACTION, "IngressI.drop", 23455883),
    (nm.ACTION, "ingressImpl.a_params", 26776898),
    (nm.ACTION, "MyIngress.forward", 29683729),
    (nm.ACTION, "MyIngress.drop", 25652968),
    (nm.TABLE, "IngressI.indirect", 46872340),
    (nm.TABLE, "MyIngress.dmac_table", 35550025),
    (nm.TABLE, "IngressI.do_aux.adjust_lkp_fields", 40552494),
    (nm.ACTION_PROFILE, "ap", 294074782),
    (nm.ACTION_PROFILE, "IngressI.ap_ws", 285903678),
]


@pytest.mark.parametrize("prefix,name,expected", KNOWN)
def test_hashed_ids_match_p4c(prefix, name, expected):
    assert nm.hashed_id(prefix, name) == expected


def test_jenkins_hash_of_empty_and_bytes():
    assert nm.jenkins_one_at_a_time(b"") == 0
    assert nm.jenkins_one_at_a_time("NoAction") == nm.jenkins_one_at_a_time(b"NoAction")
    assert nm.jenkins_one_at_a_time("a") != nm.jenkins_one_at_a_time("b")


def test_prefix_is_top_byte():
    for prefix in (nm.ACTION, nm.TABLE, nm.COUNTER, nm.DIGEST):
        assert nm.hashed_id(prefix, "x.y") >> 24 == prefix


def test_alias_is_shortest_unique_suffix():
    s = nm.SuffixSet()
    for n in ("d.a.c", "e.b.c", "MyIngress.drop", "MyEgress.drop", "NoAction", "MyIngress.t"):
        s.add(n)
    assert s.alias("d.a.c") == "a.c"
    assert s.alias("e.b.c") == "b.c"
    assert s.alias("MyIngress.drop") == "MyIngress.drop"
    assert s.alias("NoAction") == "NoAction"
    assert s.alias("MyIngress.t") == "t"


def test_alias_when_one_name_is_a_suffix_of_another():
    s = nm.SuffixSet()
    s.add("b.c")
    s.add("a.b.c")
    # p4c stops at the end of the shorter name even though it is not unique.
    assert s.alias("b.c") == "b.c"
    assert s.alias("a.b.c") == "a.b.c"


def test_adding_a_name_twice_does_not_change_aliases():
    s = nm.SuffixSet()
    s.add("C.t")
    s.add("C.t")
    assert s.alias("C.t") == "t"


def test_alias_spans_all_types():
    table = nm.SymbolTable()
    table.add(nm.ACTION, "Ing.count")
    table.add(nm.COUNTER, "Eg.count")
    table.assign()
    assert table.alias("Ing.count") == "Ing.count"


def test_user_id_gets_prefix_and_is_reserved_first():
    table = nm.SymbolTable()
    # An @id equal to another name's hashed id pushes that name to +1.
    clash = nm.hashed_id(nm.ACTION, "b") & 0xFFFFFF
    table.add(nm.ACTION, "b")
    table.add(nm.ACTION, "a", user_id=clash)
    table.assign()
    assert table.id(nm.ACTION, "a") == (nm.ACTION << 24) | clash
    assert table.id(nm.ACTION, "b") == nm.hashed_id(nm.ACTION, "b") + 1


def test_user_id_with_full_prefix_is_kept():
    table = nm.SymbolTable()
    table.add(nm.TABLE, "t", user_id=0x02000005)
    table.assign()
    assert table.id(nm.TABLE, "t") == 0x02000005


def test_user_id_with_wrong_prefix_is_an_error():
    table = nm.SymbolTable()
    with pytest.raises(nm.IdError):
        table.add(nm.TABLE, "t", user_id=0x01000005)


def test_duplicate_user_id_is_an_error():
    table = nm.SymbolTable()
    table.add(nm.ACTION, "a", user_id=7)
    with pytest.raises(nm.IdError):
        table.add(nm.ACTION, "b", user_id=7)


def test_collisions_probe_in_sorted_name_order(monkeypatch):
    # Force every name to the same hash: the sorted order decides who gets +1.
    monkeypatch.setattr(nm, "jenkins_one_at_a_time", lambda name: 0x00FFFFFF)
    table = nm.SymbolTable()
    for name in ("zeta", "Alpha", "beta"):
        table.add(nm.ACTION, name)
    table.assign()
    base = nm.ACTION << 24
    # byte-wise order: 'Alpha' < 'beta' < 'zeta'; probing wraps within 24 bits.
    assert table.id(nm.ACTION, "Alpha") == base | 0xFFFFFF
    assert table.id(nm.ACTION, "beta") == base | 0x000000
    assert table.id(nm.ACTION, "zeta") == base | 0x000001


def test_lower_prefixes_are_numbered_first(monkeypatch):
    monkeypatch.setattr(nm, "jenkins_one_at_a_time", lambda name: 5)
    table = nm.SymbolTable()
    table.add(nm.TABLE, "t")
    table.add(nm.ACTION, "a")
    table.assign()
    # Different prefixes never collide with each other.
    assert table.id(nm.ACTION, "a") == (nm.ACTION << 24) | 5
    assert table.id(nm.TABLE, "t") == (nm.TABLE << 24) | 5


def test_field_ids_sequential():
    assert nm.field_ids([None, None, None]) == [1, 2, 3]


def test_field_ids_with_user_ids():
    # positions with @id consume a counter step; taken values are skipped.
    assert nm.field_ids([None, 5, None]) == [1, 5, 2]
    assert nm.field_ids([2, None, None]) == [2, 3, 4]
    assert nm.field_ids([None, 1, None]) == [2, 1, 3]


def test_field_ids_errors():
    with pytest.raises(nm.IdError):
        nm.field_ids([0])
    with pytest.raises(nm.IdError):
        nm.field_ids([3, 3])
