"""One variant's figures, computed only from what its run directory holds.

Inputs: `records/*.jsonl` (host agents), `telemetry.jsonl` (switch counters
over time), `result.json` (ping-all, traffic-manager statistics, notes),
`scenario.resolved.yaml`, `records/*.stats.json` (each agent's transport
counters, added up), `records/int/*.jsonl` (in-band telemetry: `inband.py`).  Every figure names its unit in its key.

Links (every direction of every cable, idle ones included, data and control
apart): `links.py`; drops by type and place and the DATA conservation check:
`conservation.py`; message counts and times: `messages.py`; the fluid ideal
and measured / ideal: `ideal.py`.  The fidelity verdict covers the switches'
dequeue lag and the hosts' pacer lateness.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import yaml

from testbed.host.records import read_jsonl
from testbed.telemetry.collectives import collective_figures
from testbed.telemetry.training import job_figures
from testbed.telemetry.conservation import drops_and_balance
from testbed.telemetry.ideal import ideal_for_variant
from testbed.telemetry.inband import int_figures
from testbed.telemetry.links import by_tier, idle_siblings, link_loads
from testbed.telemetry.messages import host_records, message_figures, planned_messages
from testbed.telemetry.recovery import recovery
from testbed.telemetry.rundir import load_json, load_jsonl

# A switch whose dequeues ran behind schedule by more than one data cell's
# time on the host link (p99; never less than this floor) produced timings
# the CPU, not the modelled link, decided: below it, 99% of departures are
# within one transmission slot of the model.
FIDELITY_FLOOR_US = 1000.0
# Drop reasons in telemetry lines that the traffic managers counted (the simulator's and the
# switches' own 100 ms samples): not the program's; the drop table takes them from tm_stats.
DATA_PLANE_DROP_REASONS = frozenset({"queue_full", "credit_queue_full", "link_down", "link_loss"})


def fidelity_threshold_us(scenario: dict) -> float:
    """One data cell's serialization time on the host link, at least the floor."""
    cell_bits = scenario["derived"]["cell_wire_bytes"] * 8
    return max(FIDELITY_FLOOR_US, cell_bits / scenario["links"]["host"]["rate_mbps"])


def _telemetry(run_dir: Path) -> list[dict]:
    """The counter samples; a last line cut short by a killed run is left out (rundir.variant_gaps says so)."""
    path = run_dir / "telemetry.jsonl"
    if not path.exists():
        return []
    return load_jsonl(path)[0]


def traffic_window_s(sent: list[dict], delivered: list[dict]) -> tuple[float, float] | None:
    """First message start to last delivery, in seconds since the run's epoch."""
    if not sent or not delivered:
        return None
    return min(r["start_us"] for r in sent) / 1e6, max(r["delivered_us"] for r in delivered) / 1e6


def jain_fairness(values: list[float]) -> float | None:
    if not values or not any(values):
        return None
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


UPLINK_TIERS = ("leaf->spine", "edge->agg")
AGENT_COUNTERS = ("retransmissions", "timeouts", "nacks_sent", "cnps_sent", "cnps_received", "rate_cuts",
                  "credits_sent", "credits_lost", "credits_wasted", "corrupt_messages", "verify_failures",
                  "window_decreases", "quick_adapts")


def agent_stats(run_dir: Path) -> dict:
    """Sum of the agents' counters (records/<host>.stats.json), plus the hosts that did not end 'done'."""
    total: dict = {k: 0 for k in AGENT_COUNTERS}
    not_done = []
    rates = []
    windows = []  # nscc's smallest window per host
    for path in sorted((run_dir / "records").glob("*.stats.json")):
        try:
            stats = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            not_done.append(path.name.split(".")[0])
            continue
        for key in AGENT_COUNTERS:
            value = stats.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] += value
        if stats.get("min_rate_mbps") is not None:
            rates.append(stats["min_rate_mbps"])
        if stats.get("min_window_cells") is not None:
            windows.append(stats["min_window_cells"])
        if stats.get("end_reason") != "done":
            not_done.append(f"{stats.get('host', path.name)} ({stats.get('end_reason')})")
    total["min_rate_mbps"] = min(rates) if rates else None
    total["min_window_cells"] = min(windows) if windows else None
    total["agents_not_done"] = not_done
    return total


