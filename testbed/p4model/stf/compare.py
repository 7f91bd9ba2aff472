"""Expected-vs-received packet comparison, as the reference harness judges it.

Per observed port, the number of packets must match the number of `expect`
lines and the i-th packet must match the i-th expectation: every expected
nibble that is not `*` equals the received one; a received packet may be
longer than the expectation (prefix match) unless it ended with `$`.  An
`expect <port>` without data lets the port receive anything.

The report marks differing nibbles with `^` under hex rows of 16 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Expectation:
    nibbles: str          # upper-case hex digits and '*'
    exact: bool
    line: int


@dataclass
class PortExpectations:
    packets: list = field(default_factory=list)   # of Expectation
    anything: bool = False                         # an `expect <port>` without data


def mismatch_positions(expected: Expectation, received_hex: str) -> list:
    """Nibble offsets where the received packet differs from the expectation
    (offsets past the received end count as differences)."""
    out = [i for i, e in enumerate(expected.nibbles)
           if e != "*" and (i >= len(received_hex) or received_hex[i] != e)]
    if expected.exact and len(received_hex) > len(expected.nibbles):
        out.extend(range(len(expected.nibbles), len(received_hex)))
    return out


def _rows(text: str, marks: set, width: int) -> list:
    """Hex text split in rows of 16 bytes, with the marker row."""
    rows = []
    for start in range(0, max(width, 1), 32):
        cells, markers = [], []
        for i in range(start, min(start + 32, width)):
            cells.append(text[i] if i < len(text) else " ")
            markers.append("^" if i in marks else " ")
            if i % 2 == 1:
                cells.append(" ")
                markers.append(" ")
        rows.append((start // 2, "".join(cells).rstrip(), "".join(markers).rstrip()))
    return rows


def render_diff(expected: Expectation, received_hex: str, marks: list) -> list:
    """Lines showing expectation and packet one above the other."""
    width = max(len(expected.nibbles), len(received_hex))
    exp_rows = _rows(expected.nibbles, set(marks), width)
    got_rows = _rows(received_hex, set(marks), width)
    lines = []
    for (offset, exp, mark), (_o, got, _m) in zip(exp_rows, got_rows):
        lines.append(f"    {offset:04x}  expected {exp}")
        lines.append(f"          received {got}")
        if mark:
            lines.append(f"                   {mark}")
    return lines


def compare_port(port: int, expectations: PortExpectations, received: list) -> list:
    """Problems on one port, each a list of report lines (empty: all good)."""
    if expectations.anything:
        return []
    problems = []
    wanted = expectations.packets
    if len(wanted) != len(received):
        problems.append([f"  port {port}: expected {len(wanted)} packet(s), received "
                         f"{len(received)}"])
    for i, (exp, data) in enumerate(zip(wanted, received)):
        got = data.hex().upper()
        marks = mismatch_positions(exp, got)
        if not marks:
            continue
        reason = []
        if len(got) < len(exp.nibbles):
            reason.append(f"too short: {len(got) // 2} bytes, expected at least "
                          f"{(len(exp.nibbles) + 1) // 2}")
        elif exp.exact and len(got) > len(exp.nibbles):
            reason.append(f"too long: {len(got) // 2} bytes, expected exactly "
                          f"{(len(exp.nibbles) + 1) // 2}")
        diff_bytes = sorted({m // 2 for m in marks if m < min(len(got), len(exp.nibbles))})
        if diff_bytes:
            reason.append(f"{len(diff_bytes)} byte(s) differ, first at offset {diff_bytes[0]}")
        problems.append([f"  port {port}, packet {i + 1} (expect at line {exp.line}): "
                         + "; ".join(reason)] + render_diff(exp, got, marks))
    for j in range(len(received), len(wanted)):
        problems.append([f"  port {port}, packet {j + 1} (expect at line {wanted[j].line}): "
                         f"not received",
                         f"    expected {wanted[j].nibbles}{'$' if wanted[j].exact else ''}"])
    for j in range(len(wanted), len(received)):
        problems.append([f"  port {port}, packet {j + 1}: unexpected",
                         f"    received {received[j].hex().upper()}"])
    return problems
