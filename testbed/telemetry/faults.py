"""The report's lines on each variant's faults: when each happened, and what it touched.

From the summaries alone (`faults`, `faults_not_executed`), on the scenario's
clock (telemetry.clock.on_scenario_clock): each carried-out fault with its
actual and planned time and what it did (interfaces, traffic-manager
commands, a restart's configure time, the controller's reroute), each one
that failed with its error, and each the run ended before.  Both reports use
it: the emulated one (report.py) and the simulator's (collectives.py).
"""

from __future__ import annotations


def _fault_detail(e: dict) -> str:
    """What a carried-out fault touched, and for a switch restart what it took."""
    parts = []
    if e.get("interfaces"):
        parts.append(", ".join(e["interfaces"]))
    if e.get("tm_commands"):
        parts.append("; ".join(e["tm_commands"]))
    if "configured_ms" in e:
        parts.append(f"started and configured again in {e['configured_ms']:,.1f} ms")
    reroute = e.get("reroute")
    if reroute:
        parts.append(f"the controller moved {reroute['routes_moved']} routes on {len(reroute['switches'])} switches "
                     f"in {reroute['reaction_ms']:,.1f} ms")
    return f" ({'; '.join(parts)})" if parts else ""


def fault_lines(summaries: dict[str, dict]) -> list[str]:
    """When each variant's faults happened (planned and actual time, seconds); `summaries` on the
    scenario's clock (telemetry.clock.on_scenario_clock), as both reports pass them."""
    lines = []
    for name, summary in summaries.items():
        events = summary.get("faults") or []
        skipped = summary.get("faults_not_executed") or []
        if events or skipped:
            lines.append(f"Faults in {name}:")
            lines += [f"- {e['kind']} {e['target']} at {e['t_s']:.3f} s (planned {e['at_s']:g} s)"
                      + (f": not carried out, {e['error']}" if e.get("error") else _fault_detail(e)) for e in events]
            lines += [f"- **not executed**: {e['kind']} {e['target']} planned at {e['at_s']:g} s: "
                      f"{e['reason']} (it ended at {e['run_ended_s']:.3f} s)" for e in skipped]
            lines.append("")
    return lines
