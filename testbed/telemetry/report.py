"""The side-by-side report of a scenario's variants: report.md, plots, summary.json.

The first line says whether every switch and every host agent kept up with
real time; a run that fell behind says so before any number.  Every figure
says its unit and what it counts; the report ends with how each is derived.
Every time, duration and rate is on the scenario's clock (telemetry.clock: a run slowed by --fit
is read back at the file's rates and times), the run's clock said once beside the factor.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from testbed.targets import bmv2_queue_rate_pps  # noqa: E402
from testbed.telemetry.collectives import plot_busbw  # noqa: E402
from testbed.telemetry.collectives import report_lines as collective_lines  # noqa: E402
from testbed.telemetry import training  # noqa: E402
from testbed.telemetry.clock import clock_line, scenario_links, stretch_of, summaries_on_scenario_clock  # noqa: E402
from testbed.telemetry.export import write_tables  # noqa: E402
from testbed.telemetry.faults import fault_lines  # noqa: E402
from testbed.telemetry import inband  # noqa: E402
from testbed.telemetry.messages import host_records  # noqa: E402
from testbed.telemetry.recovery import plot_goodput  # noqa: E402
from testbed.telemetry.tenants import reachability_lines  # noqa: E402
from testbed.telemetry.verdict_table import planned_fault_events, verdict_lines  # noqa: E402
from testbed.telemetry.seeds import seed_lines  # noqa: E402

ROWS = [
    ("load balancing", lambda s: str(s.get("load_balancing", "n/a"))),
    ("messages planned / completed (delivered, verified and acknowledged)",
     lambda s: f"{s.get('messages_planned', 0)} / {s.get('messages_completed', 0)}"),
    ("goodput (Mbit/s): verified payload, first cell received to last delivery",
     lambda s: _num(s.get("goodput_mbps"), 2)),
    ("ideal goodput (Mbit/s) / measured over ideal", lambda s: _pair(_ideal(s, "goodput_mbps"), _mi(s, "goodput"), 2)),
    ("completion p50 / p99 (ms), first DATA cell sent to last ACK", lambda s: _pct(s, "completion")),
    ("ideal completion p50 / p99 (ms)", lambda s: _ideal_pct(s)),
    ("completion measured over ideal, p50 / p99", lambda s: f"{_num(_mi(s, 'completion_p50'), 2)} / "
                                                         f"{_num(_mi(s, 'completion_p99'), 2)}"),
    ("queued before the first DATA cell, p50 / max (ms)",
     lambda s: f"{_num(s.get('queueing_p50_ms'), 1)} / {_num(s.get('queueing_max_ms'), 1)}"),
    ("DATA cells sent / received by agents (packets)", lambda s: _data_counts(s)),
    ("switch queue drops by cell type (packets)", lambda s: _queue_drops(s)),
    ("switch program drops by reason (packets, type not recorded)",
     lambda s: _drops((s.get("drops") or {}).get("switch_program_drops_by_reason") or {})),
    ("host qdisc / host socket receive drops (packets, any type)", lambda s: _host_drops(s)),
    ("DATA conservation: sent - received - switch queue drops - link losses = unaccounted", lambda s: _balance(s)),
    ("retransmitted DATA cells", lambda s: str(s.get("retransmissions_cells", "n/a"))),
    ("sender timeouts (RTO)", lambda s: str((s.get("agents") or {}).get("timeouts", "n/a"))),
    ("max queue depth (packets)", lambda s: str(s.get("max_queue_depth_packets", "n/a"))),
    ("ECN marks (packets)", lambda s: str(s.get("ecn_marks_packets", "n/a"))),
    ("CNPs received / rate cuts", lambda s: _cnps(s.get("agents") or {})),
    ("window cuts / quick adapts (nscc)", lambda s: _window_cuts(s.get("agents") or {})),
    ("PFC pause frames: XOFF / XON sent by switches; pauses taken by switch ports / host NICs (frames)",
     lambda s: _pfc_frames(s.get("pfc"))),
    ("PFC paused time, summed over switch ports / host NIC ports (ms); most cells a NIC held",
     lambda s: _pfc_time(s.get("pfc"))),
    ("cells out of order", lambda s: str(s.get("cells_out_of_order", "n/a"))),
    ("largest out-of-order distance (cells)", lambda s: str(s.get("max_ooo_distance_cells", "n/a"))),
    ("peak reorder buffer (cells)", lambda s: str(s.get("peak_reorder_buffer_cells", "n/a"))),
    ("ToR uplink utilisation min / max (%), idle links included, all bytes", lambda s: _range(s)),
    ("ToR uplink utilisation Jain fairness, idle links included", lambda s: _num(s.get("uplink_jain_fairness"), 3)),
    ("equal-cost links idle while a sibling carried data", lambda s: ", ".join(s.get("idle_siblings") or []) or "none"),
]


def _ideal(s: dict, key: str):
    ideal = s.get("ideal") or {}
    return ideal.get(key)


def _mi(s: dict, key: str):
    return (s.get("measured_over_ideal") or {}).get(key)


def _pair(a, b, digits: int) -> str:
    return f"{_num(a, digits)} / {_num(b, 2)}"


def _pct(s: dict, prefix: str) -> str:
    n = s.get(f"{prefix}_samples", 0)
    return (f"{_num(s.get(f'{prefix}_p50_ms'), 1)} / {_num(s.get(f'{prefix}_p99_ms'), 1)} "
            f"(n={n}, nearest-rank)")


def _ideal_pct(s: dict) -> str:
    ideal = s.get("ideal") or {}
    if "completion_p50_ms" not in ideal:
        return "n/a" if not ideal else ideal.get("unavailable", "n/a")
    return (f"{_num(ideal['completion_p50_ms'], 1)} / {_num(ideal['completion_p99_ms'], 1)} "
            f"(n={ideal['completion_samples']})")


NOT_MEASURED_ON_BMV2 = "not measured on bmv2"


def _queue_drops(s: dict) -> str:
    if s.get("target") == "bmv2":
        return f"{NOT_MEASURED_ON_BMV2} (its traffic manager counts no drops)"
    drops = s.get("drops") or {}
    by_type = drops.get("switch_queue_drops_by_type") or {}
    total = drops.get("switch_queue_drops_packets", 0)
    if total and sum(by_type.values()) != total:
        return f"{total} ({_drops(by_type)} typed; the rest not recorded by type)"
    return _drops(by_type)


def _data_counts(s: dict) -> str:
    data = ((s.get("drops") or {}).get("by_type") or {}).get("DATA")
    if not data:
        return "n/a"
    return f"{'n/a' if data['sent'] is None else data['sent']} / {data['received']}"


def _host_drops(s: dict) -> str:
    untyped = (s.get("drops") or {}).get("untyped_losses_packets") or {}
    if not (s.get("drops") or {}).get("hosts"):
        return "not read"
    return f"{untyped.get('host qdisc', 0)} / {untyped.get('host socket receive', 0)}"


def _balance(s: dict) -> str:
    balance = (s.get("drops") or {}).get("data_balance") or {}
    if "unaccounted" not in balance:
        return f"{balance.get('verdict', 'n/a')} ({balance.get('why', '')})"
    return (f"{balance['sent']} - {balance['received']} - {balance['switch_queue_drops']} - "
            f"{balance.get('link_losses', 0)} = {balance['unaccounted']}: **{balance['verdict']}**")


def _num(value, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _drops(drops: dict) -> str:
    total = sum(drops.values())
    if not total:
        return "0"
    return f"{total} (" + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())) + ")"


def _cnps(agents: dict) -> str:
    if not agents.get("cnps_received") and not agents.get("rate_cuts"):
        return "0"
    low = agents.get("min_rate_mbps")
    return (f"{agents.get('cnps_received', 0)} / {agents.get('rate_cuts', 0)}"
            + (f" (lowest rate {low:.2f} Mbit/s)" if low is not None else ""))


def _pfc_frames(pfc: dict | None) -> str:
    if pfc is None:
        return "off"
    return (f"{pfc['switch_xoff_sent']} / {pfc['switch_xon_sent']}; "
            f"{pfc['switch_ports_paused']} / {pfc['host_xoff_received']}")


def _pfc_time(pfc: dict | None) -> str:
    if pfc is None:
        return "off"
    return f"{pfc['switch_paused_ms']:.1f} / {pfc['host_paused_ms']:.1f}; {pfc['host_held_cells_max']}"


def _window_cuts(agents: dict) -> str:
    if agents.get("min_window_cells") is None:
        return "n/a"
    return (f"{agents.get('window_decreases', 0)} / {agents.get('quick_adapts', 0)} "
            f"(smallest window {agents['min_window_cells']:g} cells)")


def _range(summary: dict) -> str:
    if summary.get("uplink_utilisation_min") is None:
        return "n/a"
    return f"{100 * summary['uplink_utilisation_min']:.0f} / {100 * summary['uplink_utilisation_max']:.0f}"


def _plot_uplinks(summaries: dict[str, dict], path: Path) -> bool:
    names = [n for n, s in summaries.items() if s.get("uplink_utilisation")]
    if not names:
        return False
    links = sorted({k for n in names for k in summaries[n]["uplink_utilisation"]})
    width = 0.8 / len(names)
    figure, axes = plt.subplots(figsize=(max(6, 0.5 * len(links) + 2), 4))
    for i, name in enumerate(names):
        values = [100 * summaries[name]["uplink_utilisation"].get(link, 0.0) for link in links]
        axes.bar([x + i * width for x in range(len(links))], values, width, label=name)
    axes.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(links))])
    axes.set_xticklabels([link.replace(":", "\n") for link in links], fontsize=7)
    axes.set_ylabel("utilisation while traffic flowed (%)")
    axes.set_ylim(0, 105)
    axes.set_title("ToR uplink utilisation")
    # below the axes, three variants a row (a load sweep's nine names do not fit in one); the saved
    # box grows to hold it, where tight_layout gave up with a warning
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(3, len(names)), frameon=False)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return True


def _plot_fct(run_dirs: dict[str, Path], path: Path) -> bool:
    figure, axes = plt.subplots(figsize=(6, 4))
    plotted = False
    for name, run_dir in run_dirs.items():
        stretch = stretch_of(run_dir)  # the records are on the run's clock
        times = sorted(r["completion_us"] / 1000 / stretch for r in host_records(run_dir)
                       if r["kind"] == "message_sent" and "completion_us" in r)
        if times:
            axes.step(times, [(i + 1) / len(times) for i in range(len(times))], where="post",
                      label=f"{name} (n={len(times)})")
            plotted = True
    if plotted:
        axes.set_xlabel("message completion time, first DATA cell sent to last ACK (ms, scenario's clock)")
        axes.set_ylabel("fraction of messages")
        axes.set_title("Message completion time CDF")
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=110)
    plt.close(figure)
    return plotted


def _plot_links(summaries: dict[str, dict], path: Path) -> bool:
    """Every directed link's utilisation, data and control stacked, one panel per variant, by tier."""
    names = [n for n, s in summaries.items() if s.get("links")]
    if not names:
        return False
    order = {t: i for i, t in enumerate(TIER_ORDER)}
    links = sorted(summaries[names[0]]["links"], key=lambda l: (order.get(l["tier"], 99), l["link"]))
    labels = [l["link"] for l in links]
    figure, panels = plt.subplots(len(names), 1, figsize=(max(8, 0.3 * len(labels) + 2), 3.2 * len(names)),
                                  squeeze=False, sharex=True)
    colours = plt.get_cmap("tab10")
    tiers = list(dict.fromkeys(l["tier"] for l in links))
    for axes, name in zip(panels[:, 0], names):
        by_link = {l["link"]: l for l in summaries[name]["links"]}
        ideal = (summaries[name].get("ideal") or {}).get("link_utilisation") or {}
        for x, label in enumerate(labels):
            load = by_link[label]
            colour = colours(tiers.index(load["tier"]) % 10)
            total = 100 * load["utilisation"]
            data = load.get("data_utilisation")
            control = load.get("control_utilisation")
            if data is not None and control is not None:
                axes.bar(x, 100 * data, color=colour)
                axes.bar(x, 100 * control, bottom=100 * data, color=colour, alpha=0.35, hatch="//")
                axes.bar(x, max(0.0, total - 100 * (data + control)), bottom=100 * (data + control),
                         color="grey", alpha=0.3)
            else:
                axes.bar(x, total, color=colour, alpha=0.7)
            if label in ideal:
                axes.plot([x - 0.4, x + 0.4], [100 * ideal[label]] * 2, color="black", linewidth=1)
        axes.set_ylim(0, 125)
        axes.set_ylabel("utilisation (%)")
        axes.set_title(f"{name}: every link (solid data, hatched control, grey other, black line: fluid ideal)",
                       fontsize=9)
        handles = [Patch(color=colours(i % 10), label=tier) for i, tier in enumerate(tiers)]
        axes.legend(handles=handles, fontsize=7, ncol=len(tiers), loc="upper left")
    panels[-1, 0].set_xticks(range(len(labels)))
    panels[-1, 0].set_xticklabels(labels, rotation=90, fontsize=6)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


