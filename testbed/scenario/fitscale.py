"""The largest rate scale whose CPU fits a budget, when the costs per packet depend on the scale.

The model: the planned CPU at a rate scale s is idle + s x slope, where the
slope (packets per second at scale 1 times the CPU each costs) holds between
two steps, the scales at which the chosen costs can change
(calibration.turning_loads). Across a step the CPU can jump up or down: a
faster scale's cost may come from faster, cheaper runs.

The rule: the largest fitting scale is where the CPU first exceeds the budget
going up from zero. On each step the CPU grows with the scale, so walking the
steps upwards and solving each one's line for the budget finds it exactly.
Every slower scale fits too. So `--fit`'s margin below it fits, even where a
faster scale that a cheaper step lets pass lies beyond it.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def first_crossing(cpu_at: Callable[[float], tuple[float, float]], steps: list[float], budget: float) -> float:
    """The scale at which the CPU first exceeds `budget`, going up from zero (inf: never; 0: the idle
    part alone does not fit). `cpu_at(s)` gives (busy, idle) CPU-s/s at scale s, busy in proportion
    to s between two `steps`."""
    edges = [0.0, *sorted({s for s in steps if 0 < s < math.inf}), math.inf]
    for low, high in zip(edges, edges[1:]):
        if low == 0:
            inside = 1.0 if high == math.inf else high / 2
        else:
            inside = 2 * low if high == math.inf else math.sqrt(low * high)
        busy, idle = cpu_at(inside)
        if idle >= budget:
            return 0.0
        slope = busy / inside
        if idle + low * slope > budget:  # the step up at `low` crosses the budget
            return low
        if slope > 0 and (high == math.inf or idle + high * slope > budget):
            return (budget - idle) / slope
    return math.inf
