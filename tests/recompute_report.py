"""Recompute every figure of a run's summary.json and report.md from the raw files, and compare.

    python tests/recompute_report.py runs/default/<timestamp>

A second, independent implementation: it reads only the variant
directories' raw files (agents' records and stats, workload, telemetry
samples, traffic-manager statistics, host counters, resolved scenario) and
uses nothing of testbed.telemetry but the fluid model itself (whose own
tests check it against hand-worked cases); the topology comes from
testbed.topo.  Every mismatch is printed; the exit status is 1 if there is
any, 0 if every figure agrees.

The raw files are on the run's clock; summary.json and the report on the
scenario's (a run slowed by --fit or --host-rate-mbps has time_stretch k in
its resolved scenario): each recomputed figure is put there by its key's unit,
a time (_s, _ms, _us) over k, a rate (_mbps) times k, before it is compared.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import yaml

from testbed.cells.wire import ACK, DATA, FRAME_OVERHEAD, HEADER_LEN, SACK_BYTES, TYPE_NAMES
from testbed.telemetry import fluid
from testbed.topo.build import build_topology

TYPES = TYPE_NAMES
FRAME = FRAME_OVERHEAD + HEADER_LEN  # Ethernet, IPv4, UDP, cell header
REL = 1e-9


def wire(cell_type: int, cell_size: int) -> int:
    return FRAME + (cell_size if cell_type == DATA else SACK_BYTES if cell_type == ACK else 0)


def rank(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Variant:
    """The raw files of one variant directory."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self.scenario = yaml.safe_load((run_dir / "scenario.resolved.yaml").read_text())
        self.result = json.loads((run_dir / "result.json").read_text())
        self.topology = build_topology(self.scenario["topology"])
        self.records = [r for p in sorted((run_dir / "records").glob("*.jsonl")) for r in read_lines(p)]
        self.stats = {}
        for p in sorted((run_dir / "records").glob("*.stats.json")):
            s = json.loads(p.read_text())
            self.stats[s.get("host", p.name.split(".")[0])] = s
        self.samples = read_lines(run_dir / "telemetry.jsonl")
        workload = run_dir / "agents" / "workload.json"
        self.planned = json.loads(workload.read_text())["messages"] if workload.exists() else []
        self.tm = self.result.get("tm_stats") or {}
        self.cell = self.scenario["fabric"]["cell_size"]
        int_dir = run_dir / "records" / "int"
        self.int_records = ([r for p in sorted(int_dir.glob("*.jsonl")) for r in read_lines(p)]
                            if int_dir.is_dir() else None)


