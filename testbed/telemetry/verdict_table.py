"""The report's first table: per variant, what a reader wants first.

One row per variant, from its summary alone:

* messages complete of planned: delivered with the right bytes and acknowledged (`messages_completed`,
  telemetry.messages), with "ok" when every planned message is;
* goodput over the ideal: measured goodput against the fluid max-min ideal of the same messages on the
  same links (`measured_over_ideal/goodput`; "-" where no ideal is computed, as on the simulator);
* DATA cells lost: DATA cells sent and not received. Emulated: `drops/by_type/DATA` sent - received,
  split into switch queue drops, a degraded link's losses and the rest ("elsewhere": cut cables, hosts'
  qdiscs and sockets, cells in flight at the end, counted by place but not by type; the conservation
  line has them). On the simulator: its DATA conservation (`simulator/data_cells`): switch queue drops,
  cut or down cables, lossy cables, stopped switches and cells with no route (a run from before these
  counts shows its queue drops alone). The parts are named beside the total when any loss is not a
  queue drop;
* fidelity: "kept" or "LOST" (switches or hosts behind real time at p99, telemetry.summary), or
  "virtual clock" for a simulator run, which cannot fall behind;
* faults: how many fault events (a flap's downs and ups, a restart's stop and start) were carried out of
  those the scenario plans, naming any that failed; a run that ended before a fault's time shows
  fewer carried out than planned.
"""

from __future__ import annotations

COLUMNS = ("variant", "messages complete / planned", "goodput / ideal", "DATA cells lost", "fidelity", "faults")

LOSS_PLACES = {"switch_queue_drops": "queues", "link_losses": "lossy cables", "cut_links": "cut cables",
               "lossy_links": "lossy cables", "stopped_switches": "stopped switches", "no_route": "no route",
               "tenant_meters": "tenant meters", "elsewhere": "elsewhere"}


def planned_fault_events(scenario) -> int:
    """Fault events the scenario plans (scenario.model.Fault.events)."""
    return sum(len(f.events()) for f in scenario.faults)


def verdict(summary: dict, planned_faults: int | None = None) -> dict:
    """The row's values, plain (numbers or None, and short strings), for the table and for results.csv;
    `planned_faults`: the scenario's fault events (None: those the run recorded)."""
    sim = summary.get("simulator")
    data_drops, parts = data_losses(summary)
    fidelity = summary.get("fidelity") or {}
    faults = summary.get("faults") or []
    failed = [f for f in faults if f.get("error")]
    return {
        "variant": summary.get("variant"),
        "messages_planned": summary.get("messages_planned", 0),
        "messages_complete": summary.get("messages_completed", 0),
        "goodput_over_ideal": (summary.get("measured_over_ideal") or {}).get("goodput"),
        "data_drops": data_drops,
        "data_drops_parts": parts,
        "fidelity": ("virtual clock" if sim is not None or summary.get("target") == "simulator"
                     else "LOST" if fidelity.get("behind_real_time") else "kept" if fidelity else None),
        "faults_planned": len(faults) if planned_faults is None else planned_faults,
        "faults_carried_out": len(faults) - len(failed),
        "faults_not_carried_out": [f"{f['kind']} {f['target']}" for f in failed],
    }


def data_losses(summary: dict) -> tuple[int | None, dict[str, int]]:
    """DATA cells lost (None: not counted) and its parts by place (see the module docstring)."""
    drops = (summary.get("drops") or {}).get("by_type", {}).get("DATA")
    sim = summary.get("simulator") or {}
    if drops is not None and drops.get("sent") is not None:
        total = drops["sent"] - drops["received"]
        queue, link = drops.get("switch_queue_drops", 0), drops.get("link_losses", 0)
        return total, {"switch_queue_drops": queue, "link_losses": link, "elsewhere": total - queue - link}
    cells = sim.get("data_cells")
    if cells is not None:
        return cells["lost_total"], dict(cells["lost"])
    if sim.get("switch_data_drops") is not None:
        return sim["switch_data_drops"], {"switch_queue_drops": sim["switch_data_drops"]}
    return None, {}


def loss_text(total: int | None, parts: dict[str, int]) -> str:
    """'-', the total, or the total with its non-zero parts when any is not a queue drop."""
    if total is None:
        return "-"
    shown = {k: v for k, v in parts.items() if v}
    if not set(shown) - {"switch_queue_drops"}:
        return str(total)
    return f"{total} (" + ", ".join(f"{LOSS_PLACES.get(k, k)} {v}" for k, v in shown.items()) + ")"


def _cells(row: dict) -> list[str]:
    complete, planned = row["messages_complete"], row["messages_planned"]
    messages = f"{complete} / {planned} " + ("ok" if complete == planned and planned else
                                             f"**{planned - complete} missing**")
    ratio = "-" if row["goodput_over_ideal"] is None else f"{row['goodput_over_ideal']:.2f}"
    drops = loss_text(row["data_drops"], row["data_drops_parts"])
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
