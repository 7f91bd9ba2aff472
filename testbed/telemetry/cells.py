"""How a report's tables write one figure in a cell."""

from __future__ import annotations


def fixed(value: float | None, digits: int) -> str:
    """`value` with `digits` decimals, or `-` where there is no figure."""
    return "-" if value is None else f"{value:.{digits}f}"
