"""Packet replication engine: bmv2 replication order, P4Runtime rules."""

import pytest

from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.pre import PacketReplicationEngine


def code_of(fn, *args, **kw):
    with pytest.raises(ControlPlaneError) as info:
        fn(*args, **kw)
    return info.value.code


def test_ports_ascending_within_a_rid():
    pre = PacketReplicationEngine()
    pre.insert_group(1, [(0, 3), (0, 1), (0, 2)])
    assert pre.group(1) == [(0, 1), (0, 2), (0, 3)]


def test_rids_in_first_appearance_order():
    pre = PacketReplicationEngine()
    pre.insert_group(7, [(5, 4), (2, 1), (5, 0), (2, 9)])
    assert pre.group(7) == [(5, 0), (5, 4), (2, 1), (2, 9)]


def test_node_api_keeps_association_order():
    pre = PacketReplicationEngine()
    pre.create_group(1)
    h1 = pre.create_node(10, [4, 2])
    h2 = pre.create_node(20, [1])
    pre.associate_node(1, h2)
    pre.associate_node(1, h1)
    assert pre.group(1) == [(20, 1), (10, 2), (10, 4)]
    pre.update_node(h1, [3])
    assert pre.group(1) == [(20, 1), (10, 3)]
    pre.dissociate_node(1, h2)
    assert pre.group(1) == [(10, 3)]
    assert code_of(pre.associate_node, 1, h1) == "FAILED_PRECONDITION"
    pre.destroy_node(h1)
    assert pre.group(1) == []
    assert code_of(pre.associate_node, 1, h1) == "NOT_FOUND"


def test_group_errors():
    pre = PacketReplicationEngine()
    assert code_of(pre.insert_group, 0, [(0, 1)]) == "INVALID_ARGUMENT"
    pre.insert_group(1, [(0, 1)])
    assert code_of(pre.insert_group, 1, [(0, 2)]) == "ALREADY_EXISTS"
    assert code_of(pre.modify_group, 2, [(0, 2)]) == "NOT_FOUND"
    assert code_of(pre.delete_group, 2) == "NOT_FOUND"
    assert code_of(pre.insert_group, 3, [(0, 1), (0, 1)]) == "INVALID_ARGUMENT"
    assert code_of(pre.insert_group, 3, [(0, 512)]) == "INVALID_ARGUMENT"
    assert code_of(pre.insert_group, 3, [(70000, 1)]) == "INVALID_ARGUMENT"
    assert code_of(pre.insert_group, 3, ["x"]) == "INVALID_ARGUMENT"
    assert code_of(pre.insert_group, 70000, [(0, 1)]) == "OUT_OF_RANGE"
    assert not pre.has_group(3)


def test_modify_delete_and_unknown_group():
    pre = PacketReplicationEngine()
    pre.insert_group(1, [(0, 1), (0, 2)])
    pre.modify_group(1, [(1, 5)])
    assert pre.group(1) == [(1, 5)]
    assert pre.group_replicas(1) == [(1, 5)]
    pre.delete_group(1)
    assert pre.group(1) == []
    assert code_of(pre.group_replicas, 1) == "NOT_FOUND"
    pre.set_group(2, [(0, 1)])
    pre.set_group(2, [(0, 3)])
    assert pre.group(2) == [(0, 3)] and pre.group_ids() == [2]


def test_clone_sessions_p4runtime_rules():
    pre = PacketReplicationEngine()
    pre.insert_clone_session(5, [(1, 3), (1, 2)], packet_length_bytes=64)
    s = pre.clone_session(5)
    assert s.replicas == ((1, 2), (1, 3)) and s.packet_length_bytes == 64
    assert code_of(pre.insert_clone_session, 5, [(0, 1)]) == "ALREADY_EXISTS"
    assert code_of(pre.modify_clone_session, 6, [(0, 1)]) == "NOT_FOUND"
    assert code_of(pre.insert_clone_session, 0, [(0, 1)]) == "OUT_OF_RANGE"
    assert code_of(pre.insert_clone_session, 512, [(0, 1)]) == "OUT_OF_RANGE"
    assert code_of(pre.insert_clone_session, 6, [(0, 1)], class_of_service=1) == "UNIMPLEMENTED"
    pre.modify_clone_session(5, [(0, 9)])
    assert pre.clone_session(5).replicas == ((0, 9),)
    pre.delete_clone_session(5)
    assert pre.clone_session(5) is None
    assert code_of(pre.delete_clone_session, 5) == "NOT_FOUND"


def test_clone_session_cli_way_allows_any_bmv2_id():
    pre = PacketReplicationEngine()
    pre.set_clone_session(0, [(0, 4)])
    pre.set_clone_session(1000, [(0, 4)])
    assert pre.clone_session_ids() == [0, 1000]
    assert code_of(pre.set_clone_session, 40000, [(0, 4)]) == "OUT_OF_RANGE"
