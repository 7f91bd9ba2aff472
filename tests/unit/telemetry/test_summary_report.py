"""Figures in summary.json and report.md, on a run directory worked out by hand (run_fixture.py)."""

import json
from pathlib import Path

import pytest
from run_fixture import ACK_B, CELLS, DATA_B, edit_json, make_run

from testbed.scenario import load_scenario
from testbed.telemetry.report import write_report
from testbed.telemetry.summary import jain_fairness, summarize_variant

ROOT = Path(__file__).resolve().parents[3]
CAPACITY_B = 5e6 / 8 * 2.0  # 5 Mbit/s over the 2 s traffic window


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(ROOT / "scenarios" / "default.yaml")


@pytest.fixture
def run(tmp_path, scenario):
    return make_run(tmp_path / "ecmp", scenario)


def links(summary):
    return {l["link"]: l for l in summary["links"]}


def test_idle_link_is_in_the_table_the_fairness_and_the_sibling_line(run, scenario):
    s = summarize_variant(run, scenario.topo)
    by = links(s)
    assert len(by) == 32  # 16 cables, both directions, hosts included
    assert by["leaf1:4->spine2"]["utilisation"] == 0.0 and by["leaf1:4->spine2"]["total_bytes"] == 0
    assert len(s["uplink_utilisation"]) == 8 and s["uplink_utilisation_min"] == 0.0
    busy = 2 * CELLS * DATA_B / CAPACITY_B
    acks = 2 * CELLS * ACK_B / CAPACITY_B
    assert s["uplink_utilisation_max"] == pytest.approx(busy)
    assert s["uplink_jain_fairness"] == pytest.approx((busy + acks) ** 2 / (8 * (busy ** 2 + acks ** 2)))
    assert s["uplink_jain_fairness"] == pytest.approx(0.1419, abs=1e-4)
    # leaf2's uplinks carried only ACKs: no data sibling was busy there, so only leaf1's idle uplink is named
    assert s["idle_siblings"] == ["leaf1:4->spine2"]
    assert s["tiers"]["leaf->spine"]["idle_links"] == 7
    assert s["tiers"]["leaf->spine"]["utilisation_mean"] == pytest.approx((busy + acks) / 8)


def test_data_and_control_split_per_link(run, scenario):
    by = links(summarize_variant(run, scenario.topo))
    up = by["leaf2:4->spine2"]
    assert (up["data_bytes"], up["control_bytes"]) == (0, 2 * CELLS * ACK_B)
    h1 = by["h1:1->leaf1"]  # host egress: the agent's own send counts, 3 retransmissions included
    assert (h1["data_bytes"], h1["control_bytes"], h1["total_bytes"]) == ((CELLS + 3) * DATA_B, 0, (CELLS + 3) * DATA_B)
    assert by["h3:1->leaf2"]["control_utilisation"] == pytest.approx(CELLS * ACK_B / CAPACITY_B)
    assert by["leaf1:3->spine1"]["tier"] == "leaf->spine" and by["leaf1:1->h1"]["tier"] == "tor->host"


def test_drops_split_by_type_and_place_and_data_balances(run, scenario):
    d = summarize_variant(run, scenario.topo)["drops"]
    assert d["switch_queue_drops_by_type"] == {"DATA": 3, "ACK": 1}
    assert d["by_type"]["DATA"] == {"sent": CELLS * 2 + 3, "received": CELLS * 2, "switch_queue_drops": 3,
                                    "link_losses": 0, "unaccounted": 0}
    assert d["by_type"]["ACK"]["unaccounted"] == 0
    assert d["data_balance"]["verdict"] == "balances"


