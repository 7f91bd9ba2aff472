"""Priority flow control (IEEE 802.1Qbb): the pause frame, as both ends of a link read it.

Why here: the switch's traffic manager sends and obeys these frames, and the
host agent's NIC obeys them too, so the one codec lives with the TM and the
host imports it (host is the higher layer).

A PFC frame is an Ethernet MAC control frame: destination 01:80:C2:00:00:01,
EtherType 0x8808, opcode 0x0101, a class-enable vector (bit i: priority i is
named) and eight 16-bit pause times in quanta of 512 bit times, padded to the
60-byte minimum.  A time above 0 pauses that priority for so many quanta; 0
resumes it at once (XON).  The testbed sends XOFF with the longest time and an
explicit XON; the time is the guard that ends a pause whose XON was lost.
"""

from __future__ import annotations

import struct

ETHERTYPE = 0x8808
OPCODE = 0x0101
DESTINATION = bytes.fromhex("0180c2000001")
QUANTUM_BITS = 512
XOFF_QUANTA = 0xFFFF
MIN_FRAME = 60
_BODY = struct.Struct("!HH8H")  # opcode, class-enable vector, eight pause times
_HEADER_LEN = 14
FRAME_LEN = MIN_FRAME


class PauseFrameError(ValueError):
    """Bytes that are not a PFC frame this codec can read."""


def build(source_mac: bytes, priority: int, pause: bool, quanta: int = XOFF_QUANTA) -> bytes:
    """One frame naming one priority: XOFF for `quanta` (pause) or XON (resume)."""
    if not 0 <= priority < 8:
        raise ValueError(f"a PFC priority is 0..7, got {priority}")
    if len(source_mac) != 6:
        raise ValueError("a source MAC is 6 bytes")
    times = [0] * 8
    times[priority] = quanta if pause else 0
    frame = DESTINATION + source_mac + ETHERTYPE.to_bytes(2, "big") + _BODY.pack(OPCODE, 1 << priority, *times)
    return frame + bytes(MIN_FRAME - len(frame))


def is_pause_frame(frame: bytes) -> bool:
    """True for any MAC control frame (EtherType 0x8808): the MAC takes it, not the pipeline."""
    return len(frame) >= _HEADER_LEN and frame[12] == 0x88 and frame[13] == 0x08


def parse(frame: bytes) -> list[tuple[int, int]]:
    """(priority, quanta) for each priority the frame names; quanta 0 is XON."""
    if len(frame) < _HEADER_LEN + _BODY.size or not is_pause_frame(frame):
        raise PauseFrameError(f"a {len(frame)}-byte frame is not a PFC frame")
    opcode, enabled, *times = _BODY.unpack_from(frame, _HEADER_LEN)
    if opcode != OPCODE:
        raise PauseFrameError(f"MAC control opcode {opcode:#06x} is not PFC's {OPCODE:#06x}")
    return [(prio, times[prio]) for prio in range(8) if enabled >> prio & 1]


def quanta_s(quanta: int, rate_bps: float) -> float:
    """How long `quanta` pause quanta last on a link of `rate_bps` (0 rate: forever)."""
    return quanta * QUANTUM_BITS / rate_bps if rate_bps else float("inf")