def recompute(v: Variant) -> dict:
    """The figures, keyed like summary.json (nested keys joined by '/')."""
    out: dict = {}
    sent = [r for r in v.records if r["kind"] == "message_sent"]
    got = [r for r in v.records if r["kind"] == "message_delivered"]
    plan = {(m["src"], m["dst"], m["msg_id"]) for m in v.planned}
    ok = {(r["src"], r["dst"], r["msg_id"]) for r in got if r["verified"]}
    acked = {(r["src"], r["dst"], r["msg_id"]) for r in sent}
    out["messages_planned"] = len(plan)
    out["messages_completed"] = len(plan & ok & acked)
    completion = [r["completion_us"] / 1000 for r in sent]
    out["completion_samples"] = len(completion)
    out["completion_p50_ms"] = rank(completion, 50)
    out["completion_p99_ms"] = rank(completion, 99)
    out["queueing_p50_ms"] = rank([r["queueing_us"] / 1000 for r in sent], 50)
    out["queueing_max_ms"] = max(r["queueing_us"] / 1000 for r in sent) if sent else None
    out["retransmissions_cells"] = sum(r["retransmissions"] for r in sent)
    first_cell = min(r["first_cell_us"] for r in got)
    last = max(r["delivered_us"] for r in got)
    out["goodput_mbps"] = sum(r["bytes"] for r in got if r["verified"]) * 8 / (last - first_cell)
    window = (min(r["start_us"] for r in sent) / 1e6, last / 1e6)
    seconds = window[1] - window[0]

    # links: every port of every node, both directions
    def delta(switch, key, unit="bytes"):  # a counter that went down was restarted from 0
        series = sorted((s for s in v.samples if s["switch"] == switch), key=lambda s: s["t_s"])
        out = {int(p): 0 for p in series[0][key]}
        for a, b in zip(series, series[1:]):
            for p, c in b[key].items():
                prev = a[key].get(p, {unit: 0})[unit]
                out[int(p)] = out.get(int(p), 0) + (c[unit] - prev if c[unit] >= prev else c[unit])
        return out

    tx = {s: delta(s, "tx") for s in v.topology.switches}
    rx = {s: delta(s, "rx") for s in v.topology.switches}
    # bmv2's links are packets/s queues: a packet of any size takes one data cell's slot
    slot = wire(DATA, v.cell) if v.result.get("target") == "bmv2" else None
    tx_packets = {s: delta(s, "tx", "packets") for s in v.topology.switches}
    loads = {}
    for node in list(v.topology.switches) + list(v.topology.hosts):
        for port in v.topology.ports(node):
            rate = v.scenario["links"]["host" if port.tier == "host" else "fabric"]["rate_mbps"] * 1e6
            name = f"{node}:{port.number}->{port.peer}"
            if v.topology.node(node).is_host:
                total = rx[port.peer].get(port.peer_port, 0)
                used = total  # the host's own pacer sends bits on either target
                counts = v.stats.get(node, {}).get("tx_counts")
                data = control = None
                if counts is not None and len(v.topology.ports(node)) == 1:
                    data = control = 0
                    for t, tname in TYPES.items():
                        n = counts.get(f"tx_{tname}", 0)
                        if t == DATA:
                            data += n * wire(t, v.cell)
                        else:
                            control += n * wire(t, v.cell)
            else:
                total = tx[node].get(port.number, 0)
                used = tx_packets[node].get(port.number, 0) * slot if slot else total
                rows = [q for q in v.tm.get(node, {}).get("queues", []) if q["port"] == port.number]
                data = sum(q["by_class"].get("0", {}).get("bytes", 0) for q in rows) if rows else None
                control = (sum(c["bytes"] for q in rows for k, c in q["by_class"].items() if 1 <= int(k) <= 6)
                           if rows else None)  # no traffic-manager counts (bmv2): the split is unknown
            a, b = v.topology.node(node), v.topology.node(port.peer)
            short = {"leaf": "leaf", "spine": "spine", "edge": "edge", "aggregation": "agg", "core": "core"}
            tier = "host->tor" if a.is_host else "tor->host" if b.is_host else f"{short[a.kind]}->{short[b.kind]}"
            loads[name] = {"tier": tier, "source": node, "peer": port.peer, "rate": rate, "total": total,
                           "data": data, "control": control, "util": used * 8 / seconds / rate}
            out[f"links/{name}/total_bytes"] = total
            out[f"links/{name}/data_bytes"] = data
            out[f"links/{name}/control_bytes"] = control
            out[f"links/{name}/utilisation"] = loads[name]["util"]
    uplinks = [l["util"] for l in loads.values() if l["tier"] in ("leaf->spine", "edge->agg")]
    if uplinks:
        out["uplink_utilisation_min"] = min(uplinks)
        out["uplink_utilisation_max"] = max(uplinks)
        # every uplink idle (a rail-optimised hierarchical collective stays under its leaves): no index
        out["uplink_jain_fairness"] = (sum(uplinks) ** 2 / (len(uplinks) * sum(x * x for x in uplinks))
                                       if any(uplinks) else None)
    level = {"host": 0, "leaf": 1, "edge": 1, "aggregation": 2, "spine": 2, "core": 3}
    groups: dict = {}
    for name, l in loads.items():
        up = level[v.topology.node(l["peer"]).kind] > level[v.topology.node(l["source"]).kind]
        groups.setdefault((l["source"], l["tier"]) if up else (l["source"], l["peer"]), []).append(name)
    idle = lambda n: (loads[n]["data"] if loads[n]["data"] is not None else loads[n]["total"]) == 0  # noqa: E731
    out["idle_siblings"] = sorted(n for g in groups.values() if len(g) > 1 and any(not idle(m) for m in g)
                                  for n in g if idle(n))
    for tier in {l["tier"] for l in loads.values()}:
        members = [n for n, l in loads.items() if l["tier"] == tier]
        out[f"tiers/{tier}/utilisation_mean"] = sum(loads[n]["util"] for n in members) / len(members)
        out[f"tiers/{tier}/idle_links"] = sum(idle(n) for n in members)

    # drops and conservation
    names = {**TYPES, 14: "other", 15: "unclassified"}
    queue = {}
    for s in v.tm.values():
        for q in s.get("queues", []):
            for k, c in (q.get("by_class") or {}).items():
                if c["dropped"]:
                    queue[names[int(k)]] = queue.get(names[int(k)], 0) + c["dropped"]
    out["drops/switch_queue_drops_by_type"] = queue
    tx_n = {t: sum(s.get("tx_counts", {}).get(f"tx_{t}", 0) for s in v.stats.values()) for t in TYPES.values()}
    rx_n = {t: sum(s.get("rx_counts", {}).get(f"rx_{t}", 0) for s in v.stats.values()) for t in TYPES.values()}
    hc = v.result.get("host_counters") or {}
    qdisc = socket = no_ports = 0
    for host, after in (hc.get("after") or {}).items():
        before = hc["before"].get(host, {})
        no_ports += after["udp"].get("NoPorts", 0) - before.get("udp", {}).get("NoPorts", 0)
        qdisc += sum(c["drops"] - before.get("qdisc", {}).get(i, {}).get("drops", 0) for i, c in after["qdisc"].items())
        in_err = after["udp"].get("InErrors", 0) - before.get("udp", {}).get("InErrors", 0)
        buf = after["udp"].get("RcvbufErrors", 0) - before.get("udp", {}).get("RcvbufErrors", 0)
        socket += max(in_err, buf)
    out["drops/untyped_losses_packets/host qdisc"] = qdisc
    out["drops/untyped_losses_packets/host socket receive"] = socket
    out["drops/untyped_losses_packets/host without a listener"] = no_ports
    lost = sum(n for s in v.tm.values() for p in s.get("tm", {}).get("ports", [])
               for k, n in (p.get("lost_link_by_class") or {}).items() if names[int(k)] == "DATA")
    cut = sum(c.get("tx_errors", 0) for s in v.tm.values() for c in (s.get("port_io") or {}).values())
    for host, after in (hc.get("after") or {}).items():
        before = hc["before"].get(host, {})
        cut += sum(c.get("tx_dropped", 0) + c.get("tx_errors", 0)
                   - before.get("link", {}).get(i, {}).get("tx_dropped", 0)
                   - before.get("link", {}).get(i, {}).get("tx_errors", 0) for i, c in after.get("link", {}).items())
    out["drops/by_type/DATA/link_losses"] = lost
    unaccounted = tx_n["DATA"] - rx_n["DATA"] - queue.get("DATA", 0) - lost
    out["drops/by_type/DATA/sent"] = tx_n["DATA"]
    out["drops/by_type/DATA/received"] = rx_n["DATA"]
    out["drops/by_type/DATA/unaccounted"] = unaccounted
    last_sample = {}
    for s in v.samples:
        last_sample[s["switch"]] = s
    program = sum(n for s in last_sample.values() for r, n in s["drops_packets"].items() if r != "credit_over_rate")
    slack = (program + qdisc + socket + no_ports + cut
             + sum(s.get("socket_errors", 0) + (s.get("errors") or {}).get("malformed", 0) for s in v.stats.values())
             + sum(p.get("dropped_priority", 0) for s in v.tm.values() for p in s.get("tm", {}).get("ports", []))
             + sum(q.get("depth", 0) for s in v.tm.values() for q in s.get("queues", [])))
    if hc.get("after") and v.result.get("target") == "builtin" and not v.result.get("restarts"):
        out["drops/data_balance/verdict"] = ("balances" if unaccounted == 0 else "balances within untyped losses"
                                             if 0 < unaccounted <= slack else "does not balance")
    out["ecn_marks_packets"] = sum(sum(s["ecn_marks_packets"].values()) for s in last_sample.values())

    # PFC: the traffic managers' pause decisions and the host NICs' pauses
    if ((v.scenario.get("fabric") or {}).get("pfc") or {}).get("enabled"):
        tms = [s.get("tm", {}) for s in v.tm.values()]
        out["pfc/switch_xoff_sent"] = sum((tm.get("pfc") or {}).get("xoff_sent", 0) for tm in tms)
        out["pfc/switch_xon_sent"] = sum((tm.get("pfc") or {}).get("xon_sent", 0) for tm in tms)
        out["pfc/switch_ports_paused"] = sum(p.get("pfc_pauses_received", 0) for tm in tms for p in tm.get("ports", []))
        out["pfc/host_xoff_received"] = sum((s.get("pfc") or {}).get("xoff_frames", 0) for s in v.stats.values())

    # fidelity
    threshold = max(1000.0, v.scenario["derived"]["cell_wire_bytes"] * 8 / v.scenario["links"]["host"]["rate_mbps"])
    lags = [s["tm"]["fidelity"]["dequeue"]["p99_lag_us"] for s in v.tm.values()
            if s.get("tm", {}).get("fidelity", {}).get("dequeue", {}).get("p99_lag_us") is not None]
    late = [s["pacer_lateness"]["p99_us"] for s in v.stats.values()
            if (s.get("pacer_lateness") or {}).get("p99_us") is not None]
    out["fidelity/worst_p99_dequeue_lag_us"] = max(lags, default=None)
    out["fidelity/worst_p99_pacer_lateness_us"] = max(late, default=None)
    out["fidelity/behind_real_time"] = bool((lags and max(lags) > threshold) or (late and max(late) > threshold))
    out["fidelity/cpu_steal_share"] = (v.result.get("costs") or {}).get("machine_cpu_steal_share")  # /proc/stat's
    # the cores' busy share over the traffic and in its busiest second, from the raw /proc/stat
    # readings [t_s, steal, idle, total] the run kept (intervals under 0.5 s give no second's share)
    samples = (v.result.get("costs") or {}).get("machine_cpu_samples") or []
    busy = None
    seconds = []
    if len(samples) >= 2:
        busy = round(1 - (samples[-1][2] - samples[0][2]) / (samples[-1][3] - samples[0][3]), 4)
        seconds = [round(1 - (b[2] - a[2]) / (b[3] - a[3]), 4) for a, b in zip(samples, samples[1:])
                   if b[0] - a[0] >= 0.5 and b[3] > a[3]]
    out["fidelity/cpu_busy_share"] = busy
    out["fidelity/cpu_busiest_second_share"] = max(seconds, default=None)

    out.update(recompute_ideal(v, loads, out))
    return out


