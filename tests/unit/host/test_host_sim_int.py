"""The simulator's in-band telemetry model: with fabric.int each sampled DATA cell collects one hop
record per switch it crosses (its device id and egress port, in path order), as fabric.p4 writes
them; max_hops bounds the records and counts the rest; without fabric.int nothing is recorded."""

import dataclasses
from pathlib import Path

from testbed.scenario import load_scenario
from testbed.scenario.model import Int
from testbed.simulation.run import simulate

ROOT = Path(__file__).resolve().parents[3]


def _scenario(telemetry: Int):
    base = load_scenario(ROOT / "scenarios" / "default.yaml")
    return dataclasses.replace(base, fabric=dataclasses.replace(base.fabric, int_telemetry=telemetry))


def _records(net):
    return {name: host.ep.int_records for name, host in net.hosts.items()}


def test_every_sampled_cell_names_the_switches_of_its_path():
    scenario = _scenario(Int(True, sample=4, max_hops=8))
    topo = scenario.topo
    net, _ = simulate(scenario, until_s=3.0)
    by_id = {topo.node(s).device_id: s for s in topo.switches}
    seen = 0
    for dst, records in _records(net).items():
        for r in records:
            assert r["psn"] % 4 == 0 and r["overflow"] == 0
            names = tuple(by_id[h[0]] for h in r["hops"])
            assert names in {p[1:-1] for p in topo.node_paths(r["src"], dst)}, (r["src"], dst, names)
            for name, hop in zip(names, r["hops"]):
                assert topo.port(name, hop[1]).peer in (dst, *names), "the egress port leads on"
            seen += 1
    assert seen > 100


def test_max_hops_bounds_the_records_and_counts_the_rest():
    net, _ = simulate(_scenario(Int(True, sample=1, max_hops=1)), until_s=3.0)
    records = [r for rs in _records(net).values() for r in rs]
    assert records and all(len(r["hops"]) == 1 for r in records)
    assert {r["overflow"] for r in records} == {2}  # leaf-spine-leaf paths: two switches found it full


def test_nothing_recorded_without_int():
    net, _ = simulate(_scenario(Int(False)), until_s=3.0)
    assert not any(_records(net).values())