TIER_ORDER = ("host->tor", "leaf->spine", "edge->agg", "agg->core", "core->agg", "spine->leaf", "agg->edge",
              "tor->host")


def _fidelity_line(summaries: dict[str, dict]) -> str:
    lost = []
    kept = []
    for name, s in summaries.items():
        f = s.get("fidelity") or {}
        parts = []
        if f.get("worst_p99_dequeue_lag_us") is not None:
            parts.append(f"switch {f['switch']} p99 dequeue lag {f['worst_p99_dequeue_lag_us']:.0f} us")
        if f.get("worst_p99_pacer_lateness_us") is not None:
            parts.append(f"host {f['host']} p99 pacer lateness {f['worst_p99_pacer_lateness_us']:.0f} us")
        if f.get("hosts_not_judged"):
            parts.append("not judged: " + ", ".join(f"{h} ({why})" for h, why in f["hosts_not_judged"].items()))
        if f.get("cpu_busy_share") is not None:
            busiest = f.get("cpu_busiest_second_share")
            parts.append(f"cores busy {100 * f['cpu_busy_share']:.0f}% of the traffic phase"
                         + (f", {100 * busiest:.0f}% in its busiest second" if busiest is not None else ""))
        if f.get("cpu_steal_share") is not None:
            parts.append(f"hypervisor steal {100 * f['cpu_steal_share']:.1f}% of the machine's CPU time")
        if f.get("cross_server_cables"):
            parts.append(_tunnel_clause(f))
        text = f"{name} ({'; '.join(parts) or 'no lag reported'})"
        (lost if f.get("behind_real_time") else kept).append(text)
    threshold = next((s["fidelity"]["threshold_us"] for s in summaries.values() if "fidelity" in s), None)
    limit = f"one data cell's time on the host link ({threshold:.0f} us)" if threshold else "one cell time"
    unchecked = sorted({s.get("target") for s in summaries.values()
                        if not (s.get("fidelity") or {}).get("switches_checked", True)})
    not_checked = (f"the {' and '.join(unchecked)} switches' timing is not checked ({' and '.join(unchecked)} "
                   "reports no departure lag)") if unchecked else ""
    if lost:
        return ("**Fidelity lost: switches or hosts ran behind real time, or tunnels between servers delayed "
                "cables, by more than " + limit + " at p99 in "
                + "; ".join(lost) + ". Timings in those variants reflect the CPU, not the modelled links"
                + (f"; {not_checked}" if not_checked else "") + ".**")
    if not_checked:
        return (f"Fidelity of the hosts kept, {not_checked}: every host agent stayed within " + limit
                + " of its schedule at p99 (" + "; ".join(kept) + ").")
    return "Fidelity kept: every switch and every host agent stayed within " + limit + " of its schedule at p99 (" \
        + "; ".join(kept) + ")."


