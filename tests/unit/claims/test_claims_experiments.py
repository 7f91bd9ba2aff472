"""Simulator experiments of `testbed reproduce`: saved raw, figures recomputed from the files,
and the same figures as simexp's own run of the same experiment."""

import json

import pytest

from testbed.claims import experiments, figures, report
from testbed.cells import segment
from testbed.simulation import simexp
from testbed.host import workloads
from testbed.host.workloads import WorkloadError


def test_poisson_offers_the_asked_load_to_other_hosts():
    hosts = [f"h{i}" for i in range(1, 9)]
    wire = 10_000
    wl = workloads.poisson(hosts, 0.4, 5e6, 8000, wire, duration_s=200.0, seed=3)
    assert all(m.src != m.dst for m in wl)
    for h in hosts:
        offered = sum(1 for m in wl if m.src == h) * wire * 8 / 200.0
        assert abs(offered / (0.4 * 5e6) - 1) < 0.1, (h, offered)
    ids = [m.msg_id for m in wl if (m.src, m.dst) == ("h1", "h2")]
    assert ids == list(range(len(ids)))
    with pytest.raises(WorkloadError):
        workloads.poisson(hosts, 1.5, 5e6, 8000, wire, 1.0, seed=1)


def test_plan_covers_every_kind_and_dcqcn_with_pfc():
    plan = experiments.plan(["tita", "dcqcn", "none"])
    names = {e.name for e in plan}
    assert {"incast64-tita", "incast64-dcqcn", "mixed-dcqcn+pfc", "load0.05-tita", "load1-dcqcn+pfc",
            "permutation-3tier-tita", "alltoall-2tier-dcqcn", "permutation-3tier-dcqcn+pfc"} <= names
    assert "incast64-none" not in names
    srpt = {e.name for e in plan if e.transport.credit_order == "srpt" and e.transport.overcommit == 1}
    assert srpt == {f"incast{n}-tita+srpt" for n in experiments.INCAST_SENDERS} | {"mixed-tita+srpt"}
    frontier = {e.name for e in plan if e.transport.overcommit > 1}
    assert frontier == {f"incast{n}-tita+srpt-k{k}" for n in (7, 15) for k in range(2, n)}


def test_the_overcommit_sweep_runs_its_degree_and_more_seeds_only_where_it_is_emulated(tmp_path):
    from testbed.scenario import parse_scenario

    text = experiments.incast_text(7, "tita", credit_order="srpt", overcommit=6)
    assert parse_scenario(text, "i.yaml").transport.tita.overcommit == 6
    plan = {e.name: e for e in experiments.plan(["tita"], quick=True)}
    out = experiments.run(plan["incast7-tita+srpt-k6"], tmp_path)
    f = figures.of_experiment(out)
    assert f["label"] == "tita+srpt-k6" and f["overcommit"] == 6 and len(f["seeds"]) == 5
    assert f["jain"] >= 0.99 and f["data_drops"] == 0
    assert not (experiments.run(plan["incast7-tita+srpt-k5"], tmp_path) / "seeds").exists()


def test_the_srpt_incast_runs_its_scenario_with_that_credit_order(tmp_path):
    from testbed.scenario import parse_scenario

    text = experiments.incast_text(7, "tita", credit_order="srpt")
    assert parse_scenario(text, "i.yaml").transport.tita.credit_order == "srpt"
    (e,) = [e for e in experiments.plan(["tita"], quick=True) if e.name == "incast7-tita+srpt"]
    out = experiments.run(e, tmp_path)
    f = figures.of_experiment(out)
    fair = figures.of_experiment(experiments.run(
        next(e for e in experiments.plan(["tita"], quick=True) if e.name == "incast7-tita"), tmp_path))
    assert f["label"] == "tita+srpt" and f["data_drops"] == 0
    assert f["fct_p50_ms"] < 0.7 * fair["fct_p50_ms"] and f["jain"] < 0.8 <= fair["jain"]


