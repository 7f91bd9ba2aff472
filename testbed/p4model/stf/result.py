"""What one STF file gave on one target, and how its verdict is printed.

Both runners (builtin: runner.py, bmv2: bmv2.py) return a FileResult, so
the verdict lines are the same whatever the target and the differential
mode (differential.py) can compare what two targets sent, port by port.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from testbed.p4model.stf import compare


@dataclass
class FileResult:
    path: str
    target: str                                    # "builtin" or "bmv2"
    received: dict = field(default_factory=dict)   # observed port -> [bytes], in departure order
    problems: list = field(default_factory=list)   # compare.compare_port problems
    error: str | None = None                       # the file could not be run: why

    @property
    def passed(self) -> bool:
        return self.error is None and not self.problems


def expectations(commands) -> tuple:
    """(observed ports, port -> PortExpectations) of a parsed STF file: the
    ports named by a packet or expect line are the harness's interfaces."""
    observed = {c.port for c in commands if c.kind in ("packet", "expect")}
    expected = defaultdict(compare.PortExpectations)
    for cmd in commands:
        if cmd.kind != "expect":
            continue
        exp = expected[cmd.port]
        if cmd.data or cmd.exact:
            exp.packets.append(compare.Expectation(cmd.data, cmd.exact, cmd.line))
        else:
            exp.anything = True
    return observed, expected


def judge(observed, expected, received: dict) -> list:
    """Every observed port's problems, in port order."""
    problems = []
    for port in sorted(observed):
        problems.extend(compare.compare_port(port, expected[port], received.get(port, [])))
    return problems


def print_verdict(result: FileResult, out, label: str = "") -> None:
    """PASS / FAIL line (label: e.g. " (bmv2)"), then the mismatches."""
    if result.error is not None:
        print(result.error, file=out)
        print(f"FAIL {result.path}{label}", file=out)
    elif result.problems:
        print(f"FAIL {result.path}{label}: {len(result.problems)} mismatch(es)", file=out)
        for lines in result.problems:
            for line in lines:
                print(line, file=out)
    else:
        print(f"PASS {result.path}{label}", file=out)
