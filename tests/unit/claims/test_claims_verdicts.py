"""The claims table's verdicts follow their written rules (testbed.claims.verdicts.RULES)."""

from testbed.claims import verdicts
from testbed.claims.figures import highest_zero_loss_load


def row(name, kind, label="tita", **kw):
    cc, _, pfc = label.partition("+")
    base = {"name": name, "kind": kind, "label": label, "cc": cc, "pfc": [8, 4] if pfc else None,
            "data_drops": 0, "finished": True, "params": {}, "pause_frames": 0}
    base.update(kw)
    return base


def sweep(label, drops_by_load, **kw):
    return [row(f"load{load:g}-{label}", "load", label, offered_load=load, data_drops=d, **kw)
            for load, d in drops_by_load.items()]


def test_highest_zero_loss_load_stops_at_the_first_loss_or_unfinished_run():
    assert highest_zero_loss_load(sweep("x", {0.1: 0, 0.2: 0, 0.3: 5, 0.4: 0})) == 0.2
    assert highest_zero_loss_load(sweep("x", {0.1: 3, 0.2: 0})) is None
    rows = sweep("x", {0.1: 0, 0.2: 0})
    rows[1]["finished"] = False
    assert highest_zero_loss_load(rows) == 0.1


def test_zero_loss_is_partly_held_when_only_wide_incasts_drop():
    sim = [row("incast7-tita", "incast", params={"senders": 7}),
           row("incast64-tita", "incast", params={"senders": 64}, data_drops=30)] + sweep("tita", {1.0: 0})
    v = verdicts.zero_loss(sim, [])
    assert v["verdict"] == verdicts.PARTLY and "incast64-tita 30" in v["measured"]
    sim[-1]["data_drops"] = 1  # a loss under offered load is not beyond the acceptance
    assert verdicts.zero_loss(sim, [])["verdict"] == verdicts.NOT
    sim[-1]["data_drops"] = 0
    sim[1]["data_drops"] = 0
    assert verdicts.zero_loss(sim, [])["verdict"] == verdicts.HOLDS
    srpt = row("incast64-tita+srpt", "incast", "tita+srpt", params={"senders": 64}, data_drops=17)
    v = verdicts.zero_loss(sim + [srpt], [])
    assert v["verdict"] == verdicts.HOLDS and "tita+srpt (not counted in the verdict) dropped DATA cells in " \
        "incast64-tita+srpt 17" in v["measured"]
    emu = [{"cc": "tita", "label": "tita", "variant": "cc-tita", "data_drops": 2}]
    assert verdicts.zero_loss(sim, emu)["verdict"] == verdicts.NOT


def test_more_load_needs_1_4x_and_says_when_dcqcn_lost_at_every_load():
    sim = sweep("tita", {0.1: 0, 0.5: 0, 1.0: 0}) + sweep("dcqcn", {0.1: 0, 0.5: 9, 1.0: 9})
    v = verdicts.more_load(sim)
    assert v["verdict"] == verdicts.HOLDS and "ratio 10.00x" in v["measured"]
    sim = sweep("tita", {0.1: 0, 0.5: 0, 1.0: 4}) + sweep("dcqcn", {0.1: 0, 0.5: 0, 1.0: 9})
    assert verdicts.more_load(sim)["verdict"] == verdicts.NOT  # 0.5 / 0.5
    sim = sweep("tita", {0.1: 0, 1.0: 0}) + sweep("dcqcn", {0.1: 1, 1.0: 1})
    v = verdicts.more_load(sim)
    assert v["verdict"] == verdicts.HOLDS and "below 0.1" in v["measured"] and "above 10.0x" in v["measured"]
    assert verdicts.more_load(sim, "nscc")["measured"].startswith("not measured")
    sim += sweep("dcqcn+pfc", {0.1: 0, 1.0: 0}, pause_frames=40, fct_p99_ms=300.0)
    v = verdicts.more_load(sim)
    assert v["verdict"] == verdicts.HOLDS
    assert "dcqcn with PFC loses nothing by construction (40 pause frames at load 1.0); there its FCT " \
           "p99 is 300.0 ms" in v["measured"]


def test_lower_latency_thresholds():
    def sim(ratio):
        return [row("incast7-tita", "incast", fct_p50_ms=60 * ratio, fct_p99_ms=70 * ratio),
                row("incast7-dcqcn", "incast", "dcqcn", fct_p50_ms=60, fct_p99_ms=70)]
    assert verdicts.lower_latency(sim(0.6))["verdict"] == verdicts.HOLDS
    assert verdicts.lower_latency(sim(0.9))["verdict"] == "lower, not by 40%"
    assert verdicts.lower_latency(sim(1.0))["verdict"] == verdicts.NOT
    assert verdicts.lower_latency([])["verdict"] == verdicts.NOT


