"""Goodput over time per host, and how each cut link was detected and recovered from.

Inputs, all in the variant's run directory: each agent's sampled series
(`records/<host>.stats.json`, "series": in-order DATA cells received,
sampled every `period_s`), its NIC port changes ("nic_port_changes": when
the agent saw carrier go), `faults.jsonl` (when each fault was carried out)
and `reroute.jsonl` (when the controller saw a port change and when its
last route write was acknowledged).  Times are seconds on the run's clock.

For a cut host link (`link_down` on a host's cable) and for each host of a
crashed ToR (`switch_stop` of a switch with host ports), per affected host
(the cut host, and every host it was sending to):

* `host_detect_ms`: the cut to the agent leaving the port (carrier, or
  silence when the ToR died with the cable up);
* `fabric_detect_ms` / `rerouted_ms`: the cut to the controller seeing the
  port go down / to its last route write being acknowledged;
* `before_mbps`: the host's goodput from its first in-order cell to the cut;
  `one_port_mbps` = before / the host's NIC ports (what one port carried);
* `recovered_ms`: the cut to the first sample from which goodput over the
  next RECOVERY_WINDOW samples is at least RECOVERED_SHARE of one_port_mbps
  (None: never), also in RTO floors (`transport.rto_low_rtt` base RTTs);
* `after_mbps`: goodput from the cut to the host's last in-order cell, and
  over `link_payload_mbps`, the DATA payload one host link can carry
  (its rate x cell body / cell frame on the wire).
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.topo.interfaces import host_interface
from testbed.host.records import read_jsonl
from testbed.telemetry.clock import stretch_of

RECOVERY_WINDOW = 4
RECOVERED_SHARE = 0.9


def host_series(run_dir: Path) -> dict[str, dict]:
    """host -> {"t_s": [...], "mbps": [...] (goodput in the interval ending at t), ports, changes}."""
    out = {}
    for path in sorted((run_dir / "records").glob("*.stats.json")):
        stats = json.loads(path.read_text())
        series = stats.get("series")
        if not series or len(series.get("t_s", [])) < 2:
            continue
        bits = series["data_cell_payload_bytes"] * 8
        t, cells = series["t_s"], series["in_order_cells"]
        mbps = [0.0] + [(cells[i] - cells[i - 1]) * bits / (t[i] - t[i - 1]) / 1e6 if t[i] > t[i - 1] else 0.0
                        for i in range(1, len(t))]
        out[stats["host"]] = {"t_s": t, "cells": cells, "mbps": mbps, "bits_per_cell": bits,
                              "ports": len(stats.get("nic_ports") or {}) or 1,
                              "changes": stats.get("nic_port_changes") or []}
    return out


def _rate(series: dict, start: float, end: float) -> float | None:
    """Mean goodput (Mbit/s) between two times, from the cumulative cell counts."""
    t, cells = series["t_s"], series["cells"]
    inside = [i for i, x in enumerate(t) if start <= x <= end]
    if len(inside) < 2 or t[inside[-1]] <= t[inside[0]]:
        return None
    first, last = inside[0], inside[-1]
    return (cells[last] - cells[first]) * series["bits_per_cell"] / (t[last] - t[first]) / 1e6


def _active(series: dict) -> tuple[float, float] | None:
    """First and last sample at which the host's in-order count moved."""
    t, cells = series["t_s"], series["cells"]
    moved = [i for i in range(1, len(t)) if cells[i] > cells[i - 1]]
    return (t[moved[0] - 1], t[moved[-1]]) if moved else None


def _recovered_at(series: dict, cut: float, target: float) -> float | None:
    t = series["t_s"]
    after = [i for i, x in enumerate(t) if x > cut]
    for k, i in enumerate(after):
        window = after[k:k + RECOVERY_WINDOW]
        if len(window) < RECOVERY_WINDOW:
            return None
        span = t[window[-1]] - t[i - 1]
        cells = series["cells"][window[-1]] - series["cells"][i - 1]
        if span > 0 and cells * series["bits_per_cell"] / span / 1e6 >= target:
            return t[i - 1]
    return None


def recovery(run_dir: Path, scenario: dict, topology) -> list[dict]:
    """One entry per host port a fault cut off (see the module docstring)."""
    faults = read_jsonl(run_dir / "faults.jsonl") if (run_dir / "faults.jsonl").exists() else []
    reroutes = read_jsonl(run_dir / "reroute.jsonl") if (run_dir / "reroute.jsonl").exists() else []
    series = host_series(run_dir)
    sends_to: dict[str, set[str]] = {}
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        for r in read_jsonl(path):
            if r.get("kind") == "message_sent":
                sends_to.setdefault(r["src"], set()).add(r["dst"])
    rto_floor_s = scenario["transport"]["rto_low_rtt"] * scenario["derived"]["base_rtt_us"] / 1e6
    link_payload_mbps = (scenario["links"]["host"]["rate_mbps"] * scenario["fabric"]["cell_size"]
                         / scenario["derived"]["cell_wire_bytes"])
    out = []
    for fault in faults:
        if fault.get("error"):
            continue
        for host, port_number in _cut_ports(fault, topology):
            out.append(_entry(fault, host, host_interface(host, port_number), series, sends_to, reroutes,
                              rto_floor_s, link_payload_mbps))
    return out


