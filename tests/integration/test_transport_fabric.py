"""The host transport on a real (emulated) fabric: tita vs dcqcn (and nscc), incast and permutation.

Each test runs one small variant (2 leaves x 2 spines x 3 hosts, builtin
switches, Mininet) through VariantRun and checks what the run left behind:
the agents' records and stats, the switches' counters over P4Runtime and the
traffic managers' queue statistics, read with `summarize_variant` like the
report does.  Every run is also written out as a report and recomputed from
its raw files by tests/recompute_report.py, and held against physical
bounds: no link carries more than its rate, no variant beats its fluid ideal.
Each run starts with a ping between every two hosts (all 30 pairs answer),
and when it ends it has left no interface and no registry entry behind: the
leaf-spine's plumbing, checked in every switch mode by the PFC test's runs.

Host links are 5 Mbit/s with 2.5 ms per link (BDP 16 cells, base RTT 28 ms):
at that rate Python switches keep their departure schedule on a busy 2-core
machine (measured with scenarios/incast.yaml), so timings are the modelled
links', not the CPU's.  Fabric links run at 2.5 Mbit/s, so the ToR uplinks
are 3:1 oversubscribed (3 hosts x 5 over 2 spines x 2.5) and a cross-ToR
permutation congests the core, not only last hops: at 1.5:1 the agents'
real sending rate (about 60% of line rate on this CPU) left the core
uncongested and dcqcn unmarked.

Switch modes (switch_modes.py): the transport and its claims are the same in every mode; what a
mode changes is the switch under them (the Python traffic manager per switch, or the native
engine) and the cables (veths, or memory, or both in fabric-2). So each test runs in one mode, and
the modes share out what they change: every mode carries tita's credits, ECN marking for a window
or rate control, and a timing claim held against the simulator; PFC, whose pause frames cross
every kind of cable, runs in all three.
"""

import importlib.util
import os
from pathlib import Path

import pytest

from testbed.emulation import manifest
from testbed.emulation.run import VariantRun
from testbed.scenario import expand_variants, parse_scenario
from testbed.telemetry.report import write_report
from testbed.telemetry.summary import summarize_variant

from fitting import fitted, stretched, until_real_time_kept  # noqa: E402 (tests/integration is on sys.path)
from switch_modes import in_mode  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recompute_report)
BOUND_SLACK = 1.02  # counters and windows are exact to a cell or two; more than 2% above a bound is a bug

SCENARIO = """
name: {name}
duration_s: 10
seed: 1
topology: {{kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 3}}
links: {{rate_mbps: 5, delay_us: 2500, fabric: {{rate_mbps: 2.5}}}}
switch: {{target: builtin, processes: {processes}}}
fabric: {{load_balancing: spray, cell_size: 1024, pfc: {{enabled: {pfc}}}}}
transport: {{cc: {cc}}}
workload:
  - {{kind: pingall}}
  - {workload}
"""

INCAST = "{kind: incast, start_s: 0.5, receiver: h1, senders: 4, message_bytes: 65536, count: 2}"
PERMUTATION = "{kind: permutation, start_s: 0.5, message_bytes: 65536, count: 2, cross_tor: true}"



def run_variant(tmp_path, name: str, cc: str, workload: str, processes, pfc: bool = False) -> dict:
    scenario = parse_scenario(SCENARIO.format(name=name, cc=cc, workload=workload, processes=processes,
                                              pfc="true" if pfc else "false"), f"{name}.yaml")
    (variant,) = expand_variants(scenario)
    variant = fitted(variant)

    def once(at_clock, out_dir: Path):
        scenario = at_clock.scenario
        before = set(os.listdir("/sys/class/net"))
        result = VariantRun(at_clock, out_dir / name, ROOT, progress=lambda m: None).run()
        assert set(os.listdir("/sys/class/net")) == before, "the run left interfaces behind"
        assert not list(manifest.REGISTRY_DIR.glob("*.path")), "a finished run stays registered for cleaning"
        assert result.pingall == {"pairs": 6 * 5, "failed": []}, result.pingall
        summary = summarize_variant(out_dir / name, scenario.topo, scenario)
        write_report(scenario, {at_clock.name: out_dir / name}, {at_clock.name: summary}, out_dir)
        assert recompute_report.main([str(out_dir)]) == 0, "a report figure does not follow from the raw files"
        for link in summary["links"]:
            assert link["utilisation"] <= BOUND_SLACK, f"{link['link']} carried more than its rate: {link}"
        ratio = (summary["measured_over_ideal"] or {}).get("goodput")
        assert ratio is not None and ratio <= BOUND_SLACK, f"goodput beats the fluid ideal: {ratio}"
        summary["_link_mbps"] = scenario.links.host.rate_mbps
        summary["_context"] = (f"{out_dir / name}: agents {result.agents}, notes {result.notes}, "
                               f"fidelity {summary['fidelity']}, agent stats {summary['agents']}, "
                               f"drops {summary['drops']}")
        assert all(code == 0 for code in result.agents.values()), summary["_context"]
        return summary, summary

    return until_real_time_kept(once, variant, tmp_path / "run", name)