def _tunnel_clause(f: dict) -> str:
    """The cross-server cables' tunnels in one clause: their delay against the modelled one, and
    where they made the emulation late."""
    cables = f["cross_server_cables"]
    p99 = [c["one_way_p99_us"] for c in cables.values() if c["one_way_p99_us"] is not None]
    jitter = [c["jitter_us"] for c in cables.values() if c["jitter_us"] is not None]
    modelled = next(iter(cables.values()))["modelled_delay_us"]
    text = (f"{len(cables)} cables between servers in tunnels adding one-way p99 "
            + (f"{min(p99):.0f}-{max(p99):.0f} us" if p99 else "(no probe answered)")
            + (f", jitter up to {max(jitter):.0f} us" if jitter else "")
            + (f", to a modelled {modelled:g} us" if modelled is not None else ""))
    late = f.get("late_cables") or []
    if late:
        shown = ", ".join(late[:4]) + (f" and {len(late) - 4} more" if len(late) > 4 else "")
        text += f"; the tunnels made the emulation late on {shown}"
    else:
        text += "; no tunnel made the emulation late"
    return text


def _in_units(label: str, summaries: dict[str, dict]) -> str:
    """A utilisation label as the targets measured it: bmv2's links count packets, not bytes."""
    if any(s.get("target") == "bmv2" for s in summaries.values()):
        return label.replace("all bytes", "all bytes, on bmv2 packet slots of one data cell each")
    return label