def _cut_ports(fault: dict, topology) -> list[tuple[str, int]]:
    """(host, NIC port) that a fault cut off: a host cable taken down, or every host port of a ToR that stopped."""
    if fault["kind"] == "link_down":
        link = topology.link(fault["target"])
        for host, other in ((link.a, link.b), (link.b, link.a)):
            if topology.node(host).is_host:
                return [(host, link.port_on(host))]
    if fault["kind"] == "switch_stop":
        return [(p.peer, p.peer_port) for p in topology.ports(fault["target"]) if p.tier == "host"]
    return []


def _entry(fault, host, port, series, sends_to, reroutes, rto_floor_s, link_payload_mbps) -> dict:
    cut = fault["t_s"]
    entry = {"fault": f"{fault['kind']} {fault['target']}", "cut_t_s": cut, "host": host, "port": port,
             "rto_floor_ms": round(rto_floor_s * 1e3, 3), "link_payload_mbps": link_payload_mbps, "hosts": {}}
    change = next((c for c in series.get(host, {}).get("changes", [])
                   if c["port"] == port and not c["up"] and c["t_s"] >= cut - 1e-3), None)
    entry["host_detect_ms"] = None if change is None else round((change["t_s"] - cut) * 1e3, 3)
    entry["host_detect_by"] = None if change is None else change.get("why", "carrier")
    reaction = fault.get("reroute") or next(
        (r for r in reroutes if r["seen_t_s"] >= cut - 1e-3 and fault["target"] in r["dead_links"]), None)
    entry["fabric_detect_ms"] = None if reaction is None else round((reaction["seen_t_s"] - cut) * 1e3, 3)
    entry["rerouted_ms"] = None if reaction is None else round((reaction["done_t_s"] - cut) * 1e3, 3)
    entry["routes_moved"] = None if reaction is None else reaction["routes_moved"]
    for who in [host] + sorted(sends_to.get(host, set()) - {host}):
        s = series.get(who)
        active = s and _active(s)
        if not active or active[1] <= cut:
            continue
        before = _rate(s, active[0], cut) if active[0] < cut else None
        one_port = before / s["ports"] if before else None
        at = _recovered_at(s, cut, RECOVERED_SHARE * one_port) if one_port else None
        after = _rate(s, cut, active[1])
        entry["hosts"][who] = {
            "before_mbps": before, "ports": s["ports"], "one_port_mbps": one_port,
            "after_mbps": after, "after_over_link_payload": after / link_payload_mbps if after else None,
            "recovered_ms": None if at is None else round(max(0.0, at - cut) * 1e3, 3),
            "recovered_rto_floors": None if at is None else round(max(0.0, at - cut) / rto_floor_s, 3)}
    return entry


def plot_goodput(run_dirs: dict[str, Path], path: Path) -> bool:
    """goodput_figure saved at `path`; False (nothing written) when no run has a goodput series."""
    import matplotlib.pyplot as plt

    figure = goodput_figure(run_dirs)
    if figure is None:
        return False
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def goodput_figure(run_dirs: dict[str, Path]):
    """Goodput over time per host, one panel per variant, each fault marked (red) and each
    controller reroute's completion marked (grey), all on the scenario's clock (telemetry.clock)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = {name: host_series(d) for name, d in run_dirs.items()}
    panels = {name: s for name, s in panels.items() if s}
    if not panels:
        return None
    figure, axes = plt.subplots(len(panels), 1, figsize=(8, 3 * len(panels)), squeeze=False)
    for ax, (name, series) in zip(axes[:, 0], panels.items()):
        run_dir = run_dirs[name]
        stretch = stretch_of(run_dir)  # run seconds per scenario second (telemetry.clock)
        for host, s in series.items():  # goodput in Mbit/s of the scenario's clock too (rates times 1/f)
            ax.plot([t / stretch for t in s["t_s"]], [m * stretch for m in s["mbps"]], label=host, linewidth=0.9)
        for fault in read_jsonl(run_dir / "faults.jsonl") if (run_dir / "faults.jsonl").exists() else []:
            ax.axvline(fault["t_s"] / stretch, color="red", linestyle="--", linewidth=1)
            ax.annotate(f"{fault['kind']} {fault['target']}", (fault["t_s"] / stretch, ax.get_ylim()[1] * 0.95),
                        fontsize=7, color="red")
        for r in read_jsonl(run_dir / "reroute.jsonl") if (run_dir / "reroute.jsonl").exists() else []:
            ax.axvline(r["done_t_s"] / stretch, color="grey", linestyle=":", linewidth=1)
        ax.set_title(f"{name}: goodput received per host (in-order DATA payload)"
                     + (f", run x{stretch:.3g} slower" if abs(stretch - 1) > 1e-9 else ""), fontsize=9)
        ax.set_xlabel("time on the scenario's clock (s)")
        ax.set_ylabel("Mbit/s")
        ax.legend(fontsize=7, ncol=4, loc="lower right")
    figure.tight_layout()
    return figure