def assert_all_delivered(summary: dict, expected: int) -> None:
    context = summary["_context"]
    assert summary["messages_planned"] == expected, context
    assert summary["messages_acknowledged"] == expected, context  # every sender saw every message acknowledged
    assert summary["messages_delivered_verified"] == expected, context  # byte for byte against the seed's payload
    assert summary["messages_completed"] == expected, context
    assert summary["agents"]["corrupt_messages"] == 0 and summary["agents"]["verify_failures"] == 0, context
    assert summary["agents"]["agents_not_done"] == [], context


def assert_tita_lossless(summary: dict, cells: int) -> None:
    # The claim holds only on a fabric that kept real time: a switch or host agent that ran behind its
    # schedule (the fidelity verdict) turns its backlog into bursts no end-host control can prevent.
    # Then the run cannot test the claim, and the test fails rather than pass on a number the CPU made.
    context = summary["_context"]
    assert not summary["fidelity"]["behind_real_time"], f"fidelity lost, zero-drop claim untestable: {context}"
    drops = summary["drops"]
    # No DATA cell lost anywhere; credits dropped by the credit meter or queue are ExpressPass's feedback.
    assert drops["switch_queue_drops_by_type"].get("DATA", 0) == 0, context
    assert sum(drops["untyped_losses_packets"].values()) == 0, context
    assert drops["data_balance"]["verdict"] == "balances", context
    assert drops["by_type"]["DATA"]["received"] >= cells, context  # every cell of every message arrived
    assert summary["ecn_marks_packets"] == 0, context  # tita runs without ECN marking


def assert_dcqcn_reacted(summary: dict) -> None:
    context = summary["_context"]
    assert summary["ecn_marks_packets"] > 0 and summary["ce_cells"] > 0, context  # switches marked, receivers saw CE
    assert summary["agents"]["cnps_sent"] > 0, context
    assert summary["agents"]["cnps_received"] > 0 and summary["agents"]["rate_cuts"] > 0, context
    assert summary["agents"]["min_rate_mbps"] < summary["_link_mbps"], context


@in_mode("per_switch")
def test_incast_4_to_1_tita(tmp_path, registry, processes):
    """tita's incast, lossless and credited cell by cell, on the Python traffic manager's credit
    meter; the native engine's meters carry tita in test_permutation_tita (fabric-2) and the
    7:1 incasts (fabric-auto, fabric-2)."""
    summary = run_variant(tmp_path, "incast-tita", "tita", INCAST, processes)
    assert_all_delivered(summary, 4 * 2)
    assert_tita_lossless(summary, 4 * 2 * 65)
    assert summary["agents"]["credits_sent"] >= 4 * 2 * 65, summary["_context"]  # one credit per cell at least


@in_mode("auto")
def test_incast_4_to_1_dcqcn(tmp_path, registry, processes):
    """dcqcn's incast on the native engine with every cable in memory: the engine marks, receivers
    send CNPs, senders cut their rate; the Python traffic manager's marking is in
    test_permutation_dcqcn (per-switch), marks over veths in test_incast_4_to_1_nscc (fabric-2)."""
    summary = run_variant(tmp_path, "incast-dcqcn", "dcqcn", INCAST, processes)
    assert_all_delivered(summary, 4 * 2)
    assert_dcqcn_reacted(summary)


def test_incast_4_to_1_without_congestion_control_is_lossless_with_pfc(tmp_path, registry, processes):
    """PFC alone: line-rate senders into one host, and the fabric pauses them instead of dropping:
    the receiver's ToR pauses the spines, the spines the senders' ToR, and the ToRs their hosts'
    NICs, which hold their cells until the resume; every cell of every message arrives once.
    In every switch mode: the pause frames cross veths between switch processes, memory inside
    one engine, and both in fabric-2, and each switch kind pauses its own ports."""
    summary = run_variant(tmp_path, "incast-none-pfc", "none", INCAST, processes, pfc=True)
    assert_all_delivered(summary, 4 * 2)
    context, drops, pfc = summary["_context"], summary["drops"], summary["pfc"]
    assert not summary["fidelity"]["behind_real_time"], context
    assert drops["switch_queue_drops_by_type"].get("DATA", 0) == 0 and drops["data_balance"]["verdict"] == "balances", \
        context
    assert pfc["switch_xoff_sent"] > 0 and pfc["switch_xoff_sent"] == pfc["switch_xon_sent"], pfc
    assert pfc["switch_ports_paused"] > 0 and pfc["host_xoff_received"] > 0, pfc  # both kinds of sender paused
    assert pfc["host_held_cells_max"] > 0 and pfc["host_paused_ms"] > 0, pfc