def test_a_scenario_built_experiment_with_pfc_pauses_and_one_without_does_not(tmp_path):
    lossy = experiments.Experiment("alltoall-2tier-dcqcn", "alltoall", experiments.Transport("dcqcn"), {"tiers": 2})
    lossless = experiments.Experiment("alltoall-2tier-dcqcn+pfc", "alltoall",
                                      experiments.Transport("dcqcn", pfc=True), {"tiers": 2})
    off = json.loads((experiments.run(lossy, tmp_path) / "counters.json").read_text())
    on = json.loads((experiments.run(lossless, tmp_path) / "counters.json").read_text())
    assert off["pause_frames"] == 0
    assert on["data_drops"] == 0 and on["pause_frames"] > 0 and on["finished"]


def test_incast_figures_come_from_the_files_and_match_a_testbed_sim_run_of_the_emulated_text(tmp_path):
    """The claims' simulated incast is the emulated scenario on the simulator: its figures, from its
    own files, are those of `testbed sim`'s run directory of that text read as an emulated run is."""
    from testbed.cli import main

    e = experiments.Experiment("incast4-dcqcn", "incast", experiments.Transport("dcqcn"), {"senders": 4})
    got = figures.of_experiment(experiments.run(e, tmp_path))
    (tmp_path / "i4.yaml").write_text(experiments.incast_text(4, "dcqcn"))
    assert main(["sim", str(tmp_path / "i4.yaml"), "--runs-dir", str(tmp_path / "runs")]) == 0
    (variant_dir,) = [p.parent for p in (tmp_path / "runs").rglob("scenario.resolved.yaml")]
    ref = figures.of_emulated(variant_dir)
    for key in ("goodput_over_payload_rate", "jain", "last_over_ideal", "fct_p50_ms", "fct_p99_ms",
                "completion_p50_ms", "completion_p99_ms"):
        assert got[key] == ref[key], key
    assert got["data_drops"] > 0 and got["delivered_verified"] == 4  # dcqcn overflows the 2-BDP buffer


def test_an_emulated_incasts_twin_runs_every_spread_seed_and_reports_their_range(tmp_path):
    e = experiments.Experiment("incast7-dcqcn", "incast", experiments.Transport("dcqcn"), {"senders": 7})
    directory = experiments.run(e, tmp_path)
    assert sorted(p.name for p in (directory / "seeds").iterdir()) == [f"seed{s}" for s in experiments.SPREAD_SEEDS]
    got = figures.of_experiment(directory)
    assert got["seeds"] == [1, *experiments.SPREAD_SEEDS]
    seeds = [figures.of_experiment(directory / "seeds" / f"seed{s}") for s in experiments.SPREAD_SEEDS]
    for key, (lo, hi) in got["seed_spread"].items():
        values = [got[key]] + [r[key] for r in seeds]
        assert (lo, hi) == (min(values), max(values)), key
    assert got["seed_spread"]["last_over_ideal"][0] < got["seed_spread"]["last_over_ideal"][1]  # RED's marks move it
    e4 = experiments.Experiment("incast4-dcqcn", "incast", experiments.Transport("dcqcn"), {"senders": 4})
    assert "seed_spread" not in figures.of_experiment(experiments.run(e4, tmp_path))  # not run emulated


def test_permutation_efficiency_and_its_bound(tmp_path):
    e = experiments.Experiment("permutation-2tier-none", "permutation", experiments.Transport("none"),
                               {"tiers": 2})
    directory = experiments.run(e, tmp_path)
    got = figures.of_experiment(directory)
    c = json.loads((directory / "counters.json").read_text())
    cells = segment.cell_count(experiments.PERMUTATION_BYTES + segment.TRAILER_LEN, c["cell_size"])
    bound = (c["hosts"] * experiments.PERMUTATION_BYTES * 8 / (cells * c["data_wire_bytes"] * 8 / c["link_rate_bps"]
             + c["base_rtt_s"])) / (c["hosts"] * c["link_rate_bps"] * c["cell_size"] / c["data_wire_bytes"])
    assert got["efficiency_bound"] == pytest.approx(bound, abs=1e-4)
    assert 0.5 < got["efficiency"] <= got["efficiency_bound"] * 1.001, got
    assert got["delivered_verified"] == c["hosts"]