def host_stats(run_dir: Path) -> dict[str, dict]:
    """Each agent's stats file, by host; a file that cannot be read is left out."""
    out = {}
    for path in sorted((run_dir / "records").glob("*.stats.json")):
        try:
            stats = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        out[stats.get("host", path.name.split(".")[0])] = stats
    return out


def fidelity(scenario: dict, tm_stats: dict, hosts: dict[str, dict], target: str | None = "builtin",
             cpu_steal_share: float | None = None, tunnels: dict | None = None,
             cpu_busy_share: float | None = None, cpu_busiest_second_share: float | None = None) -> dict:
    """Switches: p99 dequeue lag of each traffic manager; hosts: p99 pacer lateness of each agent.
    Either beyond one data cell's time on the host link means the CPU, not the model, set the timing.
    bmv2 reports no departure lag: its switches are "not checked", never "kept". The share of the
    machine's CPU its hypervisor took over the run (result.json's costs) is carried along: it is
    one reason a run falls behind that no setting of the run removes; so are the shares of the
    machine's ticks its cores were busy over the traffic and in its busiest second
    (testbed.emulation.machine_load): cores busy all of a second mean the fabric asked for more CPU
    than the machine has at these rates.
    A fabric over several servers: each cross-server cable's tunnel (result.json's `tunnels`, its
    measured one-way delay and jitter) adds its delay to the modelled link delay the switches
    apply; a tunnel whose p99 one-way delay exceeds the same threshold made that cable late.
    A host whose agent an agent_stall fault stopped is not judged: its cells due during the stall
    left late because the scenario stopped it, not because the CPU fell behind; it is named in
    `hosts_not_judged`."""
    threshold = fidelity_threshold_us(scenario)
    stalled = sorted({f.get("target") for f in scenario.get("faults") or [] if f.get("kind") == "agent_stall"}
                     & set(hosts))
    cables = cross_server_cables(scenario, tunnels or {}, threshold)
    switch_lag = [(s.get("tm", {}).get("fidelity", {}).get("dequeue", {}).get("p99_lag_us"), name)
                  for name, s in tm_stats.items()]
    switch_lag = [x for x in switch_lag if x[0] is not None]
    host_late = [((h.get("pacer_lateness") or {}).get("p99_us"), name) for name, h in hosts.items()]
    host_late = [x for x in host_late if x[0] is not None and x[1] not in stalled]
    worst_switch = max(switch_lag, default=None)
    worst_host = max(host_late, default=None)
    switches_behind = bool(worst_switch and worst_switch[0] > threshold)
    hosts_behind = bool(worst_host and worst_host[0] > threshold)
    late_cables = sorted(name for name, c in cables.items() if c["late"])
    return {"threshold_us": threshold,
            "worst_p99_dequeue_lag_us": worst_switch[0] if worst_switch else None,
            "switch": worst_switch[1] if worst_switch else None,
            "worst_p99_pacer_lateness_us": worst_host[0] if worst_host else None,
            "host": worst_host[1] if worst_host else None,
            "host_p99_pacer_lateness_us": {name: v for v, name in sorted(host_late, key=lambda x: x[1])},
            "hosts_not_judged": {name: "an agent_stall fault stopped its agent" for name in stalled},
            "switches_behind": switches_behind, "hosts_behind": hosts_behind,
            "behind_real_time": switches_behind or hosts_behind or bool(late_cables),
            "switches_checked": target != "bmv2", "cpu_steal_share": cpu_steal_share,
            "cpu_busy_share": cpu_busy_share, "cpu_busiest_second_share": cpu_busiest_second_share,
            "cross_server_cables": cables or None, "late_cables": late_cables}


def cross_server_cables(scenario: dict, tunnels: dict, threshold_us: float) -> dict:
    """Each tunnelled cable: its servers, the modelled link delay, the tunnel's measured one-way delay
    (mean, p99) and jitter, and whether it made the cable late (p99 beyond `threshold_us`, or no
    probe came back)."""
    modelled = ((scenario.get("links") or {}).get("fabric") or {}).get("delay_us")
    out = {}
    for cable, t in sorted(tunnels.items()):
        one_way = t.get("one_way_us") or {}
        out[cable] = {"servers": t.get("servers"), "modelled_delay_us": modelled,
                      "one_way_mean_us": one_way.get("mean"), "one_way_p99_us": one_way.get("p99"),
                      "jitter_us": t.get("jitter_us"), "probes": [t.get("received"), t.get("sent")],
                      "late": not one_way or one_way.get("p99", 0) > threshold_us}
    return out