def recompute_int(v: Variant) -> dict:
    """In-band telemetry: per switch kind, nearest-rank p50/p99 of the hop records' latency and
    queue depth (records/int/*.jsonl; hops are [switch_id, port, qdepth, latency_us])."""
    if v.int_records is None:
        return {}
    kind = {v.topology.node(s).device_id: v.topology.node(s).kind for s in v.topology.switches}
    out: dict = {"int/cells": len(v.int_records),
                 "int/overflow_cells": sum(1 for r in v.int_records if r["overflow"])}
    tiers: dict = {}
    for r in v.int_records:
        for sid, _port, depth, latency in r["hops"]:
            if sid in kind:
                tiers.setdefault(kind[sid], []).append((latency, depth))
    for tier, hops in tiers.items():
        lat, dep = [h[0] for h in hops], [h[1] for h in hops]
        out[f"int/tiers/{tier}/hops"] = len(hops)
        out[f"int/tiers/{tier}/latency_p50_us"] = rank(lat, 50)
        out[f"int/tiers/{tier}/latency_p99_us"] = rank(lat, 99)
        out[f"int/tiers/{tier}/latency_max_us"] = max(lat)
        out[f"int/tiers/{tier}/qdepth_p50_packets"] = rank(dep, 50)
        out[f"int/tiers/{tier}/qdepth_p99_packets"] = rank(dep, 99)
    return out