def test_tita_srpt_has_latency_and_acceptance_rows_of_its_own_and_is_named_in_the_fair_share_note():
    good = {"goodput_over_payload_rate": 0.98, "peak_queue_cells": 2, "bdp_cells": 16, "last_over_ideal": 1.0,
            "params": {"senders": 7}}
    sim = [row("incast7-tita", "incast", fct_p50_ms=1000, fct_p99_ms=1000, jain=1.0, **good),
           row("incast7-tita+srpt", "incast", "tita+srpt", fct_p50_ms=570, fct_p99_ms=1000, jain=0.65, **good),
           row("incast7-dcqcn", "incast", "dcqcn", fct_p50_ms=950, fct_p99_ms=1100, ideal_last_s=1.0,
               params={"senders": 7})]
    fair = verdicts.lower_latency(sim)
    assert fair["verdict"] == verdicts.NOT
    assert "tita+srpt, senders served one after another: p50 570 ms = 0.60 of dcqcn's, Jain 0.65" in fair["measured"]
    srpt = verdicts.lower_latency(sim, mine="tita+srpt")
    assert srpt["claim"] == "about 40% lower latency (tita+srpt vs dcqcn)"
    assert srpt["measured"].startswith("tita+srpt over dcqcn: incast7 FCT p50 570/950 ms = 0.60")
    table = {r["claim"]: r["verdict"] for r in verdicts.table(sim, [])}
    assert table["incast acceptance, tita incast 7:1, simulated"] == verdicts.HOLDS
    assert table["incast acceptance, tita+srpt incast 7:1, simulated"] == "not reproduced (jain)"


def test_incast_acceptance_names_each_failed_check():
    good = {"senders": 7, "goodput_over_payload_rate": 0.96, "data_drops": 0, "peak_queue_cells": 2,
            "bdp_cells": 16, "jain": 0.999, "last_over_ideal": 1.01}
    assert verdicts.incast_acceptance(good, "simulated")["verdict"] == verdicts.HOLDS
    bad = {**good, "goodput_over_payload_rate": 0.93, "peak_queue_cells": 17}
    assert verdicts.incast_acceptance(bad, "simulated")["verdict"] == verdicts.NOT + " (goodput, queue)"
    late = {**good, "behind_real_time": True, "link_rate_mbps": 2.0}
    assert verdicts.incast_acceptance(late, "emulated")["verdict"] == verdicts.NOT + " (fidelity)"


def test_agreement_is_within_ten_percent_of_the_simulator():
    sim = {"goodput_over_payload_rate": 0.98, "jain": 1.0, "last_over_ideal": 1.0}
    emu = {"kind": "incast", "cc": "tita", "label": "tita", "senders": 7, "goodput_over_payload_rate": 0.90, "jain": 1.0,
           "last_over_ideal": 1.12}
    v = verdicts.agreement(sim, [emu])
    assert v["verdict"] == verdicts.NOT + " (last_over_ideal)"
    v = verdicts.agreement({"efficiency": 0.80}, [{"kind": "permutation", "cc": "tita", "label": "tita", "tiers": 2,
                                                   "efficiency": 0.75}])
    assert v["verdict"] == verdicts.HOLDS and "2-tier permutation" in v["claim"]


def test_agreement_counts_the_simulators_own_spread_over_seeds():
    sim = {"goodput_over_payload_rate": 0.80, "jain": 0.99, "last_over_ideal": 1.20, "seeds": [1, 2, 3, 4, 5],
           "seed_spread": {"goodput_over_payload_rate": [0.70, 0.85], "jain": [0.98, 0.99],
                           "last_over_ideal": [1.12, 1.40]}}
    emu = {"kind": "incast", "cc": "dcqcn", "label": "dcqcn", "senders": 15, "goodput_over_payload_rate": 0.66,
           "jain": 0.99, "last_over_ideal": 1.45}
    v = verdicts.agreement(sim, [emu])  # 17.5% and 20.8% off seed 1, but 5.0% and 4.2% outside the seeds' range
    assert v["verdict"] == verdicts.HOLDS, v
    assert "(17.5%), 5 seeds simulated: 0.7-0.85 (ranges 5.0% apart)" in v["measured"]
    assert "jain 0.99 emulated, 0.99 simulated (0.0%), 5 seeds simulated: 0.98-0.99 (ranges overlap)" in v["measured"]
    far = verdicts.agreement(sim, [{**emu, "goodput_over_payload_rate": 0.60}])  # 12.5% below the lowest seed
    assert far["verdict"] == verdicts.NOT + " (goodput_over_payload_rate)"


