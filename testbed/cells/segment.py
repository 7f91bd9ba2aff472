"""Messages <-> fixed-size cells, with a CRC-32 trailer for end-to-end checks.

The transport appends CRC-32 (zlib) of the application bytes to every
message, so the receiver can prove that what it hands to the application is
byte for byte what was sent, whatever happened to the cells on the way
(duplicates, injected garbage, reordering). The DATA header's `aux` field
carries the framed length (payload + 4-byte trailer); the last cell is
zero-padded to the configured cell size, which is what switches check.
"""

from __future__ import annotations

import zlib

TRAILER_LEN = 4


def frame(payload: bytes) -> bytes:
    """Application bytes + CRC-32 trailer (big-endian)."""
    return payload + zlib.crc32(payload).to_bytes(TRAILER_LEN, "big")


class Framed:
    """A message framed ahead of its start (frame_ahead): the framed bytes (`data`), which a sender
    takes as they are instead of framing the payload when the message starts. It holds the bytes
    rather than being a bytes subclass, which a compiled build (testbed/compiled.py) cannot make."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    @property
    def payload_bytes(self) -> int:
        return len(self.data) - TRAILER_LEN


def frame_ahead(payload: bytes) -> Framed:
    """frame(payload), kept as a Framed: the copy and the CRC are paid when the host builds its
    messages ahead, not at the instant the message starts."""
    return Framed(frame(payload))


def framed(message: bytes | Framed) -> tuple[bytes, int]:
    """A message handed to a sender as its framed bytes and its payload's length: a Framed as it
    is, any other bytes framed now."""
    if isinstance(message, Framed):
        return message.data, message.payload_bytes
    return frame(message), len(message)


def unframe(framed: bytes) -> bytes | None:
    """Application bytes if the trailer matches, else None."""
    if len(framed) < TRAILER_LEN:
        return None
    payload, trailer = framed[:-TRAILER_LEN], framed[-TRAILER_LEN:]
    if zlib.crc32(payload).to_bytes(TRAILER_LEN, "big") != trailer:
        return None
    return payload


def cell_count(framed_len: int, cell_size: int) -> int:
    return max(1, -(-framed_len // cell_size))


def cell_body(framed: bytes, index: int, cell_size: int) -> bytes:
    """Body of cell `index`, zero-padded to cell_size."""
    chunk = framed[index * cell_size : (index + 1) * cell_size]
    if len(chunk) < cell_size:
        chunk = chunk + bytes(cell_size - len(chunk))
    return chunk


def reassemble(bodies: list[bytes], framed_len: int) -> bytes:
    """Concatenate cell bodies and drop the padding."""
    return b"".join(bodies)[:framed_len]


def unframe_cells(bodies: list[bytes], framed_len: int) -> bytes | None:
    """A message's application bytes from its cell bodies in order, if its trailer matches, else
    None: unframe(reassemble(bodies, framed_len)) with the message copied once, not three times
    (the join, the cut of the padding and the cut of the trailer each made a fresh buffer). Bodies
    that hold fewer than `framed_len` bytes are not a message (None)."""
    n = framed_len - TRAILER_LEN
    if n < 0:
        return None
    parts: list[bytes] = []
    have = 0
    rest = b""  # what follows the application bytes: the trailer, then padding
    for i, body in enumerate(bodies):
        if have + len(body) < n:
            parts.append(body)
            have += len(body)
            continue
        cut = n - have
        parts.append(body[:cut])
        rest = body[cut:cut + TRAILER_LEN]
        for more in bodies[i + 1:]:  # the trailer may run over into the next cells
            if len(rest) >= TRAILER_LEN:
                break
            rest += more[:TRAILER_LEN]
        have = n
        break
    if have < n or len(rest) < TRAILER_LEN:
        return None
    payload = b"".join(parts)
    if zlib.crc32(payload).to_bytes(TRAILER_LEN, "big") != rest[:TRAILER_LEN]:
        return None
    return payload


class Unframer:
    """A message's cell bodies taken one at a time, in order; `result()` is unframe_cells of them.

    With `expected` (the bytes the application will check the message against, of the message's
    length), each cell's bytes are compared with their place in it as they come (`matches`) and
    the CRC-32 advances with them, and while they all match none is kept: a message that matched
    to its end is `expected` itself, byte for byte, so its end costs a comparison of four bytes
    and it is delivered as that object, with no copy. From a cell that differs on, or from the
    start without `expected`, the bodies are kept (the bytes before that cell were the expected
    ones) and joined and checked at the end, once, as unframe_cells does."""

    __slots__ = ("framed_len", "size", "have", "bodies", "trailer", "crc", "expected", "matches")

    def __init__(self, framed_len: int, expected: bytes | None = None) -> None:
        self.framed_len = framed_len
        self.size = framed_len - TRAILER_LEN
        self.expected = expected
        self.matches = expected is not None and len(expected) == self.size
        # the bodies, kept while the message is not (or no longer) the expected bytes; else None
        self.bodies: list[bytes] | None = None if self.matches else []
        self.have = 0  # application bytes compared so far (while nothing is kept)
        self.trailer = b""
        self.crc = 0

    def add(self, body: bytes) -> None:
        if self.bodies is not None:
            self.bodies.append(body)
            return
        expected = self.expected
        assert expected is not None  # nothing is kept only while the bytes are the expected ones
        have = self.have
        take = self.size - have
        if take > 0:
            part = body if len(body) <= take else body[:take]
            if not expected.startswith(part, have):  # compared in place: a slice would copy the cell
                self.matches = False  # keep the bytes from here on; those before were the expected
                self.bodies = [expected[:have], body] if have else [body]
                return
            self.crc = zlib.crc32(part, self.crc)
            self.have = have + len(part)
            if len(body) <= take:
                return
            body = body[take:]
        if len(self.trailer) < TRAILER_LEN:
            self.trailer += body[:TRAILER_LEN - len(self.trailer)]

    def result(self) -> bytes | None:
        """The application bytes if the bodies held the whole message and its trailer matches,
        else None (unframe_cells's verdict)."""
        if self.bodies is not None:
            return unframe_cells(self.bodies, self.framed_len)
        if self.size < 0 or self.have < self.size or len(self.trailer) < TRAILER_LEN:
            return None
        if self.crc.to_bytes(TRAILER_LEN, "big") != self.trailer:
            return None
        return self.expected