def recompute_ideal(v: Variant, loads: dict, measured: dict) -> dict:
    out = {}
    server = {g: s for s, gpus in v.topology.servers.items() for g in gpus}
    fabric = [m for m in v.planned if not (m["src"] in server and server[m["src"]] == server.get(m["dst"]))]
    if not fabric:
        return out
    flows: dict = {}
    for m in sorted(fabric, key=lambda m: m["start_us"]):
        flows.setdefault((m["src"], m["dst"]), []).append(m)

    def cells(size):
        return -(-(size + 4) // v.cell)

    def paths(a, b):
        return [[f"{p.nodes[i]}:{p.ports[i][0]}->{p.nodes[i + 1]}" for i in range(len(p.links))]
                for p in v.topology.paths(a, b)]

    volume = {k: sum(cells(m["size_bytes"]) for m in ms) * wire(DATA, v.cell) for k, ms in flows.items()}
    ratio, slot_ratio = {}, {}
    for dst in {k[1] for k in flows}:
        counts = v.stats.get(dst, {}).get("tx_counts")
        if counts is not None:
            received = sum(vol for k, vol in volume.items() if k[1] == dst)
            control = {t: n for t, n in TYPES.items() if t not in (DATA, 4)}  # no NACKs: the ideal loses nothing
            ratio[dst] = sum(counts.get(f"tx_{n}", 0) * wire(t, v.cell) for t, n in control.items()) / received
            # bmv2's switch queues count packets: a control cell takes a whole data cell's slot there
            slot_ratio[dst] = (sum(counts.get(f"tx_{n}", 0) for n in control.values())
                               * wire(DATA, v.cell) / received if v.result.get("target") == "bmv2" else ratio[dst])

    def best_single(cands: dict, vol: dict, key: str):
        considered = {l for ps in cands.values() for p in ps for l in p if sum(l in q for q in ps) < len(ps)}
        order = sorted(cands)
        if math.prod(len(cands[f]) for f in order) > 1 << 14:
            return None  # too many to try them all: the ideal is then not recomputed (said in the output)
        combos = itertools.product(*(range(len(cands[f])) for f in order))

        def score(combo):
            pred = dict.fromkeys(considered, 0.0)
            for f, i in zip(order, combo):
                for l in cands[f][i]:
                    if l in pred:
                        pred[l] += vol[f]
            return sum(abs(loads[l][key] - pred[l]) for l in considered)

        chosen = min(combos, key=score)
        return {f: [cands[f][i]] for f, i in zip(order, chosen)}

    spray = v.scenario["fabric"]["load_balancing"].startswith("spray")
    forward = {k: paths(*k) for k in flows}
    reverse = {k: paths(k[1], k[0]) for k in flows}
    control_volume = {k: volume[k] * ratio.get(k[1], 0.0) for k in flows}
    traced = None if spray else trace(v, list(flows) + [(d, s) for s, d in flows])
    if traced is not None:
        data_paths = {k: [traced[k]] for k in flows}
        control_paths = {k: [traced[(k[1], k[0])]] for k in flows}
    else:
        data_paths = forward if spray else best_single(forward, volume, "data")
        control_paths = reverse if spray or not any(control_volume.values()) else \
            best_single(reverse, control_volume, "control")
        if data_paths is None or control_paths is None:
            print(f"{v.dir}: ECMP paths neither traced nor few enough to infer exhaustively; ideal not recomputed")
            return out
    model = []
    for k, ms in flows.items():
        usage = {}
        for p in data_paths[k]:
            for l in p:
                usage[l] = usage.get(l, 0.0) + 1 / len(data_paths[k])
        for p in control_paths[k]:
            for i, l in enumerate(p):  # the first link is the receiver's own NIC: bytes on either target
                r = ratio.get(k[1], 0.0) if i == 0 else slot_ratio.get(k[1], 0.0)
                usage[l] = usage.get(l, 0.0) + r / len(control_paths[k])
        model.append(fluid.FluidFlow(f"{k[0]}->{k[1]}", [(cells(m["size_bytes"]) * wire(DATA, v.cell) * 8.0,
                                                          m["start_us"] / 1e6) for m in ms], usage))
    result = fluid.simulate(model, {n: l["rate"] for n, l in loads.items()})
    start = min(a for ms in result.messages.values() for a, _ in ms)
    end = max(b for ms in result.messages.values() for _, b in ms)
    completion = [(b - a) * 1e3 for ms in result.messages.values() for a, b in ms]
    out["ideal/goodput_mbps"] = sum(m["size_bytes"] for m in fabric) * 8 / (end - start) / 1e6
    out["ideal/completion_p50_ms"] = rank(completion, 50)
    out["ideal/completion_p99_ms"] = rank(completion, 99)
    for n, l in loads.items():
        out[f"ideal/link_utilisation/{n}"] = result.link_bits.get(n, 0.0) / ((end - start) * l["rate"])
    out["measured_over_ideal/goodput"] = measured["goodput_mbps"] / out["ideal/goodput_mbps"]
    if measured["completion_p50_ms"] is not None:
        out["measured_over_ideal/completion_p50"] = measured["completion_p50_ms"] / out["ideal/completion_p50_ms"]
        out["measured_over_ideal/completion_p99"] = measured["completion_p99_ms"] / out["ideal/completion_p99_ms"]
    return out


def recompute_recovery(v: Variant) -> dict:
    """Detection, reroute and goodput before/after of each host port a fault cut off."""
    faults = read_lines(v.dir / "faults.jsonl") if (v.dir / "faults.jsonl").exists() else []
    reroutes = read_lines(v.dir / "reroute.jsonl") if (v.dir / "reroute.jsonl").exists() else []
    cuts = []
    for f in faults:
        if f.get("error"):
            continue
        if f["kind"] == "link_down":
            link = v.topology.link(f["target"])
            ends = [(n, link.a_port if n == link.a else link.b_port) for n in (link.a, link.b)]
            cuts += [(f, n, port) for n, port in ends if v.topology.node(n).is_host][:1]
        elif f["kind"] == "switch_stop":
            cuts += [(f, p.peer, p.peer_port) for p in v.topology.ports(f["target"]) if p.tier == "host"]
    out = {}

    def mbps(s, a, b):  # cumulative in-order cells between the first and last sample inside [a, b]
        idx = [i for i, t in enumerate(s["t_s"]) if a <= t <= b]
        if len(idx) < 2 or s["t_s"][idx[-1]] <= s["t_s"][idx[0]]:
            return None
        cells = s["in_order_cells"][idx[-1]] - s["in_order_cells"][idx[0]]
        return cells * s["data_cell_payload_bytes"] * 8 / (s["t_s"][idx[-1]] - s["t_s"][idx[0]]) / 1e6

    for i, (f, host, port) in enumerate(cuts):
        cut, name = f["t_s"], f"{host}-eth{port - 1}"
        seen = [c["t_s"] for c in v.stats.get(host, {}).get("nic_port_changes", [])
                if c["port"] == name and not c["up"] and c["t_s"] >= cut - 1e-3]
        out[f"recovery/{i}/host_detect_ms"] = round((seen[0] - cut) * 1e3, 3) if seen else None
        r = f.get("reroute") or next((x for x in reroutes if x["seen_t_s"] >= cut - 1e-3
                                      and f["target"] in x["dead_links"]), None)
        out[f"recovery/{i}/rerouted_ms"] = round((r["done_t_s"] - cut) * 1e3, 3) if r else None
        peers = sorted({m["dst"] for m in v.records if m["kind"] == "message_sent" and m["src"] == host} - {host})
        for who in [host] + peers:
            s = v.stats.get(who, {}).get("series")
            if not s:
                continue
            moved = [j for j in range(1, len(s["t_s"])) if s["in_order_cells"][j] > s["in_order_cells"][j - 1]]
            if not moved or s["t_s"][moved[-1]] <= cut:
                continue
            first, last = s["t_s"][moved[0] - 1], s["t_s"][moved[-1]]
            out[f"recovery/{i}/hosts/{who}/before_mbps"] = mbps(s, first, cut) if first < cut else None
            out[f"recovery/{i}/hosts/{who}/after_mbps"] = mbps(s, cut, last)
    return out


def recompute_collectives(v: Variant) -> dict:
    """Per data-carrying collective: time, algbw, busbw, the link-rate ideal (see telemetry/collectives.py's
    docstring for the definitions), computed again from records, workload and resolved scenario."""
    out: dict = {}
    sc = v.scenario
    cell, wire_bytes = sc["fabric"]["cell_size"], sc["derived"]["cell_wire_bytes"]
    host_rate = sc["links"]["host"]["rate_mbps"]
    local_rate = (sc["links"].get("local") or {}).get("rate_mbps")
    server = {}
    for number, gpus in v.topology.servers.items():
        for g in gpus:
            server[g] = number
    groups: dict[str, list] = {}
    for m in v.planned:
        if m.get("op"):
            groups.setdefault(m["collective"], []).append(m)
    for name, msgs in groups.items():
        n, size, op = msgs[0]["ranks"], msgs[0]["collective_bytes"], msgs[0]["collective_kind"]
        factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
        busy: dict = {}
        for m in msgs:
            bits = -(-m["size_bytes"] // cell) * wire_bytes * 8
            if m["src"] in server and server[m["src"]] == server.get(m["dst"]):
                busy[("local", m["src"])] = busy.get(("local", m["src"]), 0) + bits / local_rate
            else:
                busy[("out", m["src"])] = busy.get(("out", m["src"]), 0) + bits / host_rate
                busy[("in", m["dst"])] = busy.get(("in", m["dst"]), 0) + bits / host_rate
        ideal_us = max(busy.values())  # bits / (Mbit/s) = us
        key = f"collectives/{name}"
        out[f"{key}/ideal_time_us"] = ideal_us
        out[f"{key}/ideal_busbw_mbps"] = size * 8 / ideal_us * factor
        done = [r for r in v.records if r["kind"] == "collective_done" and r["collective"] == name]
        verified = len(done) == n and all(r["verified"] for r in done)
        out[f"{key}/verified"] = verified
        if verified:
            start = min(r["start_us"] for r in v.records if r["kind"] == "message_sent" and r["collective"] == name)
            t = max(r["done_us"] for r in done) - start
            out[f"{key}/time_us"] = t
            out[f"{key}/algbw_mbps"] = size * 8 / t
            out[f"{key}/busbw_mbps"] = size * 8 / t * factor
            out[f"{key}/busbw_over_ideal"] = (size * 8 / t * factor) / (size * 8 / ideal_us * factor)
    return out


def recompute_jobs(v: Variant) -> dict:
    """Per training job (telemetry/training.py's docstring has the definitions): iteration times, GPU
    utilisation, compute, wait and exposed communication, from the planned messages and the records."""
    import re

    pattern = re.compile(r"^(.+)#(\d+)\.b(\d+)$")
    compute: dict = {}  # job -> (host, iteration) -> compute us
    start: dict = {}
    nbuckets: dict = {}
    for m in v.planned:
        hit = pattern.match(m.get("collective") or "")
        if not hit or "compute_us" not in m:
            continue
        job, k, b = hit.group(1), int(hit.group(2)), int(hit.group(3))
        c = compute.setdefault(job, {})
        c[(m["src"], k)] = max(c.get((m["src"], k), 0.0), m["compute_us"])
        start[job] = min(start.get(job, math.inf), m["start_us"])
        nbuckets[job] = max(nbuckets.get(job, 0), b + 1)
    ends: dict = {}  # (job, host, iteration) -> [done_us of each bucket]
    for r in v.records:
        hit = pattern.match(r.get("collective") or "") if r["kind"] == "collective_done" else None
        if hit and hit.group(1) in compute:
            ends.setdefault((hit.group(1), r["host"], int(hit.group(2))), []).append(r["done_us"])
        ran = pattern.match(r.get("collective") or "") if r["kind"] == "message_sent" else None
        if ran and ran.group(1) in compute and "compute_ran_us" in r:  # a slow GPU's compute, as it ran
            c = compute[ran.group(1)]
            c[(r["src"], int(ran.group(2)))] = max(c.get((r["src"], int(ran.group(2))), 0.0), r["compute_ran_us"])
    out: dict = {}
    for job, c in compute.items():
        hosts = sorted({h for h, _ in c}, key=lambda h: [x for x, _ in c].index(h))
        planned = 1 + max(k for _, k in c)
        finished = 0
        while finished < planned and all(len(ends.get((job, h, finished), [])) == nbuckets[job] for h in hosts):
            finished += 1
        key = f"jobs/{job}"
        out[f"{key}/gpus"] = len(hosts)
        out[f"{key}/iterations_planned"] = planned
        out[f"{key}/iterations_finished"] = finished
        if not finished:
            continue
        end = {(h, k): max(ends[(job, h, k)]) for h in hosts for k in range(finished)}
        busy = {h: 0.0 for h in hosts}
        span = {h: 0.0 for h in hosts}
        totals = {"compute": 0.0, "wait": 0.0, "exposed": 0.0}
        last_end = start[job]
        times = []
        for k in range(finished):
            begin = {h: end[(h, k - 1)] if k else start[job] for h in hosts}
            slowest = max(begin[h] + c[(h, k)] for h in hosts)
            for h in hosts:
                idle = end[(h, k)] - begin[h] - c[(h, k)]
                exposed = max(0.0, end[(h, k)] - max(begin[h] + c[(h, k)], slowest))
                totals["compute"] += c[(h, k)]
                totals["exposed"] += exposed
                totals["wait"] += idle - exposed
                busy[h] += c[(h, k)]
                span[h] += end[(h, k)] - begin[h]
            job_end = max(end[(h, k)] for h in hosts)
            times.append(job_end - last_end)
            last_end = job_end
        samples = len(hosts) * finished
        out.update(job_figures(key, times, {h: busy[h] / span[h] for h in hosts},
                               {part: total / samples for part, total in totals.items()},
                               totals["exposed"] / sum(span.values())))
    return out


def job_figures(key: str, times: list[float], util: dict[str, float], per_iteration: dict[str, float],
                exposed_share: float) -> dict:
    """A job's figures under `key`: its iteration times (us) in ms with their p50 and p99, the mean
    and lowest GPU utilisation (and which GPU), each part's mean per GPU and iteration (us) in ms,
    and the exposed share."""
    lowest = min(util.values())
    out = {f"{key}/iteration_ms": [t / 1e3 for t in times], f"{key}/iteration_p50_ms": rank(times, 50) / 1e3,
           f"{key}/iteration_p99_ms": rank(times, 99) / 1e3, f"{key}/gpu_utilisation": sum(util.values()) / len(util),
           f"{key}/gpu_utilisation_lowest": lowest, f"{key}/gpu_lowest": next(h for h in util if util[h] == lowest),
           f"{key}/exposed_share": exposed_share}
    out.update({f"{key}/{part}_per_iteration_ms": value / 1e3 for part, value in per_iteration.items()})
    return out


def recompute_moe_jobs(v: Variant) -> dict:
    """Per MoE job (a chain of all-to-alls, telemetry/training.py's docstring): the same figures as
    recompute_jobs, each all-to-all at a GPU split into the compute before it, the wait for its
    group's slowest GPU and the exposed rest."""
    import re

    pattern = re.compile(r"^(.+)#(\d+)\.a(\d+)(?:\.g\d+)?$")
    compute: dict = {}  # job -> (host, iteration, step) -> compute us
    name_of: dict = {}  # (job, host, iteration, step) -> collective
    group: dict = {}  # collective -> its hosts
    start: dict = {}
    for m in v.planned:
        hit = pattern.match(m.get("collective") or "")
        if not hit or "compute_us" not in m:
            continue
        job, k, j = hit.group(1), int(hit.group(2)), int(hit.group(3))
        compute.setdefault(job, {})[(m["src"], k, j)] = m["compute_us"]
        name_of[(job, m["src"], k, j)] = m["collective"]
        group.setdefault(m["collective"], set()).add(m["src"])
        start[job] = min(start.get(job, math.inf), m["start_us"])
    done = {(r["host"], r["collective"]): r["done_us"] for r in v.records
            if r["kind"] == "collective_done" and pattern.match(r.get("collective") or "")}
    for r in v.records:  # a step ends at a GPU once its own blocks have left too (host/app.py)
        key = (r.get("src"), r.get("collective"))
        if r["kind"] == "message_sent" and key in done:
            done[key] = max(done[key], r["start_us"])
    out: dict = {}
    for job, c in compute.items():
        hosts = list(dict.fromkeys(h for h, _, _ in c))
        planned = 1 + max(k for _, k, _ in c)
        steps = 1 + max(j for _, _, j in c)
        finished = 0
        while finished < planned and all((h, name_of[(job, h, finished, j)]) in done
                                         for h in hosts for j in range(steps)):
            finished += 1
        key = f"jobs/{job}"
        out[f"{key}/gpus"] = len(hosts)
        out[f"{key}/iterations_planned"] = planned
        out[f"{key}/iterations_finished"] = finished
        if not finished:
            continue
        began, ready = {}, {}  # (host, k, j) -> step's gate, compute end
        for h in hosts:
            t = start[job]
            for k in range(finished):
                for j in range(steps):
                    began[(h, k, j)] = t
                    ready[(h, k, j)] = t + c[(h, k, j)]
                    t = done[(h, name_of[(job, h, k, j)])]
        totals = {"compute": 0.0, "wait": 0.0, "exposed": 0.0}
        busy = {h: 0.0 for h in hosts}
        span = {h: 0.0 for h in hosts}
        times, last_end = [], start[job]
        for k in range(finished):
            for h in hosts:
                for j in range(steps):
                    name = name_of[(job, h, k, j)]
                    slowest = max(ready[(q, k, j)] for q in group[name])
                    finish = done[(h, name)]
                    exposed = max(0.0, finish - max(ready[(h, k, j)], slowest))
                    totals["compute"] += c[(h, k, j)]
                    totals["exposed"] += exposed
                    totals["wait"] += finish - ready[(h, k, j)] - exposed
                    busy[h] += c[(h, k, j)]
                span[h] += done[(h, name_of[(job, h, k, steps - 1)])] - began[(h, k, 0)]
            job_end = max(done[(h, name_of[(job, h, k, steps - 1)])] for h in hosts)
            times.append(job_end - last_end)
            last_end = job_end
        samples = len(hosts) * finished
        out.update(job_figures(key, times, {h: busy[h] / span[h] for h in hosts},
                               {part: total / samples for part, total in totals.items()},
                               totals["exposed"] / sum(span.values())))
    return out


def recompute_pipeline_jobs(v: Variant) -> dict:
    """Per pipeline job (telemetry/pipeline_job.py's docstring): each stage's passes replayed from the
    compute its messages carry and the times the records give, then the same figures as recompute_jobs."""
    import re

    pattern = re.compile(r"^(.+)#(\d+)\.(?:[fb]\d+\.s\d+|e)\.r\d+$")
    jobs: dict = {}
    name_of = {}
    for m in v.planned:
        hit = pattern.match(m.get("collective") or "")
        if not hit:
            continue
        job = jobs.setdefault(hit.group(1), {"hosts": [], "k": 0, "start": math.inf, "ops": {}})
        job["hosts"] += [h for h in (m["src"], m["dst"]) if h not in job["hosts"]]
        job["k"] = max(job["k"], int(hit.group(2)) + 1)
        job["start"] = min(job["start"], m["start_us"])
        parts = [(tuple(a), float(b)) for a, b in m.get("compute_chain", [])]
        parts.append((tuple(m.get("compute_after", [])), float(m.get("compute_us", 0.0))))
        job["ops"].setdefault((m["src"], m["collective"]), (int(hit.group(2)), m["start_us"], parts))
        name_of[(m["src"], m["dst"], m["msg_id"])] = m["collective"]
    fin: dict = {}  # (host, collective) -> when it finished there
    sent: dict = {}  # collective -> {host: first send}
    for r in v.records:
        if r["kind"] == "collective_done":
            host, c, t = r["host"], r.get("collective"), r["done_us"]
        elif r["kind"] == "message_delivered":
            host, c, t = r["dst"], name_of.get((r["src"], r["dst"], r["msg_id"])), r["delivered_us"]
        elif r["kind"] == "message_sent":
            host, c, t = r["src"], r.get("collective"), r["start_us"]
            if c and pattern.match(c):
                first = sent.setdefault(c, {})
                first[host] = min(first.get(host, math.inf), t)
        else:
            continue
        if c and pattern.match(c):
            fin[(host, c)] = max(fin.get((host, c), -math.inf), t)
    out: dict = {}
    for job_name, job in jobs.items():
        hosts = job["hosts"]
        per: dict = {}  # (host, iteration) -> [start, end, compute, wait, exposed]
        for h in hosts:
            runs = []
            for (src, c), (k, start, parts) in job["ops"].items():
                if src != h or (h, c) not in fin or any((h, n) not in fin for names, _ in parts for n in names):
                    continue
                t = start
                for names, us in parts:
                    t = max([t] + [fin[(h, n)] for n in names]) + us
                runs.append((t, ".e." in c, k, c, parts))
            runs.sort()
            t = job["start"]

            def book(row, until, names):
                others = max([w for n in names for q, w in sent.get(n, {}).items() if q != h], default=-math.inf)
                row[3] += max(0.0, min(until, others) - row_t[0])
                row[4] += max(0.0, until - max(row_t[0], others))
                row_t[0] = until

            row_t = [t]
            for i, (_t, _e, k, c, parts) in enumerate(runs):
                row = per.setdefault((h, k), [row_t[0], None, 0.0, 0.0, 0.0])
                for names, us in parts:
                    book(row, max([row_t[0]] + [fin[(h, n)] for n in names]), names)
                    row[2] += us
                    row_t[0] += us
                if i + 1 == len(runs) or runs[i + 1][2] != k:
                    book(row, max(row_t[0], fin[(h, c)]), (c,))
                    row[1] = row_t[0]
        finished = 0
        while finished < job["k"] and all(per.get((h, finished), [0, None])[1] is not None for h in hosts):
            finished += 1
        key = f"jobs/{job_name}"
        out[f"{key}/gpus"] = len(hosts)
        out[f"{key}/iterations_planned"] = job["k"]
        out[f"{key}/iterations_finished"] = finished
        if not finished:
            continue
        times, last = [], job["start"]
        for k in range(finished):
            end = max(per[(h, k)][1] for h in hosts)
            times.append(end - last)
            last = end
        util = {h: sum(per[(h, k)][2] for k in range(finished))
                / sum(per[(h, k)][1] - per[(h, k)][0] for k in range(finished)) for h in hosts}
        rows = [per[(h, k)] for h in hosts for k in range(finished)]
        out.update(job_figures(key, times, util,
                               {part: sum(r[i] for r in rows) / len(rows) for i, part in ((2, "compute"), (3, "wait"), (4, "exposed"))},
                               sum(r[4] for r in rows) / sum(r[1] - r[0] for r in rows)))
    return out


def check_job_table(text: str, figures: dict[str, dict]) -> list[str]:
    """The report's training jobs table (one row per variant and job) against the recomputed figures."""
    problems = []
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0] in figures:
            rows[(cells[0], cells[1])] = cells
    for variant, f in figures.items():
        for name in sorted({k.split("/")[1] for k in f if k.startswith("jobs/")}):
            row = rows.get((variant, name))
            if row is None:
                problems.append(f"report.md: no training jobs row for {variant} {name}")
                continue
            g = {k.split("/", 2)[2]: value for k, value in f.items() if k.startswith(f"jobs/{name}/")}
            done = g["iterations_finished"]
            want = {2: str(g["gpus"]), 3: f"{done} / {g['iterations_planned']}",
                    4: f"{g['iteration_p50_ms']:.1f} / {g['iteration_p99_ms']:.1f}" if done else "- / -",
                    5: (f"{g['gpu_utilisation']:.3f} ({g['gpu_lowest']} {g['gpu_utilisation_lowest']:.3f})"
                        if done else "-"),
                    6: (f"{g['compute_per_iteration_ms']:.1f} / {g['wait_per_iteration_ms']:.1f} / "
                        f"{g['exposed_per_iteration_ms']:.1f}" if done else "- / - / -"),
                    7: f"{g['exposed_share']:.3f}" if done else "-"}
            for col, value in want.items():
                if row[col] != value:
                    problems.append(f"report.md {variant} job {name} column {col + 1}: shows '{row[col]}', "
                                    f"recomputed '{value}'")
    return problems


def check_collective_table(text: str, figures: dict[str, dict]) -> list[str]:
    """The report's collectives table (one row per variant and collective) against the recomputed figures."""
    problems = []
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 11 and cells[0] in figures:
            rows[(cells[0], cells[1])] = cells
    for variant, f in figures.items():
        names = {k.split("/")[1] for k in f if k.startswith("collectives/")}
        for name in names:
            row = rows.get((variant, name))
            if row is None:
                problems.append(f"report.md: no collectives row for {variant} {name}")
                continue
            key = f"collectives/{name}"
            want = {6: f"{f[key + '/time_us'] / 1000:.2f}" if key + "/time_us" in f else "-",
                    7: f"{f[key + '/algbw_mbps']:.3f}" if key + "/algbw_mbps" in f else "-",
                    8: f"{f[key + '/busbw_mbps']:.3f}" if key + "/busbw_mbps" in f else "-",
                    9: f"{f[key + '/ideal_busbw_mbps']:.3f}",
                    10: f"{f[key + '/busbw_over_ideal']:.3f}" if key + "/busbw_over_ideal" in f else "-"}
            if not row[5].startswith("yes" if f[key + "/verified"] else "NO"):
                problems.append(f"report.md {variant} {name}: verified shows '{row[5]}'")
            for col, value in want.items():
                if row[col] != value:
                    problems.append(f"report.md {variant} {name} column {col + 1}: shows '{row[col]}', "
                                    f"recomputed '{value}'")
    return problems


def recompute_simulated(v: Variant) -> dict:
    """A simulator variant: message counts and the collectives (it has no switch counters)."""
    sent = [r for r in v.records if r["kind"] == "message_sent"]
    got = [r for r in v.records if r["kind"] == "message_delivered"]
    plan = {(m["src"], m["dst"], m["msg_id"]) for m in v.planned}
    ok = {(r["src"], r["dst"], r["msg_id"]) for r in got if r["verified"]}
    acked = {(r["src"], r["dst"], r["msg_id"]) for r in sent}
    return {"messages_planned": len(plan), "messages_completed": len(plan & ok & acked),
            "retransmissions_cells": sum(r["retransmissions"] for r in sent),
            **recompute_simulated_losses(v), **recompute_collectives(v), **recompute_int(v), **recompute_jobs(v), **recompute_moe_jobs(v),
            **recompute_pipeline_jobs(v)}


def recompute_simulated_losses(v: Variant) -> dict:
    """A simulator variant's DATA cells: sent and received as its hosts counted them (records/*.stats.json),
    lost by place as the simulator's ports and switches counted them (result.json), and the remainder
    once the cells still in flight are taken off; a run from before these counts has none."""
    cells = v.result.get("data_cells")
    if cells is None:
        return {}
    sent = sum((s.get("tx_counts") or {}).get("tx_DATA", 0) for s in v.stats.values())
    received = sum(s.get("data_cells_received", 0) for s in v.stats.values())
    lost = sum(cells["lost"].values())
    out = {"simulator/data_cells/sent": sent, "simulator/data_cells/received": received,
           "simulator/data_cells/lost_total": lost,
           "simulator/data_cells/unaccounted": sent - received - lost - cells["in_flight_at_end"]}
    out.update({f"simulator/data_cells/lost/{place}": n for place, n in cells["lost"].items()})
    return out


def check_sim_report(text: str, names: list[str], figures: dict[str, dict]) -> list[str]:
    """A simulator report: the verdict row's DATA cells lost and each variant's conservation line."""
    problems = []
    for name in names:
        f = figures[name]
        if "simulator/data_cells/lost_total" not in f:
            continue
        lost = f["simulator/data_cells/lost_total"]
        first = next((line for line in text.splitlines() if line.startswith(f"| {name} |")), None)  # the verdict
        row = None if first is None else [c.strip() for c in first.strip().strip("|").split(" | ")][1:]
        if row is None or not (row[2] == str(lost) or row[2].startswith(f"{lost} (")):
            problems.append(f"report.md {name}: DATA cells lost shows {row[2] if row else None!r}, recomputed {lost}")
        want = (f"DATA conservation ({name}): sent {f['simulator/data_cells/sent']} - received "
                f"{f['simulator/data_cells/received']} - ")
        line = next((l for l in text.splitlines() if want in l), None)
        if line is None:
            problems.append(f"report.md: no line '{want}...'")
        elif f"= {f['simulator/data_cells/unaccounted']}: " not in line or \
                f"{lost} lost, {f['retransmissions_cells']} retransmitted" not in line:
            problems.append(f"report.md {name}: '{line}' disagrees with the recomputed DATA cells")
    return problems


def trace(v: Variant, pairs):
    """ECMP paths through the variant's fabric plan (testbed.control.trace), or None without the
    scenario file or the agents' source ports."""
    from testbed.control.plan import plan_fabric
    from testbed.control.trace import FabricModel, Flow
    from testbed.scenario import expand_variants, load_scenario

    path = Path(v.scenario.get("file") or "")
    if not path.is_file():
        return None
    scenario = next((x.scenario for x in expand_variants(load_scenario(str(path)))
                     if x.name == v.result.get("variant")), None)
    ports = {h: s.get("udp_source_ports") or {} for h, s in v.stats.items()}
    if scenario is None or any(d not in ports.get(s, {}) for s, d in pairs):
        return None
    model = FabricModel(v.topology, plan_fabric(v.topology, scenario), seed=scenario.seed)
    out = {}
    for src, dst in pairs:
        here, hops = src, []
        for cable in model.path(Flow(src, dst, sport=ports[src][dst])):
            link = v.topology.link(cable)
            peer = link.b if link.a == here else link.a
            hops.append(f"{here}:{link.a_port if link.a == here else link.b_port}->{peer}")
            here = peer
        out[(src, dst)] = hops
    return out


def on_scenario_clock(figures: dict, k: float) -> dict:
    """Recomputed figures ('/'-joined keys, the run's clock) on the scenario's: by the last key's unit."""
    def convert(key: str, value):
        if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple)):
            return value
        if isinstance(value, (list, tuple)):
            return [convert(key, v) for v in value]
        last = key.rsplit("/", 1)[-1]
        if last.endswith(("_s", "_ms", "_us")) and last != "wall_s":
            return value / k
        if last.endswith("_mbps"):
            return value * k
        return value
    return {key: convert(key, value) for key, value in figures.items()}