def test_agreement_of_a_scenario_run_several_times_is_the_distance_of_its_runs_range():
    sim = {"efficiency": 0.82}
    runs = [{"kind": "permutation", "label": "tita", "tiers": 2, "efficiency": e, "run": k, "runs": 3}
            for k, e in enumerate((0.70, 0.74, 0.79), start=1)]
    v = verdicts.agreement(sim, runs)  # the median 0.74 is 9.8% off, the best run 3.7%: the range is within 10%
    assert v["verdict"] == verdicts.HOLDS, v
    assert v["measured"] == "efficiency 0.74 emulated (3 runs: 0.7-0.79), 0.82 simulated (9.8%) (ranges 3.7% apart)"
    assert v["claim"] == "simulator and emulation agree, tita 2-tier permutation"
    low = [{**r, "efficiency": e} for r, e in zip(runs, (0.60, 0.62, 0.70))]  # 14.6% below at best
    assert verdicts.agreement(sim, low)["verdict"] == verdicts.NOT + " (efficiency)"


def test_every_run_of_a_repeated_scenario_has_its_own_acceptance_row_and_latency_ratios():
    def row(label, p50, run):
        return {"kind": "incast", "label": label, "cc": label, "pfc": False, "senders": 7, "fct_p50_ms": p50,
                "fct_p99_ms": p50, "behind_real_time": False, "data_drops": 0, "pause_frames": None,
                "run": run, "runs": 2}
    emu = [row("tita", 500, 1), row("dcqcn", 1000, 1), row("tita", 500, 2), row("dcqcn", 450, 2)]
    v = verdicts.lower_latency_emulated(emu, "dcqcn")
    assert "incast 7:1 (run 1 of 2) FCT p50 500/1000 ms = 0.50" in v["measured"]
    assert "incast 7:1 (run 2 of 2) FCT p50 500/450 ms = 1.11" in v["measured"]
    assert v["verdict"] == verdicts.NOT  # run 2's ratio counts as much as run 1's
    good = {"goodput_over_payload_rate": 0.98, "data_drops": 0, "peak_queue_cells": 2, "bdp_cells": 16,
            "jain": 1.0, "last_over_ideal": 1.0, "link_rate_mbps": 1.0, "behind_real_time": False}
    assert verdicts.incast_acceptance({**row("tita", 500, 2), **good}, "emulated")["claim"] == \
        "incast acceptance, tita incast 7:1, emulated (run 2 of 2)"


def test_emulated_latency_compares_within_each_scenario_and_needs_fidelity():
    def row(label, p50, p99, late=False):
        return {"kind": "incast", "label": label, "cc": label.split("+")[0], "pfc": "+pfc" in label,
                "senders": 7, "fct_p50_ms": p50, "fct_p99_ms": p99, "behind_real_time": late,
                "data_drops": 0, "pause_frames": 40 if "+pfc" in label else None}
    emu = [row("tita", 500, 600), row("dcqcn+pfc", 1000, 800)]
    v = verdicts.lower_latency_emulated(emu, "dcqcn+pfc")
    assert v["verdict"] == "lower, not by 40%"  # 0.50 and 0.75
    assert "incast 7:1 FCT p99 600/800 ms = 0.75" in v["measured"] and "40 pause frames" in v["measured"]
    assert verdicts.lower_latency_emulated([row("tita", 500, 500), row("dcqcn", 1000, 1000)], "dcqcn")["verdict"] \
        == "holds"
    late = verdicts.lower_latency_emulated([row("tita", 500, 500, late=True), row("dcqcn", 1000, 1000)], "dcqcn")
    assert late["verdict"].startswith("not reproduced (fidelity lost")
    # a baseline whose median sender beat the equal-share finish: the row says so
    fair, unfair = {**row("tita", 1040, 1045), "jain": 0.9999}, {**row("dcqcn", 1000, 1300), "ideal_last_s": 1.05}
    v = verdicts.lower_latency_emulated([fair, unfair], "dcqcn")
    assert v["verdict"] == verdicts.NOT
    assert ("(incast 7:1: dcqcn's median 1000 ms is 0.95 of the ideal last delivery 1050 ms, when equal shares "
            "finish every sender; tita's Jain 0.9999)") in v["measured"]
    assert "ideal last delivery" not in verdicts.lower_latency_emulated(
        [row("tita", 500, 500), {**row("dcqcn", 1000, 1000), "ideal_last_s": 1.05}], "dcqcn")["measured"]


