"""The spread over repetitions: variants that differ only in `seed`, side by side.

A scenario that varies `seed` repeats the same experiment with other random
choices (permutation pairs, UDP source ports and so ECMP placement, spraying
draws). One seed is one sample of the placement lottery; the report gives the
mean and the range over the seeds of each group's headline figures.
"""

from __future__ import annotations

import statistics

FIGURES = (
    ("goodput (Mbit/s)", lambda s: s.get("goodput_mbps")),
    ("goodput measured / ideal", lambda s: (s.get("measured_over_ideal") or {}).get("goodput")),
    ("completion p50 (ms)", lambda s: s.get("completion_p50_ms")),
    ("completion p99 (ms)", lambda s: s.get("completion_p99_ms")),
)


def _assignments(name: str) -> list[tuple[str, str]]:
    return [tuple(part.split("=", 1)) for part in name.split(",") if "=" in part]


def seed_groups(names: list[str]) -> dict[str, list[str]]:
    """Variant names grouped by everything but their seed (groups of two or more only)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        pairs = _assignments(name)
        if not any(key == "seed" for key, _ in pairs):
            continue
        rest = ",".join(f"{k}={v}" for k, v in pairs if k != "seed") or "all"
        groups.setdefault(rest, []).append(name)
    return {group: members for group, members in groups.items() if len(members) > 1}


def seed_lines(summaries: dict[str, dict]) -> list[str]:
    """A table of mean and [min, max] over seeds per group, or nothing without a seed axis."""
    groups = seed_groups(list(summaries))
    if not groups:
        return []
    lines = ["Over seeds (mean [min, max], n = seeds):", "",
             "| | " + " | ".join(f"{g} (n={len(m)})" for g, m in groups.items()) + " |",
             "|---|" + "---|" * len(groups)]
    for label, get in FIGURES:
        cells = []
        for members in groups.values():
            values = [v for v in (get(summaries[m]) for m in members) if v is not None]
            cells.append(f"{statistics.fmean(values):.3g} [{min(values):.3g}, {max(values):.3g}]"
                         if values else "n/a")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines + [""]
