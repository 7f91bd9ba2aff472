"""The STF runner's queue model (stf/burst.py) on the builtin target, no
bmv2 needed: a burst of packets waits in the switch's priority queues, so
a priority with no queue is dropped and, with two queues, a later
priority-1 packet leaves before an earlier priority-0 one that waits.
Program: tests/p4programs/differential/queue_priority.p4 (byte 0 = egress
port, byte 1 = priority, byte 2 = sequence number)."""

import io
from pathlib import Path

from testbed.p4model.stf.runner import builtin_loader, run_file

PROGRAM = Path(__file__).resolve().parents[2] / "p4programs" / "differential" / "queue_priority.p4"
_LOADER = builtin_loader(str(PROGRAM))


def run(tmp_path, text: str, queues: int):
    path = tmp_path / "t.stf"
    path.write_text(text)
    out = io.StringIO()
    return run_file(_LOADER, path, out, priority_queues=queues), out.getvalue()


def seqs(result, port: int) -> list:
    return [data[2] for data in result.received[port]]


def test_a_priority_1_packet_is_dropped_with_one_queue(tmp_path):
    result, out = run(tmp_path, """
packet 0 01 01 01 00
packet 0 01 00 02 00
expect 1 01 00 02 00 $
""", queues=1)
    assert result.passed, out
    assert seqs(result, 1) == [2]
    assert "t.stf:2: packet dropped by the queues: priority 1 has no queue" in out


def test_with_two_queues_a_later_credit_overtakes_an_earlier_waiting_data_cell(tmp_path):
    text = """
packet 0 01 00 01 00
packet 0 01 01 02 00
packet 0 01 00 03 00
packet 0 01 01 04 00
expect 1
"""
    result, out = run(tmp_path, text, queues=2)
    assert result.passed, out
    assert seqs(result, 1) == [2, 4, 1, 3]
    fifo, _ = run(tmp_path, text, queues=1)         # one queue: priority 1 is dropped
    assert seqs(fifo, 1) == [1, 3]


def test_out_of_range_priority_is_dropped_with_two_queues(tmp_path):
    result, out = run(tmp_path, "packet 0 01 02 01 00\npacket 0 01 07 02 00\nexpect 1\n", queues=2)
    assert seqs(result, 1) == []
    assert "priority 2 has no queue (--priority-queues 2: priorities 0..1)" in out


def test_a_control_line_ends_the_burst(tmp_path):
    """The harness sleeps after a CLI command: what came before has left."""
    result, out = run(tmp_path, """
packet 0 01 00 01 00
mc_mgrp_create 1
packet 0 01 01 02 00
expect 1
""", queues=2)
    assert seqs(result, 1) == [1, 2], out


def test_ports_queue_independently_in_file_order_per_priority(tmp_path):
    result, out = run(tmp_path, """
packet 0 02 00 01 00
packet 0 01 00 02 00
packet 0 02 00 03 00
packet 0 01 01 04 00
expect 1
expect 2
""", queues=2)
    assert seqs(result, 1) == [4, 2]
    assert seqs(result, 2) == [1, 3]


def test_egress_clones_and_recirculated_packets_go_through_the_queues():
    where = PROGRAM.parent
    out = io.StringIO()
    result = run_file(builtin_loader(str(where / "queue_egress_copies.p4")),
                      where / "queue_egress_copies.stf", out)
    assert result.passed, out.getvalue()
