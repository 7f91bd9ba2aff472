"""What two targets sent for one STF file, compared port by port (`--target both`).

Why: an STF file only checks what its author expected; two targets that
both pass can still differ on a port the file leaves open (`expect <port>`
without data, a prefix match), and when both fail the question is whether
they fail alike.  So every observed port's packets from one target are
compared with the other's: same count, same bytes, in order.  Differences
are reported per port and packet with the marked diff compare.py draws.
"""

from __future__ import annotations

from testbed.p4model.stf import compare
from testbed.p4model.stf.result import FileResult


def differences(a: FileResult, b: FileResult) -> list:
    """Problems (lists of report lines) between a's and b's outputs; empty: the same."""
    if a.error is not None or b.error is not None:
        failed = [r.target for r in (a, b) if r.error is not None]
        return [[f"  not compared: {' and '.join(failed)} could not run the file"]]
    problems = []
    for port in sorted(set(a.received) | set(b.received)):
        got_a, got_b = a.received.get(port, []), b.received.get(port, [])
        if len(got_a) != len(got_b):
            problems.append([f"  port {port}: {a.target} sent {len(got_a)} packet(s), "
                             f"{b.target} {len(got_b)}"])
        for i, (pa, pb) in enumerate(zip(got_a, got_b)):
            if pa == pb:
                continue
            ref = compare.Expectation(pa.hex().upper(), True, 0)
            hex_b = pb.hex().upper()
            marks = compare.mismatch_positions(ref, hex_b)
            lines = [f"  port {port}, packet {i + 1}: {a.target} and {b.target} differ "
                     f"({len(pa)} vs {len(pb)} bytes)"]
            for line in compare.render_diff(ref, hex_b, marks):
                lines.append(line.replace("expected", f"{a.target:>8}")
                             .replace("received", f"{b.target:>8}"))
            problems.append(lines)
        longer, name = (got_a, a.target) if len(got_a) > len(got_b) else (got_b, b.target)
        for j in range(min(len(got_a), len(got_b)), len(longer)):
            problems.append([f"  port {port}, packet {j + 1}: only {name} sent it",
                             f"    {longer[j].hex().upper()}"])
    return problems
