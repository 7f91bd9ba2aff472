"""Per-class accounting of the traffic manager and the cell classifier the switch uses."""

from testbed.cells import wire
from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import TrafficManager
from testbed.cells.classify import OTHER, cell_class
from testbed.p4model.tm.model import UNCLASSIFIED


def cell_frame(cell_type: int, body: bytes = b"") -> bytes:
    """Ethernet + IPv4 (IHL 5, UDP) + UDP to port 4793 + a cell header of that type."""
    eth = bytes(12) + b"\x08\x00"
    ip = bytes([0x45, 0]) + bytes(7) + bytes([17]) + bytes(10)
    udp = (1234).to_bytes(2, "big") + wire.CELL_UDP_PORT.to_bytes(2, "big") + bytes(4)
    head = bytes([(wire.VERSION << 4) | cell_type]) + bytes(wire.HEADER_LEN - 1)
    return eth + ip + udp + head + body


def test_cell_class_reads_the_type_nibble_of_cells_only():
    assert cell_class(cell_frame(wire.DATA, bytes(1024))) == wire.DATA
    assert cell_class(cell_frame(wire.ACK, bytes(8))) == wire.ACK
    assert cell_class(cell_frame(wire.CNP)) == wire.CNP
    ping = bytearray(cell_frame(wire.ACK))
    ping[23] = 1  # ICMP, not UDP
    assert cell_class(bytes(ping)) == OTHER
    other_port = bytearray(cell_frame(wire.ACK))
    other_port[37] ^= 1
    assert cell_class(bytes(other_port)) == OTHER
    assert cell_class(b"\x00" * 20) == OTHER


def test_queue_counts_accepted_and_dropped_per_class():
    clock = ManualClock()
    tm = TrafficManager(clock, depth=2)
    tm.set_port_rate_bps(8_000, 1)  # 1 ms per byte: nothing leaves during the burst
    assert tm.depart_now(1, 0, 0, 100, wire.DATA) is not None  # idle link: passes at once
    assert tm.offer(1, 0, "d", 0, 100, wire.DATA) >= 0
    assert tm.offer(1, 0, "a", 0, 10, wire.ACK) >= 0
    assert tm.offer(1, 0, "a2", 0, 10, wire.ACK) < 0  # full: tail drop
    assert tm.offer(1, 0, "x", 0, 7) < 0  # no class given
    row = tm.queue_stats(1)[0]
    assert row["by_class"] == {
        str(wire.DATA): {"packets": 2, "bytes": 200, "dropped": 0},
        str(wire.ACK): {"packets": 1, "bytes": 10, "dropped": 1},
        str(UNCLASSIFIED): {"packets": 0, "bytes": 0, "dropped": 1},
    }
    assert sum(c["dropped"] for c in row["by_class"].values()) == row["dropped_full"]
    assert sum(c["bytes"] for c in row["by_class"].values()) == row["enqueued_bytes"]