@in_mode(2)
def test_incast_4_to_1_nscc(tmp_path, registry, processes):
    """NSCC's window on the emulated fabric: the switches mark, the receivers echo CE on their
    ACKs, and the senders' windows react to it (cuts or quick adapts, and a window below the
    one they started with); every message arrives intact. In fabric-2: marked cells cross the
    veths between the two engines (the other modes' marking: the dcqcn tests)."""
    summary = run_variant(tmp_path, "incast-nscc", "nscc", INCAST, processes)
    assert_all_delivered(summary, 4 * 2)
    context, agents = summary["_context"], summary["agents"]
    assert summary["ecn_marks_packets"] > 0 and summary["ce_cells"] > 0, context
    assert agents["cnps_sent"] == 0 and agents["credits_sent"] == 0, context  # ACKs carry its signals
    assert agents["window_decreases"] + agents["quick_adapts"] > 0, context
    assert agents["min_window_cells"] < 16, context  # it started at 1 BDP (16 cells)


@in_mode(2)
def test_permutation_tita(tmp_path, registry, processes):
    """tita's cross-ToR permutation, lossless through a congested core, on the native engine's
    credit meters with the core's cables split between two engines (the Python meter:
    test_incast_4_to_1_tita)."""
    summary = run_variant(tmp_path, "perm-tita", "tita", PERMUTATION, processes)
    assert_all_delivered(summary, 6 * 2)
    assert_tita_lossless(summary, 6 * 2 * 65)


@in_mode("per_switch")
def test_permutation_dcqcn(tmp_path, registry, processes):
    """dcqcn through a congested core on the Python traffic manager's marking (the engine's:
    test_incast_4_to_1_dcqcn)."""
    summary = run_variant(tmp_path, "perm-dcqcn", "dcqcn", PERMUTATION, processes)
    assert_all_delivered(summary, 6 * 2)
    assert_dcqcn_reacted(summary)


SLOW_7_TO_1 = 0.6  # 3 Mbit/s: a cell time of 2.9 ms against agents' wake-ups late by up to 2.3 ms at p99


def run_incast_7_to_1(tmp_path, processes, credit_order: str, overcommit: int = 1):
    """The claims' 7:1 tita incast (experiments.incast_text) fitted and slowed by SLOW_7_TO_1, run
    until fidelity is kept: (its variant at the clock of that run, its summary, its run directory)."""
    import dataclasses

    from testbed.claims.experiments import incast_text
    from testbed.scenario.timescale import slowed

    text = (incast_text(7, "tita", credit_order=credit_order, overcommit=overcommit)
            + f"switch: {{target: builtin, processes: {processes}}}\n")
    (variant,) = expand_variants(parse_scenario(text, f"incast7-tita-{credit_order}-k{overcommit}.yaml"))
    variant = fitted(variant)
    variant = dataclasses.replace(variant, scenario=slowed(variant.scenario, SLOW_7_TO_1))

    def once(at_clock, out_dir: Path):
        result = VariantRun(at_clock, out_dir, ROOT, progress=lambda m: None).run()
        summary = summarize_variant(out_dir, at_clock.scenario.topo, at_clock.scenario)
        summary["_link_mbps"] = at_clock.scenario.links.host.rate_mbps
        summary["_context"] = (f"{out_dir}: agents {result.agents}, fidelity {summary['fidelity']}, "
                               f"drops {summary['drops']}")
        return (at_clock, summary, out_dir), summary

    return until_real_time_kept(once, variant, tmp_path / variant.name, variant.name)