def _tier_table(summaries: dict[str, dict]) -> list[str]:
    names = list(summaries)
    tiers = [t for t in TIER_ORDER if any(t in (s.get("tiers") or {}) for s in summaries.values())]
    if not tiers:
        return []
    lines = [_in_units("Mean utilisation per tier and direction (%; all bytes, of which DATA cells; fluid ideal; "
                       "measured / ideal; idle links of all):", summaries), "",
             "| tier | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for tier in tiers:
        cells = []
        for n in names:
            t = (summaries[n].get("tiers") or {}).get(tier)
            if not t:
                cells.append("-")
                continue
            ideal = ((summaries[n].get("ideal") or {}).get("tiers") or {}).get(tier, {}).get("utilisation_mean")
            ratio = ((summaries[n].get("measured_over_ideal") or {}).get("tiers") or {}).get(tier)
            data = t.get("data_utilisation_mean")
            cells.append(f"{100 * t['utilisation_mean']:.1f} (data {_num(None if data is None else 100 * data, 1)}); "
                         f"ideal {_num(None if ideal is None else 100 * ideal, 1)}; {_num(ratio, 2)}; "
                         f"idle {t['idle_links']}/{t['links']}")
        lines.append(f"| {tier} | " + " | ".join(cells) + " |")
    return lines + [""]


def _gap_lines(summaries: dict[str, dict]) -> list[str]:
    """What the run itself shows about the distance to the ideal, per variant."""
    lines = []
    for name, s in summaries.items():
        ratio = _mi(s, "goodput")
        if ratio is None:
            continue
        data = ((s.get("drops") or {}).get("by_type") or {}).get("DATA") or {}
        facts = [f"measured / ideal goodput {ratio:.3f}"]
        if data.get("sent"):
            facts.append(f"{s.get('retransmissions_cells', 0)} retransmitted of {data['sent']} DATA cells sent "
                         f"({100 * s.get('retransmissions_cells', 0) / data['sent']:.1f}%)")
            facts.append(f"{data.get('switch_queue_drops', 0)} DATA cells dropped at switch queues"
                         if s.get("target") != "bmv2" else f"switch queue drops {NOT_MEASURED_ON_BMV2}")
        timeouts = (s.get("agents") or {}).get("timeouts")
        if timeouts:
            facts.append(f"{timeouts} sender timeouts")
        if s.get("target") == "bmv2":
            facts.append("its ideal gives every control cell a switch forwards a whole data cell's slot, as bmv2's "
                         "packets/s queues do, so it is lower than the same links give on the builtin target")
        placement = (s.get("ideal") or {}).get("placement") or {}
        if "data_unexplained_share" in placement:
            how = "traced" if "traced" in placement.get("data", "") else "inferred"
            facts.append(f"the {how} ECMP paths leave {100 * placement['data_unexplained_share']:.2f}% of the "
                         f"measured DATA bytes on the links that tell paths apart unexplained")
        if (s.get("fidelity") or {}).get("behind_real_time"):
            facts.append("fidelity lost (see the first line)")
        lines.append(f"- {name}: " + "; ".join(facts) + ".")
    if lines:
        lines = ["Distance to the ideal (the ideal already includes this variant's path placement and its "
                 "control-cell overhead, so what remains is loss, recovery and timing):", ""] + lines + [""]
    return lines


DERIVATION = """How the figures are derived (every one recomputable from the variant directories by
`tests/recompute_report.py`):

- Completion time: from the sender's first DATA cell of the message to the acknowledgement of its last
  cell (records `completion_us`); the wait between queueing and that first cell is the queueing figure.
  Percentiles are nearest-rank, n = the number of acknowledged messages.
- Goodput: verified payload bytes over the time from the first cell any receiver got to the last delivery.
- Link utilisation: bytes over the traffic window (first message queued to last delivery) at the link's
  rate; switch egress from the fabric program's tx counters, host egress from the ToR's rx counters. The
  DATA / control split comes from the traffic manager's per-cell-type counts (switch egress) and from the
  agents' per-type send counts times each type's wire size (host egress).
- Drops: switch queues by cell type (traffic manager), a degraded link's random losses by cell type
  (traffic manager), the fabric program's drop counters by reason, switch port send errors (a cut
  cable), host qdisc drops (`tc -s qdisc`), host NIC port transmit drops (`ip -s link`: a cut cable)
  and UDP receive errors (`/proc/net/snmp`) read before and after the agents in each host's namespace.
- Failover: when a host left a port (its agent's port changes), when the controller saw a cable or
  switch go and finished rerouting (`reroute.jsonl`, the fault's record), and each host's goodput
  from its sampled in-order DATA cells (`records/<host>.stats.json` "series").
- Ideal: max-min fair fluid sharing (`testbed/telemetry/fluid.py`) of the planned messages on the same
  link rates and placement (spray: every equal-cost path evenly; ECMP: each flow's path inferred from the
  switches' DATA bytes per port), with each receiver's measured control bytes per DATA byte on the reverse
  links (NACKs left out: they answer losses); no loss, no propagation delay.
- PFC (with `fabric.pfc`): XOFF and XON frames each switch's traffic manager sent (one per crossing of
  a link's XOFF or XON count of its DATA-priority cells queued there), the pauses switch ports took
  from them (traffic manager, per port) and host NICs took (`records/<host>.stats.json` "pfc"), and
  the time they were paused, summed over ports, so it can exceed the run's length; retransmissions
  with no drop are cells whose timer ran out while a pause held them.
- Fidelity: switches' p99 dequeue lag (traffic manager) and hosts' p99 pacer lateness (agent: how late it
  woke and sent relative to the deadline it slept for), each against one data cell's time on the host link.
- On bmv2: each link is a queue rate in packets/s (one data cell's wire size per packet of any size) with
  no propagation delay, so utilisation counts packet slots and the ideal counts a control cell as one slot;
  queue drops and departure lag are not measured (bmv2 reports neither), and the queue peak is the fabric
  program's register, zeroed at the start and read at the end through simple_switch_CLI.
"""


def _ms(value) -> str:
    return "not seen" if value is None else f"{value:,.1f} ms"


def _recovery_lines(summaries: dict[str, dict], run_dirs: dict[str, Path] | None = None) -> list[str]:
    """Detection, reroute and recovery of each cut host link (testbed/telemetry/recovery.py); `summaries`
    on the scenario's clock (telemetry.clock.on_scenario_clock), times, durations and rates alike."""
    lines = []
    for name, summary in summaries.items():
        for r in summary.get("recovery") or []:
            lines.append(f"Failover in {name}: {r['fault']} at {r['cut_t_s']:.3f} s")
            lines.append(f"- {r['host']} left its port {r['port']} {_ms(r['host_detect_ms'])} after the cut "
                         f"({r.get('host_detect_by') or 'not at all'}); the controller saw the port go down after {_ms(r['fabric_detect_ms'])} and "
                         f"had moved {r['routes_moved'] if r['routes_moved'] is not None else 'no'} routes by "
                         f"{_ms(r['rerouted_ms'])}")
            for host, h in r["hosts"].items():
                recovered = ("not within the run" if h["recovered_ms"] is None else
                             f"{h['recovered_ms']:,.1f} ms = {h['recovered_rto_floors']:.2f} RTO floors "
                             f"of {r['rto_floor_ms']:,.1f} ms")
                lines.append(f"- {host} goodput received (Mbit/s): {_num(h['before_mbps'], 3)} before the cut on "
                             f"{h['ports']} port(s), so {_num(h['one_port_mbps'], 3)} per port; "
                             f"{_num(h['after_mbps'], 3)} after it ({_num(h['after_over_link_payload'], 2)} of the "
                             f"{_num(r['link_payload_mbps'], 3)} a host link carries); back to 90% of one port's "
                             f"share: {recovered}")
            lines.append(f"- messages lost: {summary.get('messages_planned', 0) - summary.get('messages_completed', 0)}"
                         f" of {summary.get('messages_planned', 0)}; retransmitted DATA cells: "
                         f"{summary.get('retransmissions_cells', 0)}")
            lines.append("")
    return lines


def _link_clause(scenario, run_dirs: dict[str, Path]) -> str:
    """Link rate, RTT and BDP as each variant ran them (its resolved scenario: a variant may have
    changed them), on the scenario's clock (a --fit slow-down undone: telemetry.clock.scenario_links),
    one clause when they agree."""
    def clause(s: dict, target: str | None) -> str:
        d = s["derived"]
        text = (f"host links {s['links']['host']['rate_mbps']:g} Mbit/s, fabric links "
                f"{s['links']['fabric']['rate_mbps']:g} Mbit/s, base RTT {d['base_rtt_us']:.0f} us, BDP "
                f"{d['bdp_cells']} cells of {s['fabric']['cell_size']} B")
        return text + (bmv2_link_model(s) if target == "bmv2" else "")
    clauses = {}
    for name, run_dir in run_dirs.items():
        path = Path(run_dir) / "scenario.resolved.yaml"
        if path.exists():
            result = Path(run_dir) / "result.json"
            target = json.loads(result.read_text()).get("target") if result.exists() else None
            clauses[name] = clause(scenario_links(yaml.safe_load(path.read_text())), target)
    if not clauses:
        return clause(scenario.to_dict(), None)
    if len(set(clauses.values())) == 1:
        return next(iter(clauses.values()))
    return "; ".join(f"{name}: {text}" for name, text in clauses.items())


def bmv2_link_model(resolved: dict) -> str:
    """The links bmv2 ran, which are not the ones configured: a queue rate in packets/s
    (control/apply.py converts at one data cell's wire size) and no propagation delay."""
    d, links = resolved["derived"], resolved["links"]
    rates = sorted({bmv2_queue_rate_pps(links[k]["rate_mbps"] * 1e6, d["cell_wire_bytes"]) for k in ("host", "fabric")})
    delays = sorted({links[k]["delay_us"] for k in ("host", "fabric")})
    return (f" (as configured; bmv2 ran every port at {' / '.join(f'{r:g}' for r in rates)} packets/s, one "
            f"{d['cell_wire_bytes']} B data cell's time per packet of any size, and with no propagation delay: "
            f"the {' / '.join(f'{x:.0f}' for x in delays)} us per link is not modelled, so the RTT it ran is "
            "transmission and queueing only)")


def dcqcn_parameters(resolved: dict) -> str | None:
    """DCQCN's constants as one variant ran them, in absolute units (None: not dcqcn).

    Zhu et al. (SIGCOMM 2015) give microseconds and bytes at 40 Gbit/s; the testbed keeps
    their ratios: timers in base RTTs, the byte counter in increase-timer periods at line
    rate, R_AI as a fraction of the link, ECN thresholds in BDPs."""
    t = resolved.get("transport") or {}
    if t.get("cc") != "dcqcn":
        return None
    q, ecn, d = t["dcqcn"], resolved["fabric"]["ecn"], resolved["derived"]
    rate = resolved["links"]["host"]["rate_mbps"]
    rtt_ms = d["base_rtt_us"] / 1e3
    timer_ms = q["timer_rtt"] * rtt_ms
    timer_bytes = rate * 1e6 / 8 * timer_ms / 1e3
    r_ai = q["r_ai_fraction"] * rate
    cell = d["cell_wire_bytes"]
    marking = (f"RED Kmin {ecn['kmin_cells']} / Kmax {ecn['kmax_cells']} cells ({ecn['kmin_cells'] * cell / 1e3:.1f} / "
               f"{ecn['kmax_cells'] * cell / 1e3:.1f} KB; BDP {d['bdp_cells']} cells), Pmax {ecn['pmax']:g}"
               if ecn.get("mode") == "red" else f"ECN mode {ecn.get('mode')}")
    queues = (resolved.get("switch") or {}).get("priority_queues", 1)
    return (f"{marking}; g {q['g']:.6g} (1/{1 / q['g']:.0f}); CNP interval N {q['cnp_interval_rtt'] * rtt_ms:.1f} ms, "
            f"alpha timer K and rate-increase timer T {timer_ms:.1f} ms ({q['timer_rtt']:g} base RTTs of "
            f"{rtt_ms:.1f} ms); byte counter B {q['byte_counter_bytes']:,} B ({q['byte_counter_bytes'] / timer_bytes:.1f} "
            f"timer periods at line rate); F {q['fast_recovery_steps']} fast-recovery steps; R_AI {r_ai * 1e3:.2f} kbit/s "
            f"({q['r_ai_fraction']:g} of {rate:g} Mbit/s), R_HAI {r_ai * q['hyper_factor'] * 1e3:.2f} kbit/s; "
            f"CNPs at switch priority {'1 (ahead of data)' if queues >= 2 else '0 (with data)'}")


def nscc_parameters(resolved: dict) -> str | None:
    """NSCC's constants as one variant ran them, in absolute units (None: not nscc).

    UEC's htsim model gives them relative to the path (target in RTTs, maxwnd in BDPs); here they are scaled to the variant's derived base RTT and BDP."""
    t = resolved.get("transport") or {}
    if t.get("cc") != "nscc":
        return None
    n, ecn, d = t["nscc"], resolved["fabric"]["ecn"], resolved["derived"]
    rtt_ms = d["base_rtt_us"] / 1e3
    bdp = d["bdp_cells"]
    target_ms = n["target_qdelay_rtt"] * rtt_ms
    marking = (f"RED Kmin {ecn['kmin_cells']} / Kmax {ecn['kmax_cells']} cells, Pmax {ecn['pmax']:g}"
               if ecn.get("mode") == "red" else f"ECN mode {ecn.get('mode')}")
    return (f"target queueing delay {target_ms:.1f} ms ({n['target_qdelay_rtt']:g} base RTTs of {rtt_ms:.1f} ms; "
            f"no trimming); maxwnd {n['max_wnd_bdp'] * bdp:.1f} cells ({n['max_wnd_bdp']:g} BDP of {bdp} cells), "
            f"initial window {n['initial_wnd_bdp'] * bdp:.1f} cells, minimum {n['min_wnd_cells']:g}; decrease "
            f"max(1 - {n['md_gain']:g} (avg - target)/avg, {n['md_floor']:g}) at most once per RTT; delay EWMA "
            f"{n['delay_ewma']:g} per sample; quick adapt above {n['quick_adapt_x_target'] * target_ms:.1f} ms "
            f"({n['quick_adapt_x_target']:g}x target) or on a NACKed loss; proportional increase "
            f"{n['pi_bdp'] * bdp:.2f} cells per RTT at zero delay, fair increase {n['fi_bdp'] * bdp:.2f} cells per RTT; "
            f"{marking}")


def _cc_parameter_lines(run_dirs: dict[str, Path]) -> list[str]:
    lines = []
    for name, run_dir in run_dirs.items():
        path = Path(run_dir) / "scenario.resolved.yaml"
        resolved = scenario_links(yaml.safe_load(path.read_text())) if path.exists() else None
        text = dcqcn_parameters(resolved) if resolved else None
        if text:
            lines.append(f"DCQCN parameters of {name} (Zhu et al., SIGCOMM 2015, scaled to this link): {text}.")
        text = nscc_parameters(resolved) if resolved else None
        if text:
            lines.append(f"NSCC parameters of {name} (UEC's htsim model, scaled to this link): {text}.")
    return lines + [""] if lines else []


def write_report(scenario, run_dirs: dict[str, Path], summaries: dict[str, dict], out_dir: Path,
                 partial: str | None = None) -> Path:
    """report.md + summary.json + plots in out_dir; returns the report's path. `partial`
    (rundir.partial_line: what the run directory lacks) is the report's first line when given.
    `summaries` (summarize_variant: the run's clock) are put on the scenario's clock first; that is
    what summary.json, the CSV tables and the report hold."""
    summaries = summaries_on_scenario_clock(run_dirs, summaries)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(summaries, indent=2, default=str))
    write_tables(run_dirs, summaries, out_dir, planned_fault_events(scenario))
    lines = [partial, ""] if partial else []
    lines += [_fidelity_line(summaries), ""]
    lines += reachability_lines(summaries)
    lines += [f"# {scenario.name}", "", scenario.description or "", ""]
    lines += verdict_lines(summaries, planned_fault_events(scenario))
    lines.append(f"Topology {scenario.topology.kind}, {scenario.topo.counts.hosts} hosts, "
                 f"{scenario.topo.counts.switches} switches; {_link_clause(scenario, run_dirs)}.")
    lines.append("")
    clock = clock_line(run_dirs)
    if clock:
        lines += [clock, ""]
    lines += _cc_parameter_lines(run_dirs)
    names = list(summaries)
    lines.append("| | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for label, render in ROWS:
        lines.append(f"| {_in_units(label, summaries)} | " + " | ".join(render(summaries[n]) for n in names) + " |")
    lines.append("")
    lines += _tier_table(summaries)
    lines += _gap_lines(summaries)
    lines += seed_lines(summaries)
    if _plot_links(summaries, out_dir / "links.png"):
        lines += ["![Every link's utilisation](links.png)", ""]
    if _plot_uplinks(summaries, out_dir / "uplinks.png"):
        lines += ["![ToR uplink utilisation](uplinks.png)", ""]
    if _plot_fct(run_dirs, out_dir / "fct_cdf.png"):
        lines += ["![Message completion time CDF](fct_cdf.png)", ""]
    lines += inband.report_lines(summaries)
    if inband.plot_latency(run_dirs, summaries, lambda name: scenario.topo, out_dir / "int_latency.png"):
        lines += ["![In-band telemetry: hop latency CDF per tier](int_latency.png)", ""]
    lines += training.report_lines(summaries)
    if training.plot_timeline(run_dirs, out_dir / "training_timeline.png"):
        lines += ["![Training jobs: compute, wait and exposed communication per GPU](training_timeline.png)", ""]
    lines += collective_lines(summaries)
    if plot_busbw(summaries, out_dir / "busbw.png"):
        lines += ["![busbw (Mbit/s) against size (bytes)](busbw.png)", ""]
    lines += fault_lines(summaries)
    lines += _recovery_lines(summaries, run_dirs)
    if any(s.get("faults") for s in summaries.values()) and plot_goodput(run_dirs, out_dir / "goodput.png"):
        lines += ["![Goodput received per host over time, faults marked](goodput.png)", ""]
    for name in names:
        notes = summaries[name].get("notes") or []
        if notes:
            lines.append(f"Notes for {name}:")
            lines += [f"- {note}" for note in notes]
            lines.append("")
    lines += DERIVATION.splitlines() + [""]
    lines.append("Run directories: " + ", ".join(f"`{p}`" for p in run_dirs.values()))
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