def test_the_report_recomputes_to_the_same_results(tmp_path):
    for e in experiments.plan(["tita", "none"], quick=True)[:3]:
        experiments.run(e, tmp_path)
    report.write(tmp_path)
    first = (tmp_path / "results.json").read_text()
    text = (tmp_path / "report.md").read_text()
    report.write(tmp_path)
    assert (tmp_path / "results.json").read_text() == first
    assert "## Claims" in text and "| zero loss at high load |" in text


def test_a_damaged_reproduce_directory_is_one_line(tmp_path, capsys):
    from testbed.cli import main

    (e,) = experiments.plan(["tita", "none"], quick=True)[:1]
    experiments.run(e, tmp_path)
    (counters,) = list(tmp_path.rglob("counters.json"))[:1]
    counters.write_text('{"cut": ')
    assert main(["reproduce", "--report", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{counters}: damaged, not valid JSON" in err
    counters.unlink()
    assert main(["reproduce", "--report", str(tmp_path)]) == 1
    assert f"{counters}: missing" in capsys.readouterr().err


def test_bad_reproduce_arguments_get_one_line(tmp_path, capsys):
    from testbed.cli import main
    from testbed.host.cc import ALGORITHMS

    assert main(["reproduce", "--report", str(tmp_path)]) == 1
    assert main(["reproduce", "--cc", "bbr", "--runs-dir", str(tmp_path)]) == 1
    assert main(["reproduce", "--cc", "dcqcn", "--runs-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"testbed: {tmp_path}: not a reproduce directory (it has no sim/)",
                   f"testbed: --cc bbr: no such congestion control (have: {', '.join(ALGORITHMS)})",
                   "testbed: --cc: the claims are TiTa's; include tita"]
    assert not (tmp_path / "reproduce").exists()


def test_the_emulated_scenarios_parse_with_a_variant_per_cc():
    from testbed.claims import emulated
    from testbed.scenario import expand_variants, parse_scenario

    for n in experiments.INCAST_FABRICS:
        text = experiments.incast_text(n, "tita") + "variants: {}\n"
        scenario = parse_scenario(text, f"i{n}.yaml")
        (phase,) = [p for p in scenario.workload if p.kind == "incast"]
        assert len(phase.senders) == n
        variants = [v for t in emulated.with_pfc_variant(text, ["tita", "dcqcn"])
                    for v in expand_variants(parse_scenario(t, f"i{n}.yaml"))]
        assert [(v.name, v.scenario.fabric.pfc.enabled) for v in variants] == [
            ("cc=tita", False), ("cc=dcqcn", False), ("cc=dcqcn,pfc=true", True)]
        assert len(emulated.with_pfc_variant(text, ["tita"])) == 1  # no dcqcn, no lossless variant
        (srpt,) = expand_variants(parse_scenario(emulated.with_pfc_variant(text, ["tita"], srpt=True)[1], "s.yaml"))
        assert srpt.name == "cc=tita,credit_order=srpt" and srpt.scenario.transport.tita.credit_order == "srpt"
        texts = emulated.with_pfc_variant(text, ["tita"], srpt=True, overcommit=n - 1)
        (k,) = expand_variants(parse_scenario(texts[2], "k.yaml"))
        assert k.name == f"cc=tita,credit_order=srpt,overcommit={n - 1}" and k.scenario.transport.tita.overcommit == n - 1
    from testbed.scenario.workload import scenario_messages

    messages = scenario_messages(parse_scenario(experiments.scenario_text("permutation", 2, "tita"), "p.yaml"))
    assert len(messages) == 8 and {m.size_bytes for m in messages} == {experiments.PERMUTATION_BYTES}
    assert sorted(m.src for m in messages) == sorted(m.dst for m in messages)


def test_a_second_reproduce_is_refused_before_it_writes_anything(tmp_path, monkeypatch, capsys,
                                                                run_lock_held_elsewhere):
    from testbed.claims import emulated
    from testbed.cli import main

    monkeypatch.setattr(emulated, "unavailable", lambda: None)  # as on a machine that can emulate
    run_lock_held_elsewhere("testbed run scenarios/default.yaml")
    assert main(["reproduce", "--runs-dir", str(tmp_path / "runs")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "testbed run scenarios/default.yaml" in err[0], err
    assert not (tmp_path / "runs").exists()


def test_an_emulated_scenarios_later_runs_are_named_after_it():
    assert figures.scenario_run("claims-incast7") == ("claims-incast7", 1)
    assert figures.scenario_run("claims-incast7-run3") == ("claims-incast7", 3)
    assert figures.scenario_run("claims-permutation-3tier") == ("claims-permutation-3tier", 1)
    assert figures.scenario_run("claims-run-away") == ("claims-run-away", 1)


def test_tita_all_to_all_on_three_tiers_drops_no_credit(tmp_path):
    """Each credit flow starts its paths at a hash of its id, and a late credit is not a lost one:
    from one start for every flow, 250 first credits were dropped at the fat-tree's uplinks and
    the all-to-all reached 0.47 of the payload rate; now none of its 4080 is (seeds 2-5: at most
    2, at core ports near the end, where the last flows' credits meet), and it reaches 0.74
    (against a fluid bound of 0.89 that leaves credit and ACK frames out)."""
    e = experiments.Experiment("alltoall-3tier-tita", "alltoall", experiments.Transport("tita"), {"tiers": 3})
    directory = experiments.run(e, tmp_path)
    c = json.loads((directory / "counters.json").read_text())
    assert c["credit_drops"] == 0 and c["data_drops"] == 0, c
    assert figures.of_experiment(directory)["efficiency"] > 0.7


def test_a_slowed_emulated_incast_reads_on_the_scenarios_clock(tmp_path):
    """The emulated incast text run x2 slower (testbed sim --host-rate-mbps, as --fit slows a run), read as
    an emulated run is: its FCT, completion and link rate are the unslowed run's (the scenario's clock),
    its ratios unchanged, and its row says the slow-down and the rate it ran at."""
    from testbed.cli import main

    (tmp_path / "i4.yaml").write_text(experiments.incast_text(4, "dcqcn"))
    rows = {}
    for name, extra in (("nominal", []), ("slowed", ["--host-rate-mbps", "2.5"])):
        assert main(["sim", str(tmp_path / "i4.yaml"), "--runs-dir", str(tmp_path / name), *extra]) == 0
        (variant_dir,) = [p.parent for p in (tmp_path / name).rglob("scenario.resolved.yaml")]
        rows[name] = figures.of_emulated(variant_dir)
    nominal, slowed = rows["nominal"], rows["slowed"]
    assert nominal["link_rate_mbps"] == 5 and slowed["link_rate_mbps"] == 5 and slowed["run_link_rate_mbps"] == 2.5
    assert slowed["time_stretch"] == 2.0 and nominal["time_stretch"] == 1.0
    for key in ("fct_p50_ms", "fct_p99_ms", "completion_p50_ms", "completion_p99_ms", "base_rtt_ms", "goodput_mbps",
                "last_s"):
        assert slowed[key] == pytest.approx(nominal[key], rel=0.01), key
    for key in ("goodput_over_payload_rate", "last_over_ideal", "fct_p99_rtts"):
        assert slowed[key] == pytest.approx(nominal[key], rel=0.01), key
    assert figures.emulated_at(nominal) == "emulated at 5 Mbit/s"
    assert figures.emulated_at(slowed).startswith("emulated x2 slower (at 2.5 Mbit/s")