@in_mode("per_switch")
def test_incast_7_to_1_tita_reaches_the_links_payload_rate(tmp_path, registry, processes):
    """The incast acceptance on the emulated fabric, and the simulator within 10% of it: the claims'
    7:1 incast scenario (experiments.incast_text), and the simulator on the very variant that ran.

    Goodput: the acceptance asks 0.95 of the link's payload rate; the test holds 0.93, which TiTa
    without credit pacing (0.85) does not reach. Clock: the scenario's 5 Mbit/s slowed by
    SLOW_7_TO_1 (every ratio kept, the BDP still 16 cells), so an agent's pacer lateness stays
    under one cell time. The runs behind both numbers: docs/measurements.md.
    Per switch: the Python traffic manager's credit meter against the simulator's (the engine's:
    the two srpt tests below)."""
    from testbed.simulation import simexp
    from testbed.simulation.run import run_variant

    variant, summary, run_dir = run_incast_7_to_1(tmp_path, processes, "fair")
    assert_all_delivered(summary, 7)
    assert_tita_lossless(summary, 7 * 129)
    emu = simexp.from_run(run_dir, summary)
    assert emu["goodput_over_payload_rate"] >= 0.93, emu
    assert emu["peak_queue_cells"] <= variant.scenario.derived.bdp_cells, emu
    assert emu["jain"] >= 0.99, emu
    assert emu["last_over_ideal"] <= 1.1, emu
    run_variant(variant, tmp_path / "simulated")  # the same scenario, slowed alike, on the simulator
    sim = simexp.from_run(tmp_path / "simulated", summary={})
    for key in ("goodput_over_payload_rate", "jain", "last_over_ideal"):
        assert abs(emu[key] - sim[key]) <= 0.1 * sim[key], (key, emu, sim)


@in_mode("auto")
def test_incast_7_to_1_tita_srpt_serves_senders_one_after_another(tmp_path, registry, processes):
    """tita with credit_order srpt on the emulated fabric, the simulator within 10%: the claims' 7:1
    incast, slowed as the fair one above. Each sender is credited to its end before the next, so
    the median FCT is about 4/7 of the ideal last delivery (simulator: 0.60), the last one still at
    about the ideal, and no cell is lost; equal shares are what it gives up (Jain about 0.68).
    The simulator meters credits as the switches do and no flow is credited above its port's
    meter, or the two medians part (docs/measurements.md). On the native engine with every cable
    in memory, the default mode; the overcommitted srpt below runs across fabric-2's veths."""
    from testbed.simulation import simexp
    from testbed.simulation.run import run_variant

    variant, summary, run_dir = run_incast_7_to_1(tmp_path, processes, "srpt")
    assert_all_delivered(summary, 7)
    assert_tita_lossless(summary, 7 * 129)
    emu = simexp.from_run(run_dir, summary)
    ideal_ms = emu["ideal_last_s"] * 1e3
    assert emu["fct_p50_ms"] <= 0.7 * ideal_ms, emu
    assert emu["last_over_ideal"] <= 1.1 and emu["jain"] < 0.8, emu
    run_variant(variant, tmp_path / "simulated")
    sim = simexp.from_run(tmp_path / "simulated", summary={})
    for key in ("fct_p50_ms", "last_over_ideal"):
        assert abs(emu[key] - sim[key]) <= 0.1 * sim[key], (key, emu, sim)


@in_mode(2)
def test_incast_7_to_1_tita_srpt_overcommitted_keeps_equal_shares_below_the_ideal_median(
        tmp_path, registry, processes):
    """srpt with `overcommit: 6` on the emulated fabric, the simulator within 10%: six senders share
    the link while the seventh waits, so six finish at about 6/7 of the ideal last delivery
    (simulator: p50 0.87 of it) with Jain's index at 0.997, where fair order finishes all seven at
    the ideal; the claims' frontier point that keeps the incast acceptance at 7:1 and 15:1 alike.
    In fabric-2: the credit meters of two engines, the core's cables veths between them."""
    from testbed.simulation import simexp
    from testbed.simulation.run import run_variant

    variant, summary, run_dir = run_incast_7_to_1(tmp_path, processes, "srpt", overcommit=6)
    assert_all_delivered(summary, 7)
    assert_tita_lossless(summary, 7 * 129)
    emu = simexp.from_run(run_dir, summary)
    assert emu["fct_p50_ms"] <= 0.93 * emu["ideal_last_s"] * 1e3, emu
    assert emu["jain"] >= 0.99 and emu["last_over_ideal"] <= 1.1, emu
    assert emu["peak_queue_cells"] <= variant.scenario.derived.bdp_cells, emu
    run_variant(variant, tmp_path / "simulated")
    sim = simexp.from_run(tmp_path / "simulated", summary={})
    for key in ("fct_p50_ms", "jain", "last_over_ideal"):
        assert abs(emu[key] - sim[key]) <= 0.1 * sim[key], (key, emu, sim)