def test_a_lossy_link_and_a_cut_one_are_counted_where_they_lost(run, scenario):
    """A degraded link's losses are typed (the TM counts them per class); a cut link's are not
    (switch port send errors, host NIC port drops) and widen the untyped slack."""
    def lossy(result):
        result["tm_stats"]["spine1"]["tm"]["ports"][0]["lost_link_by_class"] = {"0": 2, "3": 1}
        result["tm_stats"]["spine2"]["port_io"] = {"1": {"tx_errors": 4}}
        result["host_counters"]["after"]["h1"]["link"] = {"h1-eth0": {"tx_dropped": 3, "tx_errors": 0}}

    def two_more(stats):
        stats["tx_counts"]["tx_DATA"] += 2

    edit_json(run / "result.json", lossy)
    edit_json(run / "records" / "h1.stats.json", two_more)
    d = summarize_variant(run, scenario.topo)["drops"]
    assert d["link_losses_by_type"] == {"DATA": 2, "ACK": 1}
    assert d["by_type"]["DATA"]["link_losses"] == 2 and d["by_type"]["DATA"]["unaccounted"] == 0
    assert d["untyped_losses_packets"]["switch port send errors (link down)"] == 4
    assert d["untyped_losses_packets"]["host NIC port transmit (link down)"] == 3
    assert d["data_balance"]["verdict"] == "balances"


def test_a_silently_lost_cell_breaks_the_balance(run, scenario):
    edit_json(run / "records" / "h3.stats.json", lambda s: s["rx_counts"].update(rx_DATA=CELLS - 1))
    balance = summarize_variant(run, scenario.topo)["drops"]["data_balance"]
    assert balance["unaccounted"] == 1 and balance["verdict"] == "does not balance"


def test_a_loss_at_an_untyped_place_is_named(run, scenario):
    edit_json(run / "records" / "h3.stats.json", lambda s: s["rx_counts"].update(rx_DATA=CELLS - 1))
    edit_json(run / "result.json", lambda r: r["host_counters"]["after"]["h3"]["udp"].update(InErrors=1,
                                                                                            RcvbufErrors=1))
    d = summarize_variant(run, scenario.topo)["drops"]
    assert d["untyped_losses_packets"]["host socket receive"] == 1
    assert d["untyped_losses_packets"]["host without a listener"] == 0
    assert d["data_balance"]["verdict"] == "balances within untyped losses"


def test_messages_and_completion_from_first_transmission(run, scenario):
    s = summarize_variant(run, scenario.topo)
    assert (s["messages_planned"], s["messages_completed"]) == (2, 2)
    assert (s["completion_p50_ms"], s["completion_p99_ms"], s["completion_samples"]) == (1500, 1800, 2)
    assert (s["queueing_p50_ms"], s["queueing_max_ms"]) == (0, 200)
    assert s["goodput_mbps"] == pytest.approx(2 * 200_000 * 8 / (3_000_000 - 1_010_000))


def test_a_planned_message_that_never_completed_is_counted(run, scenario):
    extra = {"src": "h5", "dst": "h7", "msg_id": 0, "size_bytes": 1000, "start_us": 1_000_000.0, "deps": []}
    edit_json(run / "agents" / "workload.json", lambda w: w["messages"].append(extra))
    s = summarize_variant(run, scenario.topo)
    assert (s["messages_planned"], s["messages_completed"], s["messages_missing"]) == (3, 2, ["h5->h7#0"])


def test_ideal_for_the_inferred_ecmp_placement(run, scenario):
    s = summarize_variant(run, scenario.topo)
    ideal = s["ideal"]
    assert ideal["paths"]["h1->h3"] == [["h1:1->leaf1", "leaf1:3->spine1", "spine1:2->leaf2", "leaf2:1->h3"]]
    assert ideal["placement"]["data_unexplained_share"] == 0.0
    # both flows share leaf1->spine1 (5 Mbit/s): 196 cells x 1090 B at 2.5 Mbit/s each = 683.648 ms
    assert ideal["completion_p50_ms"] == pytest.approx(683.648) and ideal["completion_p99_ms"] == pytest.approx(683.648)
    assert ideal["goodput_mbps"] == pytest.approx(400_000 * 8 / 0.683648 / 1e6)
    assert s["measured_over_ideal"]["goodput"] == pytest.approx(s["goodput_mbps"] / ideal["goodput_mbps"])
    assert ideal["link_utilisation"]["leaf1:3->spine1"] == pytest.approx(1.0)
    assert ideal["link_utilisation"]["leaf1:4->spine2"] == 0.0


