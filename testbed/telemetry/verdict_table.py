"""The report's first table: per variant, what a reader wants first.

One row per variant, from its summary alone:

* messages complete of planned: delivered with the right bytes and acknowledged (`messages_completed`,
  telemetry.messages), with "ok" when every planned message is;
* goodput over the ideal: measured goodput against the fluid max-min ideal of the same messages on the
  same links (`measured_over_ideal/goodput`; "-" where no ideal is computed, as on the simulator);
* DATA drops: DATA cells sent and not received (`drops/by_type/DATA`: queue drops, a degraded link's
  losses and what is unaccounted for); on the simulator its switches' DATA queue drops;
* fidelity: "kept" or "LOST" (switches or hosts behind real time at p99, telemetry.summary), or
  "virtual clock" for a simulator run, which cannot fall behind;
* faults: how many fault events (a flap's downs and ups, a restart's stop and start) were carried out of
  those the scenario plans, naming any that failed; a run that ended before a fault's time shows
  fewer carried out than planned.
"""

from __future__ import annotations

COLUMNS = ("variant", "messages complete / planned", "goodput / ideal", "DATA drops", "fidelity", "faults")


def planned_fault_events(scenario) -> int:
    """Fault events the scenario plans (scenario.model.Fault.events)."""
    return sum(len(f.events()) for f in scenario.faults)


def verdict(summary: dict, planned_faults: int | None = None) -> dict:
    """The row's values, plain (numbers or None, and short strings), for the table and for results.csv;
    `planned_faults`: the scenario's fault events (None: those the run recorded)."""
    drops = (summary.get("drops") or {}).get("by_type", {}).get("DATA")
    sim = summary.get("simulator")
    if drops is not None:
        data_drops = drops["sent"] - drops["received"]
    elif sim is not None and sim.get("switch_data_drops") is not None:
        data_drops = sim["switch_data_drops"]
    else:
        data_drops = None
    fidelity = summary.get("fidelity") or {}
    faults = summary.get("faults") or []
    failed = [f for f in faults if f.get("error")]
    return {
        "variant": summary.get("variant"),
        "messages_planned": summary.get("messages_planned", 0),
        "messages_complete": summary.get("messages_completed", 0),
        "goodput_over_ideal": (summary.get("measured_over_ideal") or {}).get("goodput"),
        "data_drops": data_drops,
        "fidelity": ("virtual clock" if sim is not None or summary.get("target") == "simulator"
                     else "LOST" if fidelity.get("behind_real_time") else "kept" if fidelity else None),
        "faults_planned": len(faults) if planned_faults is None else planned_faults,
        "faults_carried_out": len(faults) - len(failed),
        "faults_not_carried_out": [f"{f['kind']} {f['target']}" for f in failed],
    }


def _cells(row: dict) -> list[str]:
    complete, planned = row["messages_complete"], row["messages_planned"]
    messages = f"{complete} / {planned} " + ("ok" if complete == planned and planned else
                                             f"**{planned - complete} missing**")
    ratio = "-" if row["goodput_over_ideal"] is None else f"{row['goodput_over_ideal']:.2f}"
    drops = "-" if row["data_drops"] is None else str(row["data_drops"])
    fidelity = "-" if row["fidelity"] is None else ("**LOST**" if row["fidelity"] == "LOST" else row["fidelity"])
    done, planned = row["faults_carried_out"], row["faults_planned"]
    if not planned and not done:
        faults = "none"
    elif done >= planned and not row["faults_not_carried_out"]:
        faults = f"{done} carried out"
    else:
        faults = f"**{done} of {planned} carried out**" + (
            f" (failed: {', '.join(row['faults_not_carried_out'])})" if row["faults_not_carried_out"] else "")
    return [str(row["variant"]), messages, ratio, drops, fidelity, faults]


def verdict_lines(summaries: dict[str, dict], planned_faults: int | None = None) -> list[str]:
    """The markdown table (and a blank line), rows in the summaries' order."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for name, summary in summaries.items():
        lines.append("| " + " | ".join(_cells(verdict({**summary, "variant": name}, planned_faults))) + " |")
    return lines + [""]
