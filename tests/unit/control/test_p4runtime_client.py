"""Entries built by name become the P4Runtime messages a switch expects."""

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from testbed.control.p4info_index import P4InfoError, P4InfoIndex, encode_value
from testbed.control.p4runtime_client import P4RuntimeClient, TableEntrySpec

P4INFO = """
tables { preamble { id: 33554433 name: "MyIngress.ipv4_lpm" alias: "ipv4_lpm" }
  match_fields { id: 1 name: "hdr.ipv4.dstAddr" bitwidth: 32 match_type: LPM }
  action_refs { id: 16777217 } size: 1024 }
tables { preamble { id: 33554434 name: "MyIngress.acl" alias: "acl" }
  match_fields { id: 1 name: "hdr.ipv4.protocol" bitwidth: 8 match_type: TERNARY }
  match_fields { id: 2 name: "meta.l4_port" bitwidth: 16 match_type: RANGE }
  action_refs { id: 16777217 } size: 1024 }
actions { preamble { id: 16777217 name: "MyIngress.set_nhop" alias: "set_nhop" }
  params { id: 1 name: "dstAddr" bitwidth: 48 } params { id: 2 name: "port" bitwidth: 9 } }
"""


@pytest.fixture
def client():
    info = text_format.Parse(P4INFO, p4info_pb2.P4Info())
    c = P4RuntimeClient("s1", "127.0.0.1:1", device_id=1)
    c.index = P4InfoIndex(info)
    return c


def test_values_are_canonical_and_checked():
    assert encode_value(0, 9, "x") == b"\x00"
    assert encode_value(256, 9, "x") == b"\x01\x00"
    assert encode_value("10.0.1.1", 32, "x") == b"\x0a\x00\x01\x01"
    assert encode_value("00:00:00:00:00:05", 48, "x") == b"\x05"
    with pytest.raises(P4InfoError, match="does not fit in 9 bits"):
        encode_value(512, 9, "port")


def test_lpm_entry_by_alias_and_field_suffix(client):
    entry = client.table_entry(TableEntrySpec("ipv4_lpm", {"dstAddr": ("10.0.2.0", 24)}, "set_nhop",
                                              {"dstAddr": "02:00:00:00:00:02", "port": 3}))
    assert entry.table_id == 33554433
    assert entry.match[0].lpm.value == b"\x0a\x00\x02\x00" and entry.match[0].lpm.prefix_len == 24
    assert [(p.param_id, p.value) for p in entry.action.action.params] == [(1, b"\x02\x00\x00\x00\x00\x02"), (2, b"\x03")]


def test_ternary_and_range(client):
    entry = client.table_entry(TableEntrySpec("MyIngress.acl", {"hdr.ipv4.protocol": (17, 0xFF),
                                                                "l4_port": (4000, 5000)},
                                              "set_nhop", {"dstAddr": 1, "port": 1}, priority=10))
    assert entry.priority == 10
    assert entry.match[0].ternary.mask == b"\xff"
    assert entry.match[1].range.low == (4000).to_bytes(2, "big")


def test_unknown_names_list_what_exists(client):
    with pytest.raises(P4InfoError, match="no table named 'nope'.*MyIngress.acl"):
        client.table_entry(TableEntrySpec("nope", {}, "set_nhop", {}))
    with pytest.raises(P4InfoError, match="no parameter 'mac'.*dstAddr, port"):
        client.table_entry(TableEntrySpec("ipv4_lpm", {}, "set_nhop", {"mac": 1}))