def lookup(summary: dict, key: str):
    """summary.json's value for a '/'-joined key (links/<name>/... index the links list)."""
    parts = key.split("/")
    if parts[0] == "links":
        row = next(l for l in summary["links"] if l["link"] == parts[1])
        return row[parts[2]]
    if parts[0] in ("collectives", "jobs"):  # collective and job names hold no '/'
        return summary[parts[0]][parts[1]][parts[2]]
    if parts[0] == "recovery":  # a list: its index, then the entry's keys
        value = summary["recovery"][int(parts[1])]
        for p in parts[2:]:
            value = value[p]
        return value
    value = summary
    if parts[0] in ("ideal", "measured_over_ideal") and parts[1] in ("link_utilisation",):
        return summary[parts[0]][parts[1]][parts[2]]
    for p in parts:
        value = value[p]
    return value


def same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=REL, abs_tol=1e-9)
    return a == b


def report_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows[cells[0]] = cells[1:]
    return rows


def check_report(text: str, names: list[str], figures: dict[str, dict]) -> list[str]:
    """The report's table cells against the recomputed figures, rendered as the report renders them."""
    rows = report_rows(text)
    problems = []

    def expect(label_start: str, render) -> None:
        label = next((l for l in rows if l.startswith(label_start)), None)
        if label is None:
            problems.append(f"report.md: no row '{label_start}'")
            return
        for i, name in enumerate(names):
            want = render(figures[name])
            if want is not None and not rows[label][i].startswith(want):
                problems.append(f"report.md {name} '{label}': shows '{rows[label][i]}', recomputed '{want}'")

    expect("messages planned / completed", lambda f: f"{f['messages_planned']} / {f['messages_completed']}")
    expect("goodput (Mbit/s)", lambda f: f"{f['goodput_mbps']:.2f}")
    expect("ideal goodput", lambda f: f"{f['ideal/goodput_mbps']:.2f} / {f['measured_over_ideal/goodput']:.2f}"
           if "ideal/goodput_mbps" in f else None)
    expect("completion p50 / p99", lambda f: f"{f['completion_p50_ms']:.1f} / {f['completion_p99_ms']:.1f} "
           f"(n={f['completion_samples']}, nearest-rank)" if f["completion_samples"] else None)
    expect("ideal completion p50 / p99", lambda f: f"{f['ideal/completion_p50_ms']:.1f} / "
           f"{f['ideal/completion_p99_ms']:.1f}" if "ideal/completion_p50_ms" in f else None)
    expect("DATA cells sent / received", lambda f: f"{f['drops/by_type/DATA/sent']} / {f['drops/by_type/DATA/received']}")
    expect("DATA conservation", lambda f: f"{f['drops/by_type/DATA/sent']} - {f['drops/by_type/DATA/received']} - "
           f"{f['drops/switch_queue_drops_by_type'].get('DATA', 0)} - {f['drops/by_type/DATA/link_losses']} = "
           f"{f['drops/by_type/DATA/unaccounted']}" if "drops/data_balance/verdict" in f else "not checked")
    expect("retransmitted DATA cells", lambda f: str(f["retransmissions_cells"]))
    expect("ToR uplink utilisation min / max", lambda f: f"{100 * f['uplink_utilisation_min']:.0f} / "
           f"{100 * f['uplink_utilisation_max']:.0f}" if "uplink_utilisation_min" in f else None)
    expect("ToR uplink utilisation Jain", lambda f: ("n/a" if f["uplink_jain_fairness"] is None
                                                     else f"{f['uplink_jain_fairness']:.3f}")
           if "uplink_jain_fairness" in f else None)
    expect("equal-cost links idle", lambda f: ", ".join(f["idle_siblings"]) or "none")
    expect("PFC pause frames", lambda f: f"{f['pfc/switch_xoff_sent']} / {f['pfc/switch_xon_sent']}; "
           f"{f['pfc/switch_ports_paused']} / {f['pfc/host_xoff_received']}" if "pfc/switch_xoff_sent" in f else "off")
    for tier in ("host->tor", "leaf->spine", "spine->leaf", "tor->host", "edge->agg", "agg->core", "core->agg",
                 "agg->edge"):
        if f"tiers/{tier}/utilisation_mean" in figures[names[0]]:
            expect(tier, lambda f, t=tier: f"{100 * f[f'tiers/{t}/utilisation_mean']:.1f} ")
    for tier in ("leaf", "edge", "spine", "aggregation", "core"):
        if any(f"int/tiers/{tier}/hops" in figures[n] for n in names):
            expect(f"INT {tier} hop latency", lambda f, t=tier: (
                f"{f[f'int/tiers/{t}/latency_p50_us']:.0f} / {f[f'int/tiers/{t}/latency_p99_us']:.0f} us, "
                f"q {f[f'int/tiers/{t}/qdepth_p50_packets']} / {f[f'int/tiers/{t}/qdepth_p99_packets']} "
                f"(n={f[f'int/tiers/{t}/hops']})") if f"int/tiers/{t}/hops" in f else "-")
    if any("int/cells" in figures[n] for n in names):
        expect("INT cells with records", lambda f: f"{f['int/cells']} / {f['int/overflow_cells']}"
               if "int/cells" in f else None)
    first = text.splitlines()[0]
    lost = any(figures[n]["fidelity/behind_real_time"] for n in names)
    if first.startswith("**Fidelity lost") != lost:
        problems.append(f"report.md first line says '{first[:40]}...', recomputed fidelity lost = {lost}")
    for n in names:
        steal = figures[n]["fidelity/cpu_steal_share"]
        if steal is not None and f"hypervisor steal {100 * steal:.1f}% of the machine's CPU time" not in first:
            problems.append(f"report.md first line does not give {n}'s CPU steal as {100 * steal:.1f}%")
        busy, busiest = figures[n]["fidelity/cpu_busy_share"], figures[n]["fidelity/cpu_busiest_second_share"]
        if busy is not None:
            said = f"cores busy {100 * busy:.0f}% of the traffic phase" + (
                f", {100 * busiest:.0f}% in its busiest second" if busiest is not None else "")
            if said not in first:
                problems.append(f"report.md first line does not say {n}'s '{said}'")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0])
        return 2
    out_dir = Path(argv[0])
    summaries = json.loads((out_dir / "summary.json").read_text())
    dirs = {}
    for result in out_dir.glob("*/result.json"):
        dirs[json.loads(result.read_text())["variant"]] = result.parent
    problems, figures, checked = [], {}, 0
    simulated = False
    for name, summary in summaries.items():
        if name not in dirs:
            problems.append(f"{name}: no variant directory under {out_dir}")
            continue
        variant = Variant(dirs[name])
        if variant.result.get("driver") == "simulator":
            figures[name] = recompute_simulated(variant)
            simulated = True
        elif any("completion_us" not in r for r in variant.records if r["kind"] == "message_sent"):
            print(f"{dirs[name]}: its records predate the fields this script checks (no completion_us)")
            return 2
        else:
            figures[name] = {**recompute(variant), **recompute_collectives(variant), **recompute_recovery(variant),
                             **recompute_int(variant), **recompute_jobs(variant), **recompute_moe_jobs(variant),
                             **recompute_pipeline_jobs(variant)}
        k = float(variant.scenario.get("time_stretch") or 1.0)
        figures[name] = on_scenario_clock(figures[name], k)
        figures[name]["clock/run_time_stretch"] = k
        for key, value in figures[name].items():
            try:
                shown = lookup(summary, key)
            except (KeyError, StopIteration, TypeError):
                problems.append(f"{name}: summary.json has no {key} (recomputed {value!r})")
                continue
            checked += 1
            if not same(shown, value):
                problems.append(f"{name}: {key} is {shown!r} in summary.json, recomputed {value!r}")
    names = [n for n in summaries if n in figures]
    text = (out_dir / "report.md").read_text()
    if not simulated:
        problems += check_report(text, names, figures)
    else:
        problems += check_sim_report(text, names, figures)
    problems += check_collective_table(text, {n: figures[n] for n in names})
    problems += check_job_table(text, {n: figures[n] for n in names})
    for problem in problems:
        print(problem)
    print(f"{checked} summary.json figures and the report's table recomputed for {len(names)} variant(s): "
          + ("all agree" if not problems else f"{len(problems)} disagree"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
