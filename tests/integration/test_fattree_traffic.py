"""A k=4 fat-tree carrying traffic: every tier used, data on its credit's
path, the emulated RTT equal to the printed one, real time kept.

Each test runs one variant (16 hosts, 20 builtin switches) through
VariantRun at a rate the pre-flight check accepts on a 2-core machine.
Every run starts with a ping between every two hosts (all 240 pairs answer)
and leaves no interface behind: the fat-tree's plumbing, checked on the
runs that carry its traffic (in each switch mode by the RTT test).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testbed.emulation.run import VariantRun
from testbed.scenario import expand_variants, parse_scenario
from testbed.telemetry.summary import summarize_variant

from fitting import fitted, until_real_time_kept  # noqa: E402 (tests/integration is on sys.path)
from switch_modes import in_mode  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """
name: {name}
duration_s: 12
seed: 1
topology: {{kind: fat_tree, k: 4}}
links: {{rate_mbps: 1, delay_us: 1000}}
switch: {{target: builtin, processes: {processes}}}
fabric: {{load_balancing: {lb}}}
transport: {{cc: {cc}}}
workload:
  - {{kind: pingall}}
  - {workload}
"""
PERMUTATION = "{kind: permutation, start_s: 0.5, message_bytes: 131072, count: 1, cross_tor: true}"
# One flow across pods (6 links) with nothing else in the fabric: no queue anywhere.
LONE_FLOW = "{kind: incast, start_s: 0.5, receiver: h1, senders: [h16], message_bytes: 131072, count: 1}"



def run(tmp_path, lb: str, cc: str, processes, workload: str = PERMUTATION, messages: int = 16):
    name = f"ft-{lb}-{cc}"
    scenario = parse_scenario(SCENARIO.format(name=name, lb=lb, cc=cc, workload=workload, processes=processes),
                              f"{name}.yaml")
    (variant,) = expand_variants(scenario)
    variant = fitted(variant)

    def once(at_clock, out_dir: Path):
        scenario = at_clock.scenario
        before = set(os.listdir("/sys/class/net"))
        result = VariantRun(at_clock, out_dir, ROOT, progress=lambda m: None).run()
        assert set(os.listdir("/sys/class/net")) == before, "the run left interfaces behind"
        summary = summarize_variant(out_dir, scenario.topo, scenario)
        context = f"{out_dir}: notes {result.notes}, agents {result.agents}, drops {summary['drops']}"
        assert result.pingall == {"pairs": 16 * 15, "failed": []}, context
        assert all(code == 0 for code in result.agents.values()), context
        assert summary["messages_planned"] == summary["messages_completed"] == messages, context
        return (scenario, result, summary, out_dir, context), summary

    return until_real_time_kept(once, variant, tmp_path / name, name)


def fabric_tx_bytes(run_dir: Path, topology) -> dict[str, int]:
    """Bytes each switch port sent to another switch over the run (telemetry counters)."""
    last: dict[str, dict] = {}
    first: dict[str, dict] = {}
    for line in (run_dir / "telemetry.jsonl").read_text().splitlines():
        sample = json.loads(line)
        first.setdefault(sample["switch"], sample)
        last[sample["switch"]] = sample
    out = {}
    for switch, sample in last.items():
        for port, counts in sample["tx"].items():
            peer = topology.port(switch, int(port)).peer
            if not topology.node(peer).is_host:
                out[f"{switch}->{peer}"] = counts["bytes"] - first[switch]["tx"].get(port, {"bytes": 0})["bytes"]
    return out


@in_mode(2)
def test_spraying_uses_every_link_of_every_tier_with_credits_on_their_data_path(tmp_path, registry, processes):
    """The P4 program sprays each cell by its entropy over every link of every tier, and a credit
    and its data cell take one path. The program, its tables and the entropy are the same in every
    switch mode, so one mode checks them: fabric-2, whose fat-tree has cables in memory inside each
    engine and veths between the two (the per-switch and fabric-auto plumbing carry the other
    fat-tree tests here, and tita's credits on the Python traffic manager are in
    test_transport_fabric's per-switch tests)."""
    scenario, result, summary, run_dir, context = run(tmp_path, "spray_rr_entropy", "tita", processes)
    assert result.scheduling == "realtime", context
    drops = summary["drops"]  # credits pace data: no DATA cell lost anywhere
    assert drops["switch_queue_drops_by_type"].get("DATA", 0) == 0, context
    assert drops["data_balance"]["verdict"] == "balances", context
    carried = fabric_tx_bytes(run_dir, scenario.topo)
    assert len(carried) == 2 * 32  # both directions of every fabric link
    idle = sorted(link for link, sent in carried.items() if sent < 20_000)
    assert not idle, f"links that carried (almost) nothing: {idle}; {context}"
    # Credits are metered per port: a DATA cell that left its credit's path would have
    # found no credit for it and TiTa's lossless claim would not hold; the drop count above
    # is that check. Credits the meter dropped are the scheme's own feedback, not loss.
    fidelity = summary["fidelity"]
    assert not fidelity["behind_real_time"], f"{fidelity}; {context}"


def test_emulated_rtt_is_the_printed_base_rtt(tmp_path, registry, processes):
    """In every switch mode: the cables (veths or memory) and the switch loops are what the
    emulated RTT is made of."""
    scenario, result, summary, run_dir, context = run(tmp_path, "ecmp", "none", processes, LONE_FLOW, messages=1)
    base_ms = scenario.derived.base_rtt_us / 1000  # over the longest path: h16 -> h1 crosses pods
    stats = json.loads((run_dir / "records" / "h16.stats.json").read_text())
    receiver = json.loads((run_dir / "records" / "h1.stats.json").read_text())
    # The smallest data->ACK sample: both directions of all 6 links (delay and
    # serialisation of a cell and an ACK each), never less (a cell's round trip counts
    # from its wire start and no ACK leaves before its cell came; 0.1 ms of rounding),
    # plus the lag of the loops it passed: each switch's and both agents' largest in this run. The
    # fidelity verdict holds each loop's p99 to one cell time, not their sum over the ten switch
    # passes of a round trip. Plus each pass's own work, which no lag counts and the base RTT
    # (links only) leaves out: a frame leaves a switch only after its ingress, its TM and its
    # egress ran: the switches' CPU per packet this run measured (result.json's costs).
    done = json.loads((run_dir / "result.json").read_text())
    tm_stats = done["tm_stats"]
    lag_ms = {name: tm["tm"]["fidelity"]["dequeue"]["max_lag_us"] / 1000 for name, tm in tm_stats.items()}
    paths = scenario.topo.node_paths("h16", "h1")
    one_way_ms = max(sum(lag_ms.get(node, 0.0) for node in path) for path in paths)
    passes = 2 * max(sum(1 for node in path if node in scenario.topo.switches) for path in paths)
    work_ms = passes * ((done.get("costs") or {}).get("switch_us_per_packet") or 0.0) / 1000
    agents_ms = (stats["pacer_lateness"]["max_us"] + receiver["pacer_lateness"]["max_us"]) / 1000
    late_ms = 2 * one_way_ms + work_ms + agents_ms
    assert base_ms - 0.1 <= stats["rtt_min_ms"] <= base_ms + late_ms, (stats["rtt_min_ms"], base_ms, late_ms, context)