# The emulation adds a fixed latency to a short message however slow its clock runs: the agents' and
# switches' reaction on its four trips (request, credit, cells, ACK), a few ms. At twice the fitted
# times that fixed part is a small share of the FCT, and 10% judges the transport
# (docs/measurements.md has the runs at both clocks).
SHORT_MESSAGE_STRETCH = 2.0


@in_mode("auto")
def test_short_messages_among_long_flows_finish_sooner_with_tita(tmp_path, registry, processes):
    """The latency claim for short messages on the emulated fabric, and the simulator within
    10% of it: the claims' mixed scenario (claims.emulated, 4 x 256 KiB into h1 and 60 x 8 KiB to h1
    every 30 ms), tita and dcqcn on the same links, at SHORT_MESSAGE_STRETCH times the fitted
    clock's times. tita credits the short messages first, so each waits one round trip for its
    credits and not for a share beside the long flows: its FCT is at most 3 base RTTs (request and
    credit, its cells, their ACK) and at most half of dcqcn's at p50 and p99 (measured ratios:
    docs/measurements.md). In the default mode, the one `make reproduce` runs it in; the 7:1
    incasts hold the other modes' credit meters to the simulator."""
    import dataclasses

    from testbed.claims.emulated import LEAF_SPINE, MIXED_WORKLOAD
    from testbed.host import records
    from testbed.simulation import simexp
    from testbed.scenario.timescale import slowed
    from testbed.simulation.run import run_variant

    text = LEAF_SPINE.format(name="claims-mixed", workload=MIXED_WORKLOAD)
    text = text.replace("variants: {}", f"switch: {{target: builtin, processes: {processes}}}")
    (tita_variant,) = expand_variants(parse_scenario(text, "claims-mixed.yaml"))
    tita_variant = stretched(fitted(tita_variant), SHORT_MESSAGE_STRETCH)
    factor = tita_variant.scenario.links.host.rate_mbps / 5
    (dcqcn_variant,) = expand_variants(parse_scenario(text.replace("cc: tita", "cc: dcqcn"), "claims-mixed.yaml"))
    dcqcn_variant = dataclasses.replace(dcqcn_variant, scenario=slowed(dcqcn_variant.scenario, factor))
    streams = {"h6", "h7", "h8"}

    def short_fct(run_dir: Path, variant) -> dict:
        """The short messages' completion figures, in ms at the run's clock and in its base RTTs."""
        sent = [r for f in sorted((run_dir / "records").glob("*.jsonl")) for r in records.read_jsonl(f)
                if r["kind"] == "message_sent" and r["src"] in streams]
        assert len(sent) == 60, run_dir
        return simexp.completion_figures(sent, variant.scenario.derived.base_rtt_us / 1e6)

    def run(variant, name: str):
        def once(at_clock, out_dir: Path):
            result = VariantRun(at_clock, out_dir, ROOT, progress=lambda m: None).run()
            summary = summarize_variant(out_dir, at_clock.scenario.topo, at_clock.scenario)
            summary["_context"] = (f"{out_dir}: agents {result.agents}, fidelity {summary['fidelity']}, "
                                   f"drops {summary['drops']}")
            summary["_short"] = short_fct(out_dir, at_clock)
            # a rerun may have run slower: its times over this, at the clock both variants were fitted to
            summary["_stretch"] = at_clock.scenario.derived.base_rtt_us / variant.scenario.derived.base_rtt_us
            return (at_clock, summary), summary

        return until_real_time_kept(once, variant, tmp_path / name, name)

    (tita_ran, tita), (_dcqcn_ran, dcqcn) = run(tita_variant, "tita"), run(dcqcn_variant, "dcqcn")
    assert_all_delivered(tita, 64)
    assert_tita_lossless(tita, 4 * 257 + 60 * 9)
    assert not dcqcn["fidelity"]["behind_real_time"], dcqcn["_context"]
    t, d = tita["_short"], dcqcn["_short"]
    assert t["fct_p99_rtts"] <= 3.0, (t, tita["_context"])
    for key in ("fct_p50_ms", "fct_p99_ms"):
        assert t[key] / tita["_stretch"] <= 0.5 * d[key] / dcqcn["_stretch"], (key, t, d, tita["_stretch"],
                                                                             dcqcn["_stretch"])
    run_variant(tita_ran, tmp_path / "simulated")  # the scenario tita ran, at its clock, on the simulator
    sim = short_fct(tmp_path / "simulated", tita_ran)
    for key in ("fct_p50_ms", "fct_p99_ms"):  # not the RTT multiples: their 0.1 rounding is 4% at 2.5
        assert abs(t[key] - sim[key]) <= 0.1 * sim[key], (key, t, sim)
