"""A benchmark's stated target, checked where its figure is printed.

The rule: a line that names a target says whether the figure met it, and
a figure that misses it is recorded here, so `python -m benchmarks` (and a
benchmark run on its own) exits non-zero instead of printing the miss
beside a success. A figure with no target prints none.
"""

from __future__ import annotations

missed: list[str] = []


def at_least(line: str, value: float, target: float, shown: str) -> str:
    """`line` with its target `shown` (the target as the reader reads it) and
    whether `value` reached `target`; a miss is recorded in `missed`."""
    if value >= target:
        return f"{line} (target >= {shown}: met)"
    missed.append(line)
    return f"{line} (target >= {shown}: MISSED)"


def exit_code() -> int:
    """1 when any figure missed its target, else 0."""
    return 1 if missed else 0
