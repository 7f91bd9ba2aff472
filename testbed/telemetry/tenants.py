"""The report's first lines on tenants: was the reachability matrix as the tenants say?

From each variant's summary alone.  A simulated run measured the N x N matrix before its traffic
(`reachability`: simulation/reachability.py, one cell per ordered pair through the program and
its plan); an emulated run pinged every pair before its traffic (`pingall` with
`across_tenants`: the pairs within a tenant must answer, the pairs across must not).  A run
without tenants has neither, and gets no line.
"""

from __future__ import annotations


def reachability_lines(summaries: dict[str, dict]) -> list[str]:
    """One line per variant with tenants (and a blank line), or nothing."""
    lines = []
    for name, summary in summaries.items():
        matrix = summary.get("reachability")
        ping = summary.get("pingall") or {}
        if matrix:
            verdict = "as the tenants say" if not matrix["broken"] else (
                f"**BROKEN** in {len(matrix['broken'])} pairs (first: {matrix['broken'][0]})")
            lines.append(f"- Tenants ({name}): reachability checked before traffic, one cell per ordered pair "
                         f"through the program and plan on the simulator's switches: "
                         f"{matrix['within_reached']}/{matrix['within']} pairs within tenants reach, "
                         f"{matrix['across_reached']}/{matrix['across']} across; {verdict}.")
        elif "across_tenants" in ping:
            crossed = ping.get("crossed") or []
            verdict = "as the tenants say" if not crossed and not ping["failed"] else "**BROKEN**"
            lines.append(f"- Tenants ({name}): ping-all before traffic: {ping['pairs'] - len(ping['failed'])}"
                         f"/{ping['pairs']} pairs within tenants answered, {len(crossed)}/{ping['across_tenants']} "
                         f"across; {verdict}.")
    return lines + [""] if lines else []
