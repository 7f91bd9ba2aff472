"""Text commands without sockets: parsing, errors, start-up configuration."""

import pytest

from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import TMCommandError, TMCommands, TrafficManager


@pytest.fixture
def commands():
    return TMCommands(TrafficManager(ManualClock(), priority_queues=4, ports=[1, 2]))


def rows(commands, port):
    return {r["priority"]: r for r in commands.execute(f"queue_stats {port}")["result"]}


def test_bmv2_scopes_all_ports_one_port_one_queue(commands):
    assert commands.execute("set_queue_rate 500")["result"]["queues"] == 8
    assert commands.execute("set_queue_rate 100 1")["result"]["queues"] == 4
    reply = commands.execute("set_queue_rate 7 1 3")
    assert reply == {"ok": True, "command": "set_queue_rate",
                     "result": {"rate_pps": 7, "queues": 1, "scope": "port 1 priority 3"}}
    assert [r["rate_pps"] for r in rows(commands, 1).values()] == [100, 100, 100, 7]
    assert [r["rate_pps"] for r in rows(commands, 2).values()] == [500] * 4
    commands.execute("set_queue_depth 16 2 0")
    assert rows(commands, 2)[0]["limit_packets"] == 16 and rows(commands, 2)[1]["limit_packets"] == 64


def test_link_commands_and_stats(commands):
    assert commands.execute("set_port_rate_bps 20000000 2")["ok"]
    assert commands.execute("set_port_delay_us 12.5 2")["ok"]
    assert commands.execute("set_queue_depth_bytes 3000 2")["ok"]
    ports = {p["port"]: p for p in commands.execute("tm_stats")["result"]["ports"]}
    assert ports[2]["rate_bps"] == 20_000_000 and ports[2]["delay_us"] == 12.5
    assert ports[1]["rate_bps"] == 0
    assert rows(commands, 2)[3]["limit_bytes"] == 3000
    assert "queues" not in commands.execute("tm_stats")["result"]
    assert "set_port_delay_us" in commands.execute("help")["result"]
    assert commands.execute("help set_queue_rate")["result"]["usage"] == (
        "set_queue_rate <rate_pps> [<egress_port> [<priority>]]")


@pytest.mark.parametrize("line, words", [
    ("set_queue_rate", ["set_queue_rate", "expected 1..3 argument(s), got 0", "usage"]),
    ("set_queue_rate fast", ["set_queue_rate", "<rate_pps>", "'fast'"]),
    ("set_queue_rate -5", ["set_queue_rate", "<rate_pps>", ">= 0"]),
    ("set_queue_rate 10 1 4", ["<priority>", "0..3", "'4'"]),
    ("set_queue_depth 10 511", ["set_queue_depth", "<egress_port>", "'511'"]),
    ("set_queue_depth 1.5", ["set_queue_depth", "<nb_pkts>", "integer"]),
    ("set_queue_depth 10 1 2 9", ["expected 1..3 argument(s), got 4"]),
    ("set_port_rate_bps 1e6 1", ["set_port_rate_bps", "<rate_bps>", "'1e6'"]),
    ("set_port_delay_us nan", ["set_port_delay_us", "<delay_us>"]),
    ("queue_stats x", ["queue_stats", "<egress_port>"]),
    ("set_queue_depth 99999999", ["set_queue_depth", "0..524287"]),
    ("show_tables", ["unknown command 'show_tables'", "set_queue_rate"]),
    ("help nothing", ["unknown command 'nothing'"]),
    ("set_queue_rate 'unclosed", ["cannot split"]),
])
def test_errors_name_the_command_and_argument(commands, line, words):
    reply = commands.execute(line)
    assert reply["ok"] is False
    for word in words:
        assert word in reply["error"]


def test_blank_and_comment_lines_are_not_commands(commands):
    assert commands.execute("   ") is None
    assert commands.execute("# set_queue_rate 1") is None
    assert commands.execute("set_queue_rate 3 1  # per port")["ok"]


def test_apply_all_for_start_up_stops_at_the_bad_line(commands):
    lines = ["# link model", "set_port_rate_bps 1000000", "", "set_queue_depth 8 1"]
    assert commands.apply_all(lines, source="switch.conf") == 2
    with pytest.raises(TMCommandError, match=r"^argv:2: set_queue_depth: argument <nb_pkts>"):
        commands.apply_all(["set_queue_depth 8", "set_queue_depth lots"], source="argv")