def test_emulated_more_load_needs_fidelity_at_every_load():
    def row(label, load, drops, late=False):
        return {"kind": "load", "label": label, "offered_load": load, "data_drops": drops, "finished": True,
                "loss_fraction": drops / 1000, "link_rate_mbps": 0.5, "behind_real_time": late,
                "pause_frames": 10 if "+pfc" in label else None, "fct_p99_ms": 100.0}
    emu = [row("tita", 0.2, 0), row("tita", 1.0, 0), row("dcqcn", 0.2, 0), row("dcqcn", 1.0, 5),
           row("dcqcn+pfc", 1.0, 0)]
    v = verdicts.more_load_emulated(emu)
    assert v["verdict"] == "holds" and "tita 1.0, dcqcn 0.2" in v["measured"] and "ratio 5.00x" in v["measured"]
    assert "dcqcn with PFC: 0 DATA drops" in v["measured"]
    emu[-1] = row("dcqcn+pfc", 1.0, 0, late=True)  # the reference lost fidelity: named, the ratio stands
    v = verdicts.more_load_emulated(emu)
    assert v["verdict"] == "holds" and "(fidelity lost with PFC at 1: those figures are the CPU's)" in v["measured"]
    emu[0] = row("tita", 0.2, 0, late=True)
    assert verdicts.more_load_emulated(emu)["verdict"] == "not reproduced (fidelity lost)"
    emu[0] = row("tita", 0.2, 0)
    emu[3] = row("dcqcn", 1.0, 5, late=True)
    assert verdicts.more_load_emulated(emu)["verdict"] == "not reproduced (fidelity lost)"


def frontier_sim(jains_7: dict, jains_15: dict):
    """Incasts 7:1 and 15:1 with srpt's K points (K -> (p50 ms, Jain)), fair tita and dcqcn."""
    good = {"goodput_over_payload_rate": 0.98, "peak_queue_cells": 2, "bdp_cells": 16, "last_over_ideal": 1.0,
            "fct_p99_ms": 900}
    sim = []
    for n, points in ((7, jains_7), (15, jains_15)):
        for k, (p50, jain) in points.items():
            label = "tita+srpt" if k == 1 else f"tita+srpt-k{k}"
            sim.append(row(f"incast{n}-{label}", "incast", label, overcommit=k, fct_p50_ms=p50, jain=jain,
                           params={"senders": n}, **good))
        sim.append(row(f"incast{n}-tita", "incast", fct_p50_ms=1010, jain=1.0, params={"senders": n}, **good))
        sim.append(row(f"incast{n}-dcqcn", "incast", "dcqcn", fct_p50_ms=1000, fct_p99_ms=1000,
                       params={"senders": n}))
    return sim


def test_the_frontier_row_names_the_lowest_median_k_that_keeps_the_acceptance_per_n():
    sim = frontier_sim({1: (600, 0.66), 5: (800, 0.98), 6: (870, 0.997)},
                       {1: (520, 0.5), 13: (820, 0.998), 14: (880, 0.9996)})
    v = verdicts.overcommit_frontier(sim)
    assert v["verdict"] == verdicts.HOLDS
    assert "7:1: K=6 p50 870 ms = 0.87 of dcqcn's, p99 0.90, Jain 0.997" in v["measured"]
    assert "(K meeting it: 6)" in v["measured"] and "15:1: K=13 p50 820 ms" in v["measured"]
    assert v["measured"].endswith("one K for every N: none; one K relative to N for every N: K = N-1")
    assert verdicts.frontier_checks(sim[0], sim[4]) == ["jain"]
    assert verdicts.frontier_checks(sim[3], sim[4]) == ["p50 not below dcqcn's"]  # fair tita, 1010 ms
    assert v["claim"] in {r["claim"] for r in verdicts.table(sim, [])}


def test_the_frontier_row_fails_when_some_n_has_no_k_that_keeps_the_acceptance():
    sim = frontier_sim({1: (600, 0.66), 6: (870, 0.98)}, {1: (520, 0.5), 14: (880, 0.9996)})
    v = verdicts.overcommit_frontier(sim)
    assert v["verdict"] == verdicts.NOT
    assert "7:1: no K meets the acceptance with p50 and p99 below dcqcn's" in v["measured"]
    assert verdicts.overcommit_frontier([r for r in sim if r["label"] != "tita+srpt-k6"
                                         and r["label"] != "tita+srpt-k14"]) is None
    assert verdicts.overcommit_frontier([r for r in sim if r["label"] != "dcqcn"]) is None  # reproduce --cc tita