def variant_scenario(resolved: dict, variant: str | None):
    """The variant's Scenario object, rebuilt from the scenario file the run names (None if it is gone)."""
    from testbed.scenario import expand_variants, load_scenario
    from testbed.scenario.errors import ScenarioError

    path = Path(resolved.get("file") or "")
    if not path.is_file():
        return None
    try:
        variants = expand_variants(load_scenario(str(path)))
    except ScenarioError:
        return None
    return next((v.scenario for v in variants if v.name == variant), None)


def summarize_variant(run_dir: Path, topology, scenario_obj=None) -> dict:
    """`scenario_obj`: the variant's Scenario (lets ECMP paths be traced); rebuilt from the file if not given."""
    scenario = yaml.safe_load((run_dir / "scenario.resolved.yaml").read_text())
    result = load_json(run_dir / "result.json") if (run_dir / "result.json").exists() else {}
    if scenario_obj is None:
        scenario_obj = variant_scenario(scenario, result.get("variant"))
    records = host_records(run_dir)
    samples = _telemetry(run_dir)
    hosts = host_stats(run_dir)
    tm_stats = result.get("tm_stats") or {}
    sent = [r for r in records if r["kind"] == "message_sent"]
    delivered = [r for r in records if r["kind"] == "message_delivered"]
    planned = planned_messages(run_dir)
    summary: dict = {"variant": result.get("variant"), "target": result.get("target"),
                     "load_balancing": scenario["fabric"]["load_balancing"]}
    summary.update(message_figures(planned, sent, delivered))
    summary["retransmissions_cells"] = sum(r["retransmissions"] for r in sent)
    window = traffic_window_s(sent, delivered)
    summary["traffic_window_s"] = list(window) if window else None
    if delivered:
        start = min(r["first_cell_us"] for r in delivered)
        end = max(r["delivered_us"] for r in delivered)
        total = sum(r["bytes"] for r in delivered if r["verified"])
        summary["goodput_mbps"] = total * 8 / (end - start) if end > start else None
        summary["cells_out_of_order"] = sum(r["cells_out_of_order"] for r in delivered)
        summary["max_ooo_distance_cells"] = max(r["max_ooo_distance_cells"] for r in delivered)
        summary["peak_reorder_buffer_cells"] = max(r["peak_reorder_buffer_cells"] for r in delivered)
        summary["ce_cells"] = sum(r["ce_cells"] for r in delivered)

    last_per_switch = {}
    for sample in samples:
        last_per_switch[sample["switch"]] = sample
    program_drops: dict[str, int] = {}
    for sample in last_per_switch.values():
        for reason, packets in sample["drops_packets"].items():
            if reason in DATA_PLANE_DROP_REASONS:  # the traffic managers' own, counted from tm_stats
                continue
            program_drops[reason] = program_drops.get(reason, 0) + packets
    summary["drops"] = drops_and_balance(tm_stats, program_drops, hosts, result.get("host_counters") or {},
                                         result.get("target"), result.get("restarts"))
    summary["ecn_marks_packets"] = sum(sum(s["ecn_marks_packets"].values()) for s in last_per_switch.values())
    # The program's register sees enq_qdepth (data and credits alike); the traffic manager its own
    # peak per queue (data queues only): report the larger.
    tm_peaks = [q.get("max_depth", 0) for s in tm_stats.values() for q in s.get("queues", [])
                if q.get("priority", 0) == 0]
    peaks = [v for s in samples for v in s["max_qdepth_packets"].values()] + tm_peaks
    summary["max_queue_depth_packets"] = max(peaks) if peaks else 0

    seconds = window[1] - window[0] if window and window[1] > window[0] else None
    slot = scenario["derived"]["cell_wire_bytes"] if result.get("target") == "bmv2" else None
    loads = link_loads(topology, scenario, samples, tm_stats, hosts, seconds, slot_bytes=slot)
    summary["links"] = [load.to_json() for load in loads]
    summary["tiers"] = by_tier(loads)
    summary["idle_siblings"] = idle_siblings(topology, loads)
    uplinks = {load.link: load.utilisation for load in loads if load.tier in UPLINK_TIERS}
    summary["uplink_utilisation"] = dict(sorted(uplinks.items()))
    if uplinks:
        values = list(uplinks.values())
        summary["uplink_utilisation_min"] = min(values)
        summary["uplink_utilisation_max"] = max(values)
        summary["uplink_utilisation_stdev"] = statistics.pstdev(values)
        summary["uplink_jain_fairness"] = jain_fairness(values)
    ideal = ideal_for_variant(topology, scenario, planned, hosts, loads, scenario_obj, packet_slot_bytes=slot)
    summary["ideal"] = ideal
    summary["measured_over_ideal"] = measured_over_ideal(summary, ideal)
    summary["agents"] = agent_stats(run_dir)
    summary["pfc"] = pfc_figures(scenario, tm_stats, hosts)
    summary["pingall"] = result.get("pingall")
    summary["reachability"] = result.get("reachability")  # a simulated run with tenants (telemetry.tenants)
    summary["notes"] = result.get("notes", [])
    costs = result.get("costs") or {}
    summary["fidelity"] = fidelity(scenario, tm_stats, hosts, result.get("target"),
                                   costs.get("machine_cpu_steal_share"), result.get("tunnels"),
                                   costs.get("machine_cpu_busy_share"), costs.get("machine_cpu_busiest_second_share"))
    summary["faults"] = faults(run_dir)
    summary["faults_not_executed"] = result.get("faults_not_executed") or []
    summary["recovery"] = recovery(run_dir, scenario, topology)
    summary["collectives"] = collective_figures(run_dir, scenario, topology)
    summary["jobs"] = job_figures(run_dir)
    summary["int"] = int_figures(run_dir, topology)
    return summary