def test_spray_ideal_splits_evenly(tmp_path, scenario):
    s = summarize_variant(make_run(tmp_path / "spray", scenario, load_balancing="spray_entropy"), scenario.topo)
    # each flow has half its bytes on each uplink: the host links (5 Mbit/s each) are the bottleneck
    assert s["ideal"]["completion_p50_ms"] == pytest.approx(CELLS * DATA_B * 8 / 5e6 * 1e3)
    assert s["ideal"]["link_utilisation"]["leaf1:4->spine2"] == pytest.approx(1.0)


def test_fidelity_covers_switches_and_hosts(tmp_path, scenario):
    kept = summarize_variant(make_run(tmp_path / "a", scenario), scenario.topo)["fidelity"]
    assert not kept["behind_real_time"] and kept["worst_p99_pacer_lateness_us"] == 200.0
    late_host = summarize_variant(make_run(tmp_path / "b", scenario, lateness_p99_us=5000), scenario.topo)["fidelity"]
    assert late_host["hosts_behind"] and not late_host["switches_behind"] and late_host["behind_real_time"]
    late_switch = summarize_variant(make_run(tmp_path / "c", scenario, lag_us=50_000), scenario.topo)["fidelity"]
    assert late_switch["switches_behind"] and late_switch["switch"] == "spine1"


def test_report_puts_the_fidelity_verdict_first_and_draws_every_link(tmp_path, scenario):
    run = make_run(tmp_path / "a", scenario, lateness_p99_us=5000)
    summaries = {"a": summarize_variant(run, scenario.topo)}
    report = write_report(scenario, {"a": run}, summaries, tmp_path / "out")
    text = report.read_text()
    first = text.splitlines()[0]
    assert first.startswith("**Fidelity lost") and "host" in first and "5000 us" in first
    assert "leaf1:4->spine2" in text and "n=2, nearest-rank" in text and "**balances**" in text
    assert (tmp_path / "out" / "links.png").stat().st_size > 1000
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["a"]["messages_completed"] == 2


def test_a_run_behind_real_time_says_how_much_cpu_the_hypervisor_took(tmp_path, scenario):
    run = make_run(tmp_path / "a", scenario, lateness_p99_us=5000)
    edit_json(run / "result.json", lambda r: r.update(costs={"machine_cpu_steal_share": 0.0734}))
    summaries = {"a": summarize_variant(run, scenario.topo)}
    assert summaries["a"]["fidelity"]["cpu_steal_share"] == 0.0734
    first = write_report(scenario, {"a": run}, summaries, tmp_path / "out").read_text().splitlines()[0]
    assert first.startswith("**Fidelity lost") and "hypervisor steal 7.3% of the machine's CPU time" in first


def test_a_run_behind_real_time_says_how_busy_the_cores_were(tmp_path, scenario):
    run = make_run(tmp_path / "a", scenario, lateness_p99_us=5000)
    edit_json(run / "result.json", lambda r: r.update(costs={"machine_cpu_busy_share": 0.8125,
                                                           "machine_cpu_busiest_second_share": 0.995}))
    summaries = {"a": summarize_variant(run, scenario.topo)}
    assert summaries["a"]["fidelity"]["cpu_busy_share"] == 0.8125
    first = write_report(scenario, {"a": run}, summaries, tmp_path / "out").read_text().splitlines()[0]
    assert first.startswith("**Fidelity lost") and "cores busy 81% of the traffic phase, 100% in its busiest second" in first


