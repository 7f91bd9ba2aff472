"""Collective figures as nccl-tests reports them, from a variant directory's raw files.

Per data-carrying collective (one row per collective instance: op,
algorithm, size, iteration):

* time: from the first message of the collective queued at any rank
  (`message_sent.start_us`) to the last rank's `collective_done.done_us`
  (the moment its buffer held every byte of its result), in microseconds;
* verified: every rank wrote `collective_done` with its whole result
  buffer equal, byte for byte, to the expected one;
* algbw = S / time, busbw = algbw x factor (all_reduce 2(n-1)/n;
  all_gather, reduce_scatter, all_to_all (n-1)/n), both in Mbit/s
  (10^6 bit/s) of payload; S is each rank's buffer (all_gather: the
  gathered output), as nccl-tests sizes them;
* ideal: the link-rate bound of the schedule actually run: every message
  as whole DATA cells on the wire (`derived.cell_wire_bytes` each) over
  the sender's NIC egress and the receiver's NIC ingress at the host link
  rate, or over its direction of the local channel at `links.local`'s rate
  when both ends share a server; the busiest of these resources sets the
  shortest possible time (the fabric is taken as non-blocking and
  perfectly balanced, control cells and latency as free).  ideal busbw is
  busbw at that time; busbw / ideal busbw is the fraction reached.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from testbed.telemetry.cells import fixed

BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}


def _server_of(scenario: dict, topology) -> dict[str, int]:
    return {h: s for s, gpus in topology.servers.items() for h in gpus} if topology is not None else {}


def link_rate_bound_us(messages: list[dict], scenario: dict, topology) -> tuple[float, str]:
    """Shortest time (us) the link rates allow these messages, and the resource that sets it."""
    cell = scenario["fabric"]["cell_size"]
    wire = scenario["derived"]["cell_wire_bytes"]
    host_bps = scenario["links"]["host"]["rate_mbps"] * 1e6
    local = scenario["links"].get("local") or {}
    local_bps = local.get("rate_mbps", 0) * 1e6
    server = _server_of(scenario, topology)
    load: dict[str, float] = {}  # resource -> bits
    for m in messages:
        bits = math.ceil(m["size_bytes"] / cell) * wire * 8
        if server.get(m["src"]) is not None and server.get(m["src"]) == server.get(m["dst"]):
            key = f"{m['src']} local out"
            load[key] = load.get(key, 0.0) + bits / local_bps
        else:
            for key in (f"{m['src']} NIC out", f"{m['dst']} NIC in"):
                load[key] = load.get(key, 0.0) + bits / host_bps
    worst = max(load, key=load.get)
    return load[worst] * 1e6, worst


def collective_rows(planned: list[dict], records: list[dict], scenario: dict, topology) -> dict[str, dict]:
    """Rows keyed by collective name, in workload order."""
    members: dict[str, list[dict]] = {}
    for m in planned:
        if m.get("op") and m.get("collective"):
            members.setdefault(m["collective"], []).append(m)
    starts: dict[str, float] = {}
    for r in records:
        if r["kind"] == "message_sent" and r.get("collective") in members:
            starts[r["collective"]] = min(starts.get(r["collective"], math.inf), r["start_us"])
    done: dict[str, list[dict]] = {}
    for r in records:
        if r["kind"] == "collective_done":
            done.setdefault(r["collective"], []).append(r)
    rows = {}
    for name, msgs in members.items():
        m0 = msgs[0]
        n, size, op = m0["ranks"], m0["collective_bytes"], m0["collective_kind"]
        ranks_done = done.get(name, [])
        row = {"op": op, "algorithm": m0.get("algorithm"), "ranks": n, "size_bytes": size,
               "messages": len(msgs), "ranks_done": len(ranks_done),
               "verified": len(ranks_done) == n and all(r["verified"] for r in ranks_done),
               "bus_factor": BUS_FACTOR[op](n)}
        ideal_us, bottleneck = link_rate_bound_us(msgs, scenario, topology)
        row["ideal_time_us"] = ideal_us
        row["ideal_bottleneck"] = bottleneck
        row["ideal_busbw_mbps"] = size * 8 / ideal_us * row["bus_factor"]
        if row["verified"] and name in starts:
            t_us = max(r["done_us"] for r in ranks_done) - starts[name]
            row["time_us"] = t_us
            row["algbw_mbps"] = size * 8 / t_us
            row["busbw_mbps"] = row["algbw_mbps"] * row["bus_factor"]
            row["busbw_over_ideal"] = row["busbw_mbps"] / row["ideal_busbw_mbps"]
        rows[name] = row
    return rows


def collective_figures(run_dir: Path, scenario: dict, topology) -> dict[str, dict]:
    """`collective_rows` from a variant directory (records/*.jsonl, agents/workload.json)."""
    path = run_dir / "agents" / "workload.json"
    if not path.exists():
        return {}
    planned = json.loads(path.read_text())["messages"]
    records = []
    for p in sorted((run_dir / "records").glob("*.jsonl")):
        records += [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    return collective_rows(planned, records, scenario, topology)


def report_lines(summaries: dict[str, dict]) -> list[str]:
    """The collectives table of a report: one line per variant and collective."""
    if not any(s.get("collectives") for s in summaries.values()):
        return []
    lines = ["## Collectives", "",
             "| variant | collective | op / algorithm | ranks | size (B) | verified | time (ms) | "
             "algbw (Mbit/s) | busbw (Mbit/s) | ideal busbw (Mbit/s) | busbw / ideal |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for variant, s in summaries.items():
        for name, r in (s.get("collectives") or {}).items():
            lines.append(
                f"| {variant} | {name} | {r['op']} / {r['algorithm']} | {r['ranks']} | {r['size_bytes']} | "
                f"{'yes' if r['verified'] else 'NO'} ({r['ranks_done']}/{r['ranks']} ranks) | "
                f"{fixed(r.get('time_us') and r['time_us'] / 1000, 2)} | {fixed(r.get('algbw_mbps'), 3)} | "
                f"{fixed(r.get('busbw_mbps'), 3)} | {fixed(r['ideal_busbw_mbps'], 3)} | "
                f"{fixed(r.get('busbw_over_ideal'), 3)} |")
    lines += ["", "algbw = S / time and busbw = algbw x (all_reduce 2(n-1)/n; all_gather, reduce_scatter, "
              "all_to_all (n-1)/n), Mbit/s of payload; time from the collective's first message queued to the "
              "last rank holding its whole verified result; ideal busbw: the schedule's link-rate bound "
              "(whole DATA cells over each NIC direction at the host link rate and each GPU's local egress at "
              "the local channel's rate, fabric non-blocking, control cells and latency free).", ""]
    return lines


def plot_busbw(summaries: dict[str, dict], path: Path) -> bool:
    """busbw (Mbit/s) against size (bytes, log scale), one line per variant, op and algorithm."""
    series: dict[str, dict[int, list[float]]] = {}
    ideal: dict[str, dict[int, float]] = {}
    for variant, s in summaries.items():
        for r in (s.get("collectives") or {}).values():
            if r.get("busbw_mbps") is None:
                continue
            label = f"{variant}: {r['op']} {r['algorithm']}" if len(summaries) > 1 else f"{r['op']} {r['algorithm']}"
            series.setdefault(label, {}).setdefault(r["size_bytes"], []).append(r["busbw_mbps"])
            ideal.setdefault(label, {})[r["size_bytes"]] = r["ideal_busbw_mbps"]
    if not series:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, points in series.items():
        sizes = sorted(points)
        line, = ax.plot(sizes, [sum(points[s]) / len(points[s]) for s in sizes], marker="o", label=label)
        ax.plot(sizes, [ideal[label][s] for s in sizes], linestyle="--", color=line.get_color(), linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size S per rank (bytes)")
    ax.set_ylabel("busbw (Mbit/s)")
    ax.set_title("Bus bandwidth against size (mean over iterations; dashed: link-rate ideal)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def summarize_simulated(run_dir: Path, topology) -> dict:
    """A simulator variant's figures: messages, collectives, the simulator's own counts."""
    import yaml

    from testbed.host.records import read_jsonl
    from testbed.telemetry.messages import host_records, message_figures, planned_messages

    scenario = yaml.safe_load((run_dir / "scenario.resolved.yaml").read_text())
    result = json.loads((run_dir / "result.json").read_text())
    recs = host_records(run_dir)
    sent = [r for r in recs if r["kind"] == "message_sent"]
    delivered = [r for r in recs if r["kind"] == "message_delivered"]
    summary = {"variant": result["variant"], "target": "simulator",
               "load_balancing": scenario["fabric"]["load_balancing"], "cc": scenario["transport"]["cc"]}
    summary.update(message_figures(planned_messages(run_dir), sent, delivered))
    summary["retransmissions_cells"] = sum(r["retransmissions"] for r in sent)
    # the simulated network's own counts; the machine's wall time is not one of them: it differs run
    # to run and stays in result.json (the report reads it there), so summary.json is byte-identical
    # for the same scenario and seed, serial or parallel
    summary["simulator"] = {k: result.get(k) for k in ("virtual_end_s", "events", "finished",
                                                       "switch_queue_drops", "switch_data_drops", "max_queue_cells",
                                                       "pause_frames", "lost_on_cut_links", "lost_on_lossy_links",
                                                       "dropped_by_stopped_switches", "data_cells")
                            if k in result}
    if result.get("reachability"):  # with tenants: the matrix measured before the traffic (telemetry.tenants)
        summary["reachability"] = result["reachability"]
    summary["collectives"] = collective_figures(run_dir, scenario, topology)
    from testbed.telemetry import training

    summary["jobs"] = training.job_figures(run_dir)
    path = run_dir / "faults.jsonl"
    summary["faults"] = read_jsonl(path) if path.exists() else []
    summary["faults_not_executed"] = result.get("faults_not_executed") or []
    from testbed.telemetry.inband import int_figures

    summary["int"] = int_figures(run_dir, topology)  # the simulator's own hop model (fabric.int)
    return summary


def _completion(summary: dict) -> str:
    """Completion p50 / p99 in ms with the sample count (nearest rank), '-' when no message completed."""
    if summary.get("completion_p50_ms") is None:
        return "-"
    return (f"{summary['completion_p50_ms']:.1f} / {summary['completion_p99_ms']:.1f} "
            f"(n={summary.get('completion_samples')}, nearest-rank)")


def data_conservation_lines(summaries: dict[str, dict]) -> list[str]:
    """Per variant, the simulator's DATA conservation (sim.Network.data_cells): sent = received + lost
    (by place) + in flight at the end, with the retransmissions those losses explain."""
    lines = []
    for name, s in summaries.items():
        cells = (s.get("simulator") or {}).get("data_cells")
        if cells is None:
            continue
        lost = " - ".join(f"{n} {place.replace('_', ' ')}" for place, n in cells["lost"].items())
        verdict = "balances" if cells["unaccounted"] == 0 else "**does not balance**"
        lines.append(f"- DATA conservation ({name}): sent {cells['sent']} - received {cells['received']} - {lost} "
                     f"- in flight at the end {cells['in_flight_at_end']} = {cells['unaccounted']}: {verdict}; "
                     f"{cells['lost_total']} lost, {s.get('retransmissions_cells', 0)} retransmitted.")
    return lines + [""] if lines else []


def write_sim_report(scenario, run_dirs: dict[str, Path], summaries: dict[str, dict], out_dir: Path,
                     partial: str | None = None) -> Path:
    """report.md, summary.json, busbw.png and training_timeline.png of a simulator run; `partial` (rundir.partial_line) opens it."""
    from testbed.telemetry.clock import clock_line, summaries_on_scenario_clock
    from testbed.telemetry.export import write_tables
    from testbed.telemetry.tenants import reachability_lines
    from testbed.telemetry.verdict_table import planned_fault_events, verdict_lines

    summaries = summaries_on_scenario_clock(run_dirs, summaries)  # what a user reads (telemetry.clock)
    k = scenario.time_stretch  # `scenario` as it ran: its links back on the file's clock for the header
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(summaries, indent=2, default=str))
    write_tables(run_dirs, summaries, out_dir, planned_fault_events(scenario))
    topo = scenario.topo
    lines = [partial, ""] if partial else []
    lines += ["Simulator run (virtual clock: timings are the model's, no CPU can make them late).", "",
             *reachability_lines(summaries), f"# {scenario.name}", "", scenario.description or "", "", *verdict_lines(summaries, planned_fault_events(scenario)),
             f"Topology {scenario.topology.kind}, {topo.counts.hosts} hosts"
             + (f" ({len(topo.servers)} servers x {topo.gpus_per_server} GPUs, "
                f"{'rail-optimised' if scenario.topology.rail_optimised else 'plain'})" if topo.servers else "")
             + f", {topo.counts.switches} switches; host links {scenario.links.host.rate_mbps * k:g} Mbit/s, "
             f"fabric {scenario.links.fabric.rate_mbps * k:g} Mbit/s"
             + (f", local channel {scenario.links.local.rate_mbps * k:g} Mbit/s / "
                f"{scenario.links.local.delay_us / k:g} us"
                if scenario.links.local else "") + ".", "",
             "| variant | messages planned / completed | completion p50 / p99 (ms), first DATA cell sent to last ACK | "
             "switch queue drops (packets) | PFC pause frames, XOFF + XON | virtual time (s) | machine's wall time (s) |",
             "|---|---|---|---|---|---|---|"]
    clock = clock_line(run_dirs)
    if clock:
        lines[-2:-2] = [clock, ""]
    for name, s in summaries.items():
        sim = s["simulator"]
        pauses = sim.get("pause_frames")
        wall_s = json.loads((run_dirs[name] / "result.json").read_text())["wall_s"]  # the machine's, not a figure
        lines.append(f"| {name} | {s['messages_planned']} / {s['messages_completed']} | {_completion(s)} | "
                     f"{sim['switch_queue_drops']} | {'off' if pauses is None else pauses} | "
                     f"{sim['virtual_end_s']:.4f} | {wall_s:.1f} |")
    lines.append("")
    lines += data_conservation_lines(summaries)
    from testbed.telemetry.faults import fault_lines

    lines += fault_lines(summaries)
    if any(s.get("faults") for s in summaries.values()):
        from testbed.telemetry.recovery import plot_goodput

        if plot_goodput(run_dirs, out_dir / "goodput.png"):
            lines += ["![Goodput received per host over time, faults marked](goodput.png)", ""]
    from testbed.telemetry import inband

    lines += inband.report_lines(summaries)
    if inband.plot_latency(run_dirs, summaries, lambda name: topo, out_dir / "int_latency.png"):
        lines += ["![In-band telemetry: hop latency CDF per tier](int_latency.png)", ""]
    from testbed.telemetry import training

    lines += training.report_lines(summaries)
    if training.plot_timeline(run_dirs, out_dir / "training_timeline.png"):
        lines += ["![Training jobs: compute, wait and exposed communication per GPU](training_timeline.png)", ""]
    lines += report_lines(summaries)
    if plot_busbw(summaries, out_dir / "busbw.png"):
        lines += ["![busbw (Mbit/s) against size (bytes)](busbw.png)", ""]
    lines.append("Run directories: " + ", ".join(f"`{p}`" for p in run_dirs.values()))
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
