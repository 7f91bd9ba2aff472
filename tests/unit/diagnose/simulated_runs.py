"""Simulated run directories with or without an injected link fault, for scoring `testbed diagnose`.

A fault is injected here by hand on the simulator's model (the corpus predates the simulator's
own faults, simulation/faults.py): both directions of the target cable run at `factor` of their rate from
`at_s` to `at_s + duration_s` (factor 0.001: the cable is as good as down). The run directory is
what an emulated run leaves that diagnose reads: scenario.yaml (the scenario file, its faults
section naming the injected fault, which diagnose must not read), scenario.resolved.yaml,
result.json, records/<host>.jsonl, and telemetry.jsonl with each switch's cumulative per-port tx
and rx bytes and each egress queue's peak (read and reset) every 100 ms in the collector's format.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml

from testbed.host import records as host_records
from testbed.scenario import expand_variants, load_scenario
from testbed.scenario.workload import scenario_messages
from testbed.simulation.run import build_network

SAMPLE_S = 0.1


@dataclasses.dataclass(frozen=True)
class LinkFault:
    target: str  # the cable's name as testbed show prints it
    at_s: float
    duration_s: float
    factor: float  # share of the rate left


def write_run(scenario_file: Path, variant_name: str, out: Path, fault: LinkFault | None = None) -> Path:
    """The run directory `out`/<variant> of one simulated variant, with `fault` injected."""
    text = Path(scenario_file).read_text()
    data = yaml.safe_load(text)
    if fault is not None:  # recorded as a run would keep it; diagnose must not look
        data["faults"] = [{"kind": "link_degrade", "target": fault.target, "at_s": fault.at_s,
                           "duration_s": fault.duration_s}]
    out.mkdir(parents=True, exist_ok=True)
    (out / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    clean = dict(data)
    clean.pop("faults", None)
    source = out / "source.yaml"
    source.write_text(yaml.safe_dump(clean, sort_keys=False))
    variant = next(v for v in expand_variants(load_scenario(str(source))) if v.name == variant_name)
    source.unlink()
    scenario = variant.scenario
    run_dir = out / variant_name.replace("=", "-").replace(",", "_")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "scenario.resolved.yaml").write_text(yaml.safe_dump(scenario.to_dict(), sort_keys=False))
    net = build_network(scenario)
    net.load(scenario_messages(scenario), scenario.seed)
    ports = {p.name: p for p in net.ports}
    if fault is not None:
        link = next(l for l in scenario.topo.links if l.name == fault.target)
        pair = [ports[f"{link.a}->{link.b}"], ports[f"{link.b}->{link.a}"]]

        def set_rate(factor: float) -> None:  # the port's serialisation rate, as link_degrade sets it
            for p in pair:
                p.rate_bps = p.rate_bps * factor

        net.sim.at(fault.at_s, set_rate, fault.factor)
        net.sim.at(fault.at_s + fault.duration_s, set_rate, 1 / fault.factor)
    port_no = {}
    for link in scenario.topo.links:
        port_no[f"{link.a}->{link.b}"] = (link.a, link.a_port, link.b)
        port_no[f"{link.b}->{link.a}"] = (link.b, link.b_port, link.a)
    samples = []
    steps = int(round(scenario.duration_s / SAMPLE_S))
    for step in range(1, steps + 1):
        t = step * SAMPLE_S
        net.sim.run(t)
        per_switch: dict[str, dict] = {s: {"tx": {}, "rx": {}, "q": {}} for s in scenario.topo.switches}
        for name, (node, port, peer) in port_no.items():
            if node in per_switch:  # the switch's egress counter on that port, its queue peak since the last
                per_switch[node]["tx"][port] = {"packets": ports[name].stats.tx_packets,
                                                "bytes": ports[name].stats.tx_bytes}
                per_switch[node]["q"][port] = ports[name].stats.max_queue_packets
                ports[name].stats.max_queue_packets = len(ports[name].data_q)  # the peak read and reset
            elif peer in per_switch:  # a host's egress is its ToR's ingress counter on the port
                _, peer_port, _ = port_no[f"{peer}->{node}"]
                per_switch[peer]["rx"][peer_port] = {"packets": ports[name].stats.tx_packets,
                                                     "bytes": ports[name].stats.tx_bytes}
        for switch, c in per_switch.items():
            samples.append({"t_s": round(t, 4), "switch": switch, "tx": c["tx"], "rx": c["rx"],
                            "drops_packets": {}, "ecn_marks_packets": {}, "max_qdepth_packets": c["q"]})
    (run_dir / "telemetry.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    recs = run_dir / "records"
    recs.mkdir(exist_ok=True)
    for name, host in net.hosts.items():
        host_records.write_jsonl(recs / f"{name}.jsonl", host.runner.records if host.runner else [])
    (run_dir / "result.json").write_text(json.dumps({"variant": variant.name, "driver": "simulator",
                                                     "finished": net.finished()}))
    return run_dir