def test_jain_fairness():
    assert jain_fairness([1, 1, 1, 1]) == pytest.approx(1.0)
    assert jain_fairness([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_fairness([]) is None


def test_fidelity_threshold_is_one_cell_time_on_the_host_link_at_least_1_ms():
    from testbed.telemetry.summary import fidelity_threshold_us

    slow = {"derived": {"cell_wire_bytes": 1090}, "links": {"host": {"rate_mbps": 5}}}
    fast = {"derived": {"cell_wire_bytes": 1090}, "links": {"host": {"rate_mbps": 100}}}
    assert fidelity_threshold_us(slow) == pytest.approx(1090 * 8 / 5)  # 1744 us
    assert fidelity_threshold_us(fast) == 1000.0


def test_lag_percentiles_are_exact_in_the_verdict_range():
    from testbed.p4model.tm.lag import LagStats

    lag = LagStats()
    for us in range(1, 101):
        lag.record(us * 30_000)  # 30 us .. 3000 us
    assert lag.percentile_us(0.99) == 2970


def test_ecmp_paths_are_traced_when_the_plan_and_source_ports_are_known(run, scenario):
    from testbed.control.plan import plan_fabric
    from testbed.control.trace import FabricModel, Flow
    from testbed.scenario import expand_variants

    ports = {"h1": {"h3": 50001}, "h2": {"h4": 50002}, "h3": {"h1": 50003}, "h4": {"h2": 50004}}
    for host, peers in ports.items():
        edit_json(run / "records" / f"{host}.stats.json", lambda s, p=peers: s.update(udp_source_ports=p))
    variant = next(v for v in expand_variants(scenario) if v.name == "load_balancing=ecmp")
    s = summarize_variant(run, scenario.topo, variant.scenario)
    assert "traced" in s["ideal"]["placement"]["data"]
    model = FabricModel(scenario.topo, plan_fabric(scenario.topo, variant.scenario), seed=variant.scenario.seed)
    cables = model.path(Flow("h1", "h3", sport=50001))
    spine = next(c for c in cables if "spine" in c).split("-")[1]
    traced = s["ideal"]["paths"]["h1->h3"][0]
    assert traced[0] == "h1:1->leaf1" and traced[-1] == "leaf2:1->h3"
    assert traced[1] == f"leaf1:{3 if spine == 'spine1' else 4}->{spine}"
    # the fixture's bytes went over spine1 for both flows (784 cells on the 4 links that tell spines apart):
    # each flow traced over spine2 instead misplaces its 196 cells on 4 of them, 784 cells of difference
    on_spine2 = sum("spine2" in s["ideal"]["paths"][f][0][1] for f in ("h1->h3", "h2->h4"))
    assert s["ideal"]["placement"]["data_unexplained_share"] == pytest.approx(on_spine2)


def test_nearest_rank_percentiles():
    from testbed.telemetry.messages import nearest_rank

    sixteen = list(range(1, 17))
    assert nearest_rank(sixteen, 50) == 8  # the 8th of 16: half the samples at or below it
    assert nearest_rank(sixteen, 99) == 16  # with 16 samples p99 is the maximum
    assert nearest_rank(list(range(1, 201)), 99) == 198
    assert nearest_rank([], 50) is None


def test_switch_egress_split_counts_every_control_type_and_no_other_frame():
    from testbed.telemetry.links import _tm_split

    queues = [{"port": 3, "priority": 0, "by_class": {"0": {"bytes": 1090}, "3": {"bytes": 74}, "4": {"bytes": 66},
                                                      "14": {"bytes": 98}}},
              {"port": 3, "priority": 1, "by_class": {"1": {"bytes": 66}}},
              {"port": 4, "priority": 0, "by_class": {"0": {"bytes": 5}}}]
    assert _tm_split(queues, 3) == (1090, 74 + 66 + 66)
    assert _tm_split([{"port": 3}], 3) is None  # a target that does not count classes


def test_fat_tree_tiers_and_siblings():
    from testbed.telemetry.links import idle_siblings, link_loads
    from testbed.topo.build import build_topology

    topo = build_topology({"kind": "fat_tree", "k": 4})
    scenario = {"links": {"host": {"rate_mbps": 5}, "fabric": {"rate_mbps": 5}}, "fabric": {"cell_size": 1024}}
    samples = [{"t_s": 0, "switch": s, "rx": {}, "tx": {str(p.number): {"packets": 1, "bytes": 0}
                                                        for p in topo.ports(s)}} for s in topo.switches]
    edge = topo.switches[0]  # at the end, only its first uplink has carried anything
    up = [p for p in topo.ports(edge) if p.tier == "fabric"]
    samples.append({"t_s": 2, "switch": edge, "rx": {}, "tx": {str(up[0].number): {"packets": 9, "bytes": 9000}}})
    loads = link_loads(topo, scenario, samples, {}, {}, 1.0)
    assert {l.tier for l in loads} == {"host->tor", "edge->agg", "agg->core", "core->agg", "agg->edge", "tor->host"}
    assert len(loads) == 2 * len(topo.links)
    assert idle_siblings(topo, loads) == [f"{edge}:{up[1].number}->{up[1].peer}"]


def _as_bmv2(run):
    """The fixture as bmv2 would leave it: no traffic-manager statistics, target bmv2."""
    def change(result):
        result["target"] = "bmv2"
        result["tm_stats"] = {}
    edit_json(run / "result.json", change)
    return run


def test_a_bmv2_report_marks_what_bmv2_cannot_measure(tmp_path, scenario):
    run = _as_bmv2(make_run(tmp_path / "b", scenario))
    summary = summarize_variant(run, scenario.topo)
    assert summary["fidelity"]["switches_checked"] is False and not summary["fidelity"]["behind_real_time"]
    assert summary["drops"]["data_balance"] == {"verdict": "not checked", "why": "bmv2 does not count its queue drops"}
    text = write_report(scenario, {"b": run}, {"b": summary}, tmp_path / "out").read_text()
    first = text.splitlines()[0]
    assert "bmv2 switches' timing is not checked" in first and "every switch" not in first
    row = next(line for line in text.splitlines() if line.startswith("| switch queue drops"))
    assert "not measured on bmv2" in row and "| 0 |" not in row
    # the link model bmv2 ran: 5 Mbit/s at 1090 B per cell is 573 packets/s, and no delay
    assert "bmv2 ran every port at 573 packets/s" in text and "2500 us per link is not modelled" in text
    assert "DATA cells dropped at switch queues" not in text


def test_on_bmv2_a_control_cell_costs_a_data_cell_slot_in_the_ideal(tmp_path, scenario):
    def summary(name, bmv2):
        run = make_run(tmp_path / name, scenario, load_balancing="spray_entropy")
        return summarize_variant(_as_bmv2(run) if bmv2 else run, scenario.topo)["ideal"]

    builtin, bmv2 = summary("a", False), summary("b", True)
    assert "packet_slots" in bmv2["placement"] and "packet_slots" not in builtin["placement"]
    # h3 and h4 answer with one ACK per cell over links no data uses: the goodput stays; where a
    # switch sends the ACKs their ideal load grows by a data cell's wire size over an ACK's, while
    # the receivers' own NICs (their agents' pacers) still send bytes
    assert bmv2["goodput_mbps"] == pytest.approx(builtin["goodput_mbps"])
    assert bmv2["link_utilisation"]["leaf2:3->spine1"] == pytest.approx(
        builtin["link_utilisation"]["leaf2:3->spine1"] * DATA_B / ACK_B)
    assert bmv2["link_utilisation"]["h3:1->leaf2"] == pytest.approx(builtin["link_utilisation"]["h3:1->leaf2"])


def test_the_uplink_plot_of_a_nine_variant_sweep_draws_without_a_layout_warning(tmp_path):
    import warnings

    from testbed.telemetry.report import _plot_uplinks

    names = [f"cc={cc},pfc=true,workload.1.load={load}" for cc in ("tita", "dcqcn", "nscc") for load in (0.2, 0.5, 1)]
    summaries = {n: {"uplink_utilisation": {"leaf1:spine1": 0.5, "leaf1:spine2": 0.4}} for n in names}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _plot_uplinks(summaries, tmp_path / "uplinks.png")
    assert (tmp_path / "uplinks.png").stat().st_size > 0


def test_the_verdict_weighs_each_cross_server_cables_tunnel_against_the_modelled_delay(tmp_path, scenario):
    probe = lambda p99: {"servers": ["here", "again"], "sent": 200, "received": 200,  # noqa: E731
                         "one_way_us": {"mean": p99 / 4, "p50": p99 / 5, "p99": p99, "max": p99}, "jitter_us": 30.0}
    run = make_run(tmp_path / "a", scenario)
    edit_json(run / "result.json", lambda r: r.update(tunnels={"leaf1-spine1": probe(900.0), "leaf2-spine1": probe(400.0)}))
    summaries = {"a": summarize_variant(run, scenario.topo)}
    fidelity = summaries["a"]["fidelity"]
    assert not fidelity["behind_real_time"] and fidelity["late_cables"] == []
    cable = fidelity["cross_server_cables"]["leaf1-spine1"]
    assert cable["one_way_p99_us"] == 900.0 and cable["jitter_us"] == 30.0 and cable["probes"] == [200, 200]
    assert cable["modelled_delay_us"] == scenario.links.fabric.delay_us and not cable["late"]
    first = write_report(scenario, {"a": run}, summaries, tmp_path / "out").read_text().splitlines()[0]
    assert first.startswith("Fidelity kept") and "2 cables between servers in tunnels adding one-way p99 400-900 us" \
        in first and "no tunnel made the emulation late" in first
    threshold = fidelity["threshold_us"]
    run = make_run(tmp_path / "b", scenario)
    edit_json(run / "result.json", lambda r: r.update(tunnels={"leaf1-spine1": probe(threshold + 1),
                                                             "leaf2-spine1": probe(400.0)}))
    summaries = {"b": summarize_variant(run, scenario.topo)}
    assert summaries["b"]["fidelity"]["behind_real_time"] and summaries["b"]["fidelity"]["late_cables"] == ["leaf1-spine1"]
    first = write_report(scenario, {"b": run}, summaries, tmp_path / "out2").read_text().splitlines()[0]
    assert first.startswith("**Fidelity lost") and "the tunnels made the emulation late on leaf1-spine1" in first


def test_a_host_an_agent_stall_stopped_is_named_not_judged():
    from testbed.telemetry.summary import fidelity

    scenario = {"derived": {"cell_wire_bytes": 1090}, "links": {"host": {"rate_mbps": 5}}, "faults": []}
    hosts = {"h1": {"pacer_lateness": {"p99_us": 300_000.0}}, "h2": {"pacer_lateness": {"p99_us": 200.0}}}
    judged = fidelity(scenario, {}, hosts)
    assert judged["hosts_behind"] and judged["host"] == "h1" and judged["hosts_not_judged"] == {}
    scenario["faults"] = [{"kind": "agent_stall", "target": "h1", "at_s": 1.0, "duration_s": 0.3}]
    stalled = fidelity(scenario, {}, hosts)
    assert not stalled["behind_real_time"] and stalled["host"] == "h2"
    assert stalled["hosts_not_judged"] == {"h1": "an agent_stall fault stopped its agent"}
    assert "h1" not in stalled["host_p99_pacer_lateness_us"]
    hosts["h2"]["pacer_lateness"]["p99_us"] = 5000.0  # another host late is still judged
    assert fidelity(scenario, {}, hosts)["hosts_behind"]
