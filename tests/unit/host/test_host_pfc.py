"""The host NIC's PFC, sans-IO: a port's pause state from its frames, and the cells it holds."""

import pytest

from testbed.host import pfc

from testbed.cells import wire
from testbed.cells import pfc as frame

MAC = bytes.fromhex("020000000001")
RATE = 10e6  # one quantum is 51.2 us
QUANTUM_S = 512 / RATE


def xoff(priority=0, quanta=frame.XOFF_QUANTA):
    return frame.build(MAC, priority, True, quanta)


def xon(priority=0):
    return frame.build(MAC, priority, False)


def test_xoff_pauses_until_xon_resumes():
    port = pfc.PortPause(RATE)
    assert not port.paused(0, 0.0)
    port.on_frame(xoff(), 1.0)
    assert port.paused(0, 1.0) and port.paused(0, 1.5)
    port.on_frame(xon(), 2.0)
    assert not port.paused(0, 2.0) and port.resumes_at(0) == 2.0
    assert (port.xoff_frames, port.xon_frames, port.malformed_frames) == (1, 1, 0)


def test_a_pause_ends_by_itself_at_its_guard():
    port = pfc.PortPause(RATE)
    port.on_frame(xoff(quanta=1000), 1.0)
    guard = 1.0 + 1000 * QUANTUM_S
    assert port.resumes_at(0) == pytest.approx(guard)
    assert port.paused(0, guard - 1e-6) and not port.paused(0, guard + 1e-6)
    port.on_frame(xoff(quanta=1000), 1.02)  # an XOFF while paused renews the guard from its arrival
    assert port.resumes_at(0) == pytest.approx(1.02 + 1000 * QUANTUM_S)


def test_other_priorities_are_not_paused():
    port = pfc.PortPause(RATE)
    port.on_frame(xoff(priority=0), 0.0)
    assert [port.paused(p, 0.1) for p in range(8)] == [True] + [False] * 7
    port.on_frame(xoff(priority=3), 0.1)
    port.on_frame(xon(priority=3), 0.2)
    assert port.paused(0, 0.3) and not port.paused(3, 0.3)


def test_malformed_frames_are_counted_and_change_nothing():
    port = pfc.PortPause(RATE)
    port.on_frame(xoff(), 0.0)
    classic_pause = bytearray(xon())
    classic_pause[14] = 0x00  # opcode 0x0001: 802.3x PAUSE, not PFC
    for bad in (b"", xon()[:20], bytes(60), bytes(classic_pause)):
        port.on_frame(bad, 0.5)
    assert port.malformed_frames == 4 and port.xon_frames == 0
    assert port.paused(0, 0.5)


def test_paused_seconds_add_closed_pauses_and_the_open_one():
    port = pfc.PortPause(RATE)
    port.on_frame(xoff(), 1.0)
    port.on_frame(xon(), 1.25)
    port.on_frame(xon(), 1.5)  # an XON with nothing paused changes nothing
    assert port.paused_s(2.0) == pytest.approx(0.25)
    port.on_frame(xoff(quanta=1000), 3.0)  # ends at its guard, 51.2 ms later
    assert port.paused_s(3.01) == pytest.approx(0.26)  # the open pause up to now
    assert port.paused_s(9.0) == pytest.approx(0.25 + 1000 * QUANTUM_S)
    port.on_frame(xoff(), 10.0)
    assert port.paused_s(10.5, priority=0) == pytest.approx(0.75 + 1000 * QUANTUM_S)
    assert port.paused_s(10.5, priority=1) == 0.0


def test_priority_follows_the_fabric_program():
    assert [pfc.priority_of(t) for t in sorted(wire.TYPE_NAMES)] == [0, 1, 0, 0, 0, 1, 0]


def test_a_paused_gate_holds_data_in_order_and_lets_credits_and_cnps_pass():
    gate = pfc.PauseGate(RATE)
    assert gate.admit(wire.DATA, 0.0, "d0", 0.0)
    gate.pause.on_frame(xoff(), 0.1)
    assert not gate.admit(wire.DATA, 0.2, "d1", 0.2)
    assert not gate.admit(wire.ACK, 0.3, "a1", 0.3)
    assert not gate.admit(wire.CREDIT_REQUEST, 0.35, "r1", 0.35)
    assert gate.admit(wire.CREDIT, 0.4, "c1", 0.4) and gate.admit(wire.CNP, 0.4, "n1", 0.4)
    assert gate.next_start(0.5, 0.0) is None
    assert gate.wake_at(0.0) == pytest.approx(0.1 + frame.XOFF_QUANTA * QUANTUM_S)
    gate.pause.on_frame(xon(), 0.6)
    # Not released yet (the loop releases first): a new cell still queues behind the held ones.
    assert not gate.admit(wire.DATA, 0.6, "d2", 0.6)
    # They leave one at a time as the wire frees up (a cell takes 0.05 s here)
    starts, free = [], 0.0
    while (start := gate.next_start(0.71, free)) is not None:
        starts.append((round(start, 9), gate.pop()))
        free = start + 0.05
    assert starts == [(0.6, "d1"), (0.65, "a1"), (0.7, "r1")]
    assert gate.wake_at(free) == pytest.approx(0.75)  # d2 waits for the wire
    gate.pause.on_frame(xoff(), 0.72)  # and a new pause holds it
    assert gate.next_start(0.8, free) is None
    gate.pause.on_frame(xon(), 0.8)
    assert gate.next_start(0.8, free) == 0.8 and gate.pop() == "d2"
    assert gate.wake_at(free) is None
    assert gate.admit(wire.DATA, 0.8, "d3", 0.8)
    stats = gate.stats(1.0)
    assert stats == {"xoff_frames": 2, "xon_frames": 2, "malformed_frames": 0, "paused_s": pytest.approx(0.58),
                     "held_cells_max": 4, "held_cells_now": 0}


def test_held_cells_start_at_the_guards_end_or_their_own_release_if_later():
    gate = pfc.PauseGate(RATE)
    gate.pause.on_frame(xoff(quanta=1000), 0.0)
    guard = 1000 * QUANTUM_S
    assert not gate.admit(wire.DATA, 0.01, "early", 0.01)
    assert gate.wake_at(0.0) == pytest.approx(guard)
    assert gate.next_start(guard - 1e-6, 0.0) is None
    # A late wake-up: released cells keep their own time if it is after the resume.
    assert not gate.admit(wire.DATA, guard + 0.002, "late", guard + 0.003)
    assert gate.next_start(guard + 0.003, 0.0) == pytest.approx(guard) and gate.pop() == "early"
    assert gate.next_start(guard + 0.003, guard + 0.001) == pytest.approx(guard + 0.002) and gate.pop() == "late"


def test_summed_adds_ports_and_keeps_each():
    a, b = pfc.PauseGate(RATE), pfc.PauseGate(RATE)
    a.pause.on_frame(xoff(), 0.0)
    a.pause.on_frame(xon(), 0.5)
    b.pause.on_frame(b"junk", 0.0)
    total = pfc.summed({"h1-eth0": a.stats(1.0), "h1-eth1": b.stats(1.0)})
    assert (total["xoff_frames"], total["xon_frames"], total["malformed_frames"]) == (1, 1, 1)
    assert total["paused_s"] == 0.5 and total["ports"]["h1-eth1"]["malformed_frames"] == 1
