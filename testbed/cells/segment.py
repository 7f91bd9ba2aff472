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


class Framed(bytes):
    """A message framed ahead of its start (frame_ahead): the framed bytes, which a sender takes as
    they are instead of framing the payload when the message starts."""

    @property
    def payload_bytes(self) -> int:
        return len(self) - TRAILER_LEN


def frame_ahead(payload: bytes) -> Framed:
    """frame(payload), kept as a Framed: the copy and the CRC are paid when the host builds its
    messages ahead, not at the instant the message starts."""
    return Framed(frame(payload))


def framed(message: bytes) -> tuple[bytes, int]:
    """A message handed to a sender as its framed bytes and its payload's length: a Framed as it
    is, any other bytes framed now."""
    if isinstance(message, Framed):
        return message, message.payload_bytes
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
