"""STF text -> commands: every command form, comments, case, and errors."""

import pytest

from testbed.p4model.stf.parser import StfError, parse_text


def one(text):
    [cmd] = parse_text(text, "t.stf")
    return cmd


def test_add_with_priority_keys_action_and_handle():
    cmd = one("ADD MyIngress.acl 10 hdr.ipv4.src:0x0A****** dport:10->20 act(port:2, tag:0x7)  = A")
    assert cmd.kind == "add" and cmd.table == "MyIngress.acl" and cmd.priority == 10
    assert cmd.keys == [("hdr.ipv4.src", "0x0A******"), ("dport", "10->20")]
    assert cmd.action.name == "act" and cmd.action.args == [("port", "2"), ("tag", "0x7")]


def test_add_without_priority_and_lpm_and_stack_names():
    cmd = one("add tbl hdr.h$0.f:0x0a000000/8 data.$valid$:1 NoAction()")
    assert cmd.priority is None
    assert cmd.keys == [("hdr.h$0.f", "0x0a000000/8"), ("data.$valid$", "1")]
    assert cmd.action.args == []


def test_setdefault_packet_expect_and_comments():
    cmds = parse_text("# header\nsetdefault t drop()  # trailing\n"
                      "packet 0 0102 03 04\nexpect 1 01** 0304 $\nEXPECT 2\n", "t.stf")
    assert [c.kind for c in cmds] == ["setdefault", "packet", "expect", "expect"]
    assert [c.line for c in cmds] == [2, 3, 4, 5]
    assert cmds[1].data == "01020304" and cmds[1].port == 0
    assert cmds[2].data == "01**0304" and cmds[2].exact
    assert cmds[3].data == "" and not cmds[3].exact


@pytest.mark.parametrize("text,words", [
    ("mirroring_add 5 3", ["5", "3"]),
    ("mirroring_add_mc 5 1", ["5", "1"]),
    ("mc_mgrp_create 1", ["1"]),
    ("mc_node_create 0 1 2 3", ["0", "1", "2", "3"]),
    ("mc_node_associate 1 0", ["1", "0"]),
    ("register_write MyIngress.r 3 0x10", ["MyIngress.r", "3", "0x10"]),
    ("register_read r 3", ["r", "3"]),
    ("register_reset r", ["r"]),
    ("counter_write c 1 2 3", ["c", "1", "2", "3"]),
    ("counter_read c 1", ["c", "1"]),
    ("meter_set_rates m 0 0.0001:1 0.0005:2", ["m", "0", "0.0001:1", "0.0005:2"]),
    ("meter_array_set_rates m 0.0001:1 0.0005:2", ["m", "0.0001:1", "0.0005:2"]),
    ("meter_get_rates m 0", ["m", "0"]),
])
def test_cli_pass_through_commands(text, words):
    assert one(text).words == words


@pytest.mark.parametrize("text", ["wait", "remove all", "check_counter c(1) packets == 2",
                                  "no_packet"])
def test_ignored_commands_parse(text):
    assert one(text).kind in {"wait", "remove", "check_counter", "no_packet"}


@pytest.mark.parametrize("text,message", [
    ("frobnicate 1", "unknown command 'frobnicate'"),
    ("packet x 00", "decimal port"),
    ("packet 1 0g", "not a hex digit"),
    ("packet 1 012", "odd number"),
    ("add t k:1 act(p:1", "missing ')'"),
    ("add t k1 act()", "expected <key>:<value>"),
    ("add t k:1", "action call"),
    ("mirroring_add 1", "takes 2 arguments"),
    ("setdefault t", "setdefault needs"),
    ("add t k:1 act(p) ", "expected <param>:<value>"),
])
def test_errors_name_file_and_line(text, message):
    with pytest.raises(StfError) as info:
        parse_text("\n" + text, "x.stf")
    assert str(info.value).startswith("x.stf:2: ")
    assert message in str(info.value)


@pytest.mark.parametrize("line", ["packet 999999 00", "expect 512 00", "packet 512 0102"])
def test_a_port_wider_than_v1models_nine_bits_is_refused_at_its_line(line):
    with pytest.raises(StfError, match=r"t\.stf:2: .* port \d+ is out of range: v1model ports are 9 bits \(0\.\.511\)"):
        parse_text("# header\n" + line + "\n", "t.stf")


def test_the_widest_port_is_accepted():
    assert one("packet 511 00").port == 511


def test_priority_queues_setting_is_read_from_a_comment():
    from testbed.p4model.stf.parser import priority_queues_of

    assert priority_queues_of("# a title\n# priority-queues: 2\npacket 1 00\n") == 2
    assert priority_queues_of("# run with --priority-queues 2\npacket 1 00\n") is None
    with pytest.raises(StfError, match="t.stf:1: priority-queues must be 1..8"):
        priority_queues_of("# priority-queues: 9\n", "t.stf")