def pfc_figures(scenario: dict, tm_stats: dict, hosts: dict[str, dict]) -> dict | None:
    """Pause frames and paused time, switches (their traffic managers) and hosts (their NICs);
    None when the scenario has no PFC."""
    if not ((scenario.get("fabric") or {}).get("pfc") or {}).get("enabled"):
        return None
    out = {"switch_xoff_sent": 0, "switch_xon_sent": 0, "switch_ports_paused": 0, "switch_paused_ms": 0.0,
           "host_xoff_received": 0, "host_xon_received": 0, "host_paused_ms": 0.0, "host_held_cells_max": 0}
    for stats in tm_stats.values():
        tm = stats.get("tm") or {}
        sent = tm.get("pfc") or {}
        out["switch_xoff_sent"] += sent.get("xoff_sent", 0)
        out["switch_xon_sent"] += sent.get("xon_sent", 0)
        for port in tm.get("ports", []):
            out["switch_ports_paused"] += port.get("pfc_pauses_received", 0)
            out["switch_paused_ms"] += port.get("pfc_paused_us", 0.0) / 1000
    for stats in hosts.values():
        nic = stats.get("pfc") or {}
        out["host_xoff_received"] += nic.get("xoff_frames", 0)
        out["host_xon_received"] += nic.get("xon_frames", 0)
        out["host_paused_ms"] += nic.get("paused_s", 0.0) * 1000
        out["host_held_cells_max"] = max(out["host_held_cells_max"], nic.get("held_cells_max", 0))
    out["switch_paused_ms"] = round(out["switch_paused_ms"], 3)
    out["host_paused_ms"] = round(out["host_paused_ms"], 3)
    return out


def faults(run_dir: Path) -> list[dict]:
    """The faults the run carried out (faults.jsonl), in the order they happened."""
    path = run_dir / "faults.jsonl"
    return read_jsonl(path) if path.exists() else []


def measured_over_ideal(summary: dict, ideal: dict | None) -> dict | None:
    """Goodput, completion p50/p99 and per-tier mean utilisation, measured / ideal."""
    if not ideal or "unavailable" in ideal:
        return None

    def ratio(a, b):
        return a / b if a is not None and b else None

    return {"goodput": ratio(summary.get("goodput_mbps"), ideal["goodput_mbps"]),
            "completion_p50": ratio(summary.get("completion_p50_ms"), ideal["completion_p50_ms"]),
            "completion_p99": ratio(summary.get("completion_p99_ms"), ideal["completion_p99_ms"]),
            "tiers": {t: ratio(summary["tiers"][t]["utilisation_mean"], v["utilisation_mean"])
                      for t, v in ideal["tiers"].items() if t in summary["tiers"]}}
