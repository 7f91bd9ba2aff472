"""`testbed diagnose` on small simulated runs (`testbed sim`'s run directories, faults from the
scenario's own `faults`): a healthy run has no culprit; a cut, lossy, slowed or delayed cable, a
stalled or slowed host and a restarted switch are each named first with their symptom and start
(among them misses of the held-out corpus draws); bad input is one line each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.diagnose.core import DiagnoseError, ceiling, departures, diagnose_run
from testbed.errors import TestbedError
from tests.unit.diagnose.corpus import scenario_data, write_run


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    return write_run(scenario_data("leafspine-permutation", "leafspine", "permutation"),
                     tmp_path_factory.mktemp("healthy"))


def test_healthy_run_has_no_culprit(healthy):
    result = diagnose_run(healthy.parent)
    (diagnosis,) = result.values()
    assert diagnosis["healthy"] and diagnosis["culprits"] == []
    written = json.loads((healthy / "diagnosis.json").read_text())
    assert written["healthy"] is True and written["wall_s"] < 60
    assert (healthy / "diagnosis.md").read_text().splitlines()[2] == "healthy: no culprit"
    assert (healthy / "diagnosis.png").stat().st_size > 0


def test_a_run_of_the_program_is_held_against_a_twin_of_the_program(tmp_path):
    """A run whose switches ran the scenario's P4 program (any emulated run, or `testbed sim` on the
    program network) gets a twin on the program network; a healthy one matches it: no culprit."""
    run = write_run(scenario_data("leafspine-permutation", "leafspine", "permutation"), tmp_path / "run", "program")
    (diagnosis,) = diagnose_run(run.parent).values()
    assert diagnosis["twin_switches"] == "program"
    assert diagnosis["healthy"] and diagnosis["culprits"] == []


def test_a_run_of_the_model_is_held_against_a_twin_of_the_model(healthy):
    (diagnosis,) = diagnose_run(healthy.parent).values()
    assert diagnosis["twin_switches"] == "model"


FAULT_CASES = [
    ("leafspine", "permutation", [{"at_s": 1.4, "kind": "link_down", "target": "h4-leaf2"},
                                  {"at_s": 3.0, "kind": "link_up", "target": "h4-leaf2"}], ("link", "h4-leaf2", "down")),
    ("leafspine", "incast", [{"at_s": 1.7, "kind": "link_degrade", "target": "leaf1-spine2", "duration_s": 2,
                              "loss": 0.2}], ("link", "leaf1-spine2", "lossy")),
    ("leafspine", "incast", [{"at_s": 2.2, "kind": "agent_stall", "target": "h1", "duration_s": 2}],
     ("host", "h1", "stalled")),
    ("leafspine", "incast", [{"at_s": 1.3, "kind": "switch_restart", "target": "leaf1", "duration_s": 2}],
     ("switch", "leaf1", "restarted")),
    # the incast receiver's leaf loses one of its two spines: the other spine then idles because the
    # routes left it, it did not stop (held-out seed 11)
    ("leafspine", "incast", [{"at_s": 1.8, "kind": "link_down", "target": "leaf1-spine1"},
                             {"at_s": 4.5, "kind": "link_up", "target": "leaf1-spine1"}],
     ("link", "leaf1-spine1", "down")),
    # a slowed fabric cable holds the ring's NICs back (bursty, not flat at a ceiling) (seed 23)
    ("leafspine", "allreduce", [{"at_s": 1.3, "kind": "link_degrade", "target": "leaf4-spine2", "duration_s": 1.8,
                                 "rate_mbps": 0.5}], ("link", "leaf4-spine2", "slow")),
    # a 20 ms delay on a fabric cable carrying a sixth of its rate: 2 to 6 kB held on its wire (seed 101)
    ("fattree", "incast", [{"at_s": 2.4, "kind": "link_degrade", "target": "agg1_2-core4", "duration_s": 2.8,
                            "extra_delay_us": 20000}], ("link", "agg1_2-core4", "delayed")),
    # an incast sender's NIC cut to 0.5 Mbit/s, 40% of its twin's share: flat at the cut (seed 11)
    ("fattree", "incast", [{"at_s": 2.1, "kind": "host_slow", "target": "h6", "duration_s": 1.8, "rate_mbps": 0.5,
                            "delay_ms": 100}], ("host", "h6", "slow")),
]


@pytest.mark.parametrize("topology,workload,faults,culprit", FAULT_CASES)
def test_the_injected_fault_is_the_first_culprit(tmp_path, topology, workload, faults, culprit):
    _first_culprit_is(tmp_path, topology, workload, faults, culprit, "model")


@pytest.mark.parametrize("topology,workload,faults,culprit", FAULT_CASES)
def test_the_injected_fault_is_the_first_culprit_on_the_program(tmp_path, topology, workload, faults, culprit):
    """The same faults on runs of the scenario's P4 program, held against the program twin: the
    counters are an emulated run's (a lossy cable's loss drawn before the tx counter, a host's
    received bytes counted as its agent reads them)."""
    _first_culprit_is(tmp_path, topology, workload, faults, culprit, "program")


def _first_culprit_is(tmp_path, topology, workload, faults, culprit, switches: str) -> None:
    data = scenario_data(f"{topology}-{workload}", topology, workload)
    run = write_run({**data, "faults": faults}, tmp_path / "run", switches)
    (diagnosis,) = diagnose_run(run).values()
    assert diagnosis["twin_switches"] == switches
    first = diagnosis["culprits"][0]
    assert (first["kind"], first["target"], first["symptom"]) == culprit, diagnosis["culprits"][:3]
    assert abs(first["start_s"] - faults[0]["at_s"]) <= 1.0
    assert not diagnosis["healthy"]


def test_diagnose_never_reads_the_faults(tmp_path):
    """The run's scenario copy names a fault and faults.jsonl records one; the twin is the scenario
    without it and neither is read, so the verdict of a healthy run is still healthy."""
    run = write_run(scenario_data("leafspine-permutation", "leafspine", "permutation"), tmp_path / "run")
    copy = run.parent / "scenario.yaml"
    copy.write_text(copy.read_text() + "faults:\n- {kind: link_degrade, target: h1-leaf1, at_s: 1, duration_s: 2, "
                    "rate_mbps: 0.5}\n")
    (run / "faults.jsonl").write_text(json.dumps({"at_s": 1, "kind": "link_degrade", "target": "h1-leaf1"}) + "\n")
    (diagnosis,) = diagnose_run(run).values()
    assert diagnosis["healthy"]


def test_departure_window_starts_at_onset():
    twin = [10.0] * 50
    run = [10.0] * 10 + [0.0] * 20 + [10.0] * 20
    ((start, _, peak, crossed),) = departures(run, twin)
    assert start == 10 and crossed > start and peak > 0.15
    assert departures(twin, twin) == []


def test_a_ceiling_is_flat_within_two_frames_above_the_frame_granularity():
    frame = 1090
    twin = [30000.0] * 10
    cut = [6540.0, 5450.0, 6540.0, 6540.0, 5450.0] * 2  # a 0.5 Mbit/s wire: 5 or 6 frames a bin
    assert ceiling(cut, twin, frame) == (0, 6540.0, 30000.0)
    held = [22300.0, 22200.0, 23300.0, 25600.0, 26600.0] * 2  # a window-held NIC: bursts 4 frames apart
    assert ceiling(held, twin, frame) is None
    acks = [2180.0, 0.0, 0.0, 0.0, 0.0] * 2  # a tail, then nothing: below the granularity
    assert ceiling(acks, twin, frame) is None
    assert ceiling([4900.0] * 10, [7000.0] * 10, frame) is None  # not below the twin by more than the granularity
    assert ceiling([4900.0] * 10, [7100.0] * 10, frame) == (0, 4900.0, 7100.0)
    assert ceiling(cut, twin, frame, where=[False] + [True] * 9) == (1, 6540.0, 30000.0)


def test_a_cable_holding_more_than_its_wire_can_is_delayed():
    from types import SimpleNamespace

    from testbed.diagnose.core import held_late, wire_holds

    params = SimpleNamespace(rate_mbps=5, delay_us=1000)
    scenario = SimpleNamespace(links=SimpleNamespace(for_tier=lambda tier: params, host=params))
    holds = wire_holds(scenario, 1090)
    assert holds["fabric"] == 2.5 * 1090  # 1 ms of propagation is under one 1.74 ms frame: 2 frames, plus half
    # a host's uplink also holds its pacer's queue (tbf: 50 ms at 5 Mbit/s and a 16 KiB burst,
    # 47,634 B: 44 whole frames) and the frame it is dequeuing
    assert holds["host_up"] == holds["host"] + 45 * 1090
    hold = {"c:a>b": holds["fabric"], "c:b>a": holds["fabric"]}
    sent = {"c:a>b": [10900.0] * 10, "c:b>a": [100.0] * 10}
    on_time = {"c:a>b": [10900.0] * 10, "c:b>a": [100.0] * 10}
    assert held_late(sent, on_time, ["c:a>b", "c:b>a"], hold) is None
    late = {"c:a>b": [10900.0] * 3 + [5450.0] + [10900.0] * 5 + [16350.0], "c:b>a": [100.0] * 10}
    assert held_late(sent, late, ["c:a>b", "c:b>a"], hold) == (3, 8, "c:a>b", 5450.0)
    lost = {"c:a>b": [10900.0] * 3 + [5450.0] + [10900.0] * 6, "c:b>a": [100.0] * 10}
    assert held_late(sent, lost, ["c:a>b", "c:b>a"], hold) is None  # never arrived: not late, lost
    queued = {"c:a>b": holds["host_up"], "c:b>a": holds["fabric"]}  # a->b a host's uplink
    assert held_late(sent, late, ["c:a>b", "c:b>a"], queued) is None  # 5.4 kB: inside its queue


def test_a_hosts_uplink_holding_its_pacers_queue_is_neither_late_nor_lossy():
    """An emulated host's NIC counts a frame when its agent hands it to the kernel; its pacer (tbf)
    queues up to 50 ms of them before the wire. A burst of 40 frames into the host's uplink that
    drains over the next bins is on time; the same burst into the ToR's downlink is delayed, and
    more frames than the queue holds that never arrive are lost."""
    from testbed.diagnose.core import wire_culprits
    from testbed.scenario import parse_scenario

    scenario = parse_scenario("name: t\nduration_s: 2\ntopology: {kind: leaf_spine, leaves: 2, spines: 1, "
                              "hosts_per_leaf: 1}\nlinks: {rate_mbps: 5, delay_us: 1000}\n"
                              "workload: [{kind: pingall}]\n", "t.yaml")
    topo = scenario.topo
    link = next(l for l in topo.links if "h1" in (l.a, l.b))
    tor = link.b if link.a == "h1" else link.a
    up, down = f"{link.name}:h1>{tor}", f"{link.name}:{tor}>h1"
    from testbed.diagnose.core import wire_holds

    holds = wire_holds(scenario, 1090)
    burst = [40 * 1090.0] + [0.0] * 9
    drained = [10 * 1090.0] * 4 + [0.0] * 6
    twin = {up: drained, down: drained}

    def named(sent: dict, arrived: dict):
        return [(c.target, c.symptom) for c in wire_culprits((sent, arrived, {}), twin, topo, holds)
                if c.kind == "link"]

    assert named({up: burst, down: [0.0] * 10}, {up: drained, down: [0.0] * 10}) == []
    assert named({up: [0.0] * 10, down: burst}, {up: [0.0] * 10, down: drained}) == [(link.name, "delayed")]
    more = [40 * 1090.0, 40 * 1090.0, 20 * 1090.0] + [0.0] * 7  # 100 frames, 15 of them arrive
    assert named({up: more, down: [0.0] * 10}, {up: [5 * 1090.0] * 3 + [0.0] * 7, down: [0.0] * 10}) == [
        (link.name, "lossy")]


def test_corpus_seeds_from_the_environment():
    from tests.unit.diagnose.corpus import corpus_seeds

    assert corpus_seeds(None) == [43] and corpus_seeds(" ") == [43]
    assert corpus_seeds("7, 11,43") == [7, 11, 43]
    with pytest.raises(ValueError, match="TESTBED_DIAGNOSE_SEEDS='7,x'"):
        corpus_seeds("7,x")


def test_not_a_run_directory(tmp_path):
    with pytest.raises(DiagnoseError, match="not a run directory"):
        diagnose_run(tmp_path)
    with pytest.raises(DiagnoseError, match="not a directory"):
        diagnose_run(tmp_path / "nothing")


def test_a_run_killed_half_way(healthy, tmp_path):
    killed = tmp_path / "killed"
    shutil.copytree(healthy.parent, killed)
    (killed / healthy.name / "result.json").unlink()
    with pytest.raises(DiagnoseError, match="killed before it finished"):
        diagnose_run(killed)
    (killed / healthy.name / "result.json").write_text('{"variant": "ba')
    with pytest.raises(TestbedError, match="damaged, not valid JSON"):
        diagnose_run(killed)


def test_a_run_with_no_telemetry(healthy, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(healthy.parent, bare)
    shutil.rmtree(bare / healthy.name / "records")
    (bare / healthy.name / "telemetry.jsonl").unlink()
    with pytest.raises(DiagnoseError, match="no telemetry"):
        diagnose_run(bare)


def test_command_line_is_one_line_on_bad_input(tmp_path):
    done = subprocess.run([sys.executable, "-m", "testbed.cli", "diagnose", str(tmp_path)],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[3])
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_slowed_runs_culprits_are_on_the_scenarios_clock(tmp_path):
    """A run slowed x4 (testbed sim --host-rate-mbps, as --fit slows one) with a cable degraded at 1.4 s of
    the scenario file: its culprit starts near 1.4 s, not near the run's 5.6 s, in diagnosis.json, the
    printed verdict and diagnosis.md, which says the run's slow-down once."""
    import yaml

    from testbed import cli
    from tests.unit.diagnose.corpus import scenario_text

    data = yaml.safe_load(scenario_text("slowed", "leafspine", "permutation"))
    data["faults"] = [{"kind": "link_degrade", "target": "h4-leaf2", "at_s": 1.4, "duration_s": 2.0,
                       "rate_mbps": 0.005}]
    path = tmp_path / "slowed.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert cli.main(["sim", str(path), "--host-rate-mbps", "1.25", "--runs-dir", str(tmp_path / "runs")]) == 0
    (run,) = (tmp_path / "runs" / "slowed").iterdir()
    assert yaml.safe_load((run / "base" / "scenario.resolved.yaml").read_text())["time_stretch"] == 4.0
    (diagnosis,) = diagnose_run(run).values()
    first = diagnosis["culprits"][0]
    assert (first["kind"], first["target"]) == ("link", "h4-leaf2")
    assert abs(first["start_s"] - 1.4) <= 0.2 and first["end_s"] < 3.4, first
    md = (run / "base" / "diagnosis.md").read_text()
    assert f"from {first['start_s']:.1f} s to {first['end_s']:.1f} s" in md.splitlines()[2]
    assert md.count("the run ran x4 slower") == 1 and diagnosis["run_time_stretch"] == 4.0


def test_evidence_is_given_on_the_scenarios_clock():
    from testbed.diagnose.core import on_scenario_clock

    text = "silent from 5.6 s to 8.0 s; 2 stretch(es) of 0.4 s; flat at 0.50 Mbit/s where it reached 1.25 Mbit/s; 2.7 kB"
    assert on_scenario_clock(text, 4.0) == ("silent from 1.40 s to 2.00 s; 2 stretch(es) of 0.10 s; flat at 2.00 "
                                            "Mbit/s where it reached 5.00 Mbit/s; 2.7 kB")
    assert on_scenario_clock(text, 1.0) == text



def test_a_slowed_runs_evidence_is_on_the_scenarios_clock(tmp_path, monkeypatch):
    """The times in a culprit's evidence (diagnosis.json, diagnosis.md) are divided by the run's
    stretch, as its start and end are. A slowed simulated run samples its switches every 400 ms of
    its clock, too coarse for the counter rules whose evidence gives times, so the stretch is laid
    on an unslowed run (h4's only cable down from 1.4 s to 3.0 s): every time comes out over 4."""
    import re

    import testbed.diagnose.core as core

    data = scenario_data("leafspine-permutation", "leafspine", "permutation")
    data["faults"] = [{"at_s": 1.4, "kind": "link_down", "target": "h4-leaf2"},
                      {"at_s": 3.0, "kind": "link_up", "target": "h4-leaf2"}]
    run = write_run(data, tmp_path / "run")
    (plain,) = diagnose_run(run).values()
    twin_scenario = core.twin_scenario
    monkeypatch.setattr(core, "twin_scenario", lambda d: (twin_scenario(d)[0], 4.0))
    (slowed,) = diagnose_run(run).values()
    before, after = plain["culprits"][0], slowed["culprits"][0]
    assert (after["kind"], after["target"], after["symptom"]) == ("link", "h4-leaf2", "down")
    times = [[float(t) for t in re.findall(r"(\d+(?:\.\d+)?) s\b", c["evidence"])] for c in (before, after)]
    assert times[0] and [round(t / 4, 2) for t in times[0]] == times[1], (before["evidence"], after["evidence"])
    assert f"- link h4-leaf2: {after['evidence']}" in (run / "diagnosis.md").read_text()


def test_bytes_held_toward_a_host_that_sent_nothing_are_the_host_not_a_delayed_cable():
    """A host that reads nothing (its agent stopped, and an agent counts what it reads) leaves what
    its ToR sends on the cable until it resumes, as a delay would. When its own NIC sent nothing
    meanwhile while its twin's sent, the cable is not named delayed: the host's rules name the host.
    A cable that holds the same while its host keeps sending is delayed."""
    from testbed.diagnose.core import wire_culprits
    from testbed.scenario import parse_scenario

    topo = parse_scenario("name: t\nduration_s: 2\ntopology: {kind: leaf_spine, leaves: 2, spines: 1, "
                          "hosts_per_leaf: 1}\nworkload: [{kind: pingall}]\n", "t.yaml").topo
    link = next(l for l in topo.links if "h1" in (l.a, l.b))
    tor = link.b if link.a == "h1" else link.a
    down, up = f"{link.name}:{tor}>h1", f"{link.name}:h1>{tor}"
    nbins = 10
    # a trickle toward the host held for three bins (below what counts as lost), then all of it
    sent = {down: [10900.0] * 3 + [2000.0] * 3 + [10900.0] * 4}
    arrived = {down: [10900.0] * 3 + [0.0] * 3 + [10900.0 + 6000.0] + [10900.0] * 3}
    twin = {down: [10900.0] * nbins, up: [2000.0] * nbins}
    holds = {"host": 1500.0, "fabric": 1500.0, "host_up": 1500.0}  # no pacer queue

    def culprits(host_sends: list[float]):
        wire = ({**sent, up: host_sends}, {**arrived, up: host_sends}, {})
        return [(c.kind, c.target, c.symptom) for c in wire_culprits(wire, twin, topo, holds)]

    assert culprits([2000.0] * 3 + [0.0] * 3 + [2000.0] * 4) == []
    assert culprits([2000.0] * nbins) == [("link", link.name, "delayed")]


def test_a_hosts_late_messages_name_it_only_when_its_cable_departs_too():
    """A host's rx and tx series count whole messages when each ends: a message that ends three
    bins late moves them by all its bytes. While both directions of the host's cable carried what
    the twin's did, the late end is the transport's timing, not the host; once its cable departs
    too, the host is named. Without cable series the message series counts alone."""
    from testbed.diagnose.core import localise
    from testbed.scenario import parse_scenario

    topo = parse_scenario("name: t\nduration_s: 2\ntopology: {kind: leaf_spine, leaves: 2, spines: 1, "
                          "hosts_per_leaf: 1}\nworkload: [{kind: pingall}]\n", "t.yaml").topo
    link = next(l for l in topo.links if "h1" in (l.a, l.b))
    tor = link.b if link.a == "h1" else link.a
    up, down = f"{link.name}:h1>{tor}", f"{link.name}:{tor}>h1"
    nbins = 10
    twin = {"h1:tx": [0.0] * 4 + [1e6] + [0.0] * 5, up: [1e5] * 5 + [0.0] * 5, down: [1e4] * 5 + [0.0] * 5}
    late = {"h1:tx": [0.0] * 8 + [1e6, 0.0]}  # the same message, acknowledged four bins later

    def named(cable_up: list[float], with_cables: bool = True):
        run = {**late, up: cable_up, down: twin[down]} if with_cables else dict(late)
        seen = twin if with_cables else {"h1:tx": twin["h1:tx"]}
        return [(c.kind, c.target) for c in localise(run, seen, topo)]

    assert named(twin[up]) == []
    assert named([1e5] * 2 + [0.0] * 3 + [1e5] * 3 + [0.0] * 2) == [("host", "h1")]
    assert named(twin[up], with_cables=False) == [("host", "h1")]


def test_a_departure_within_the_healthy_scenarios_spread_is_noise():
    """Rule 9's departures count only above how far the healthy scenario departs from itself over
    other seeds (twin_spread): a cable behind its twin by 30% is named where the spread is 20% and
    not where it is 40%."""
    from testbed.diagnose.core import localise
    from testbed.scenario import parse_scenario

    topo = parse_scenario("name: t\nduration_s: 2\ntopology: {kind: leaf_spine, leaves: 2, spines: 1, "
                          "hosts_per_leaf: 1}\nworkload: [{kind: pingall}]\n", "t.yaml").topo
    link = next(l for l in topo.links if "h1" in (l.a, l.b))
    keys = [f"{link.name}:{link.a}>{link.b}", f"{link.name}:{link.b}>{link.a}"]
    twin = {k: [1e5] * 10 for k in keys}
    run = {k: [1e5] * 2 + [0.0] * 3 + [1e5] * 5 for k in keys}  # 30% of the total behind, then level

    def named(spread):
        return [(c.kind, c.target, c.score) for c in localise(run, twin, topo, spread=spread)]

    assert named({"host": 0.0, "link": 0.2}) == [("link", link.name, 0.3)]
    assert named({"host": 0.0, "link": 0.4}) == []
    assert named(None) == named({"host": 0.0, "link": 0.0}) == [("link", link.name, 0.3)]


def test_dcqcn_spreads_over_the_switches_seeds_and_tita_does_not():
    """An incast under DCQCN turns on the switches' RED draws: other seeds of the switches move its
    hosts' and cables' bytes, and rule 9 then asks more of a departure. tita on spraying delivers
    the same bytes per bin whatever the seed: no spread."""
    from testbed.diagnose.core import _bins, simulate_twin, twin_spread
    from testbed.scenario import parse_scenario

    def spread(cc: str, workload: str) -> dict[str, float]:
        data = scenario_data("spread", "leafspine", workload)
        data["transport"]["cc"] = cc
        scenario = parse_scenario(json.dumps(data), "t.yaml")
        nbins = _bins(scenario.duration_s)
        hosts, cables = simulate_twin(scenario, nbins, True, "program")
        return twin_spread(scenario, nbins, True, "program", {**hosts, **cables})

    assert spread("tita", "permutation") == {"host": 0.0, "link": 0.0}
    reactive = spread("dcqcn", "incast")
    assert reactive["host"] > 0 and reactive["link"] > 0, reactive


def test_sim_diagnose_names_a_dual_homed_hosts_cut_cable_down_on_the_program(tmp_path, capsys):
    """failover.yaml cuts h1-leaf1 at 2 s; h1 is dual-homed, so its traffic moves to its other
    cable, and the cut one carries nothing either way where its twin's carried: `down`, first,
    under both transports. `testbed sim --diagnose` runs the variants on the program, as their
    twin does."""
    from testbed.cli import main

    root = Path(__file__).resolve().parents[3]
    assert main(["sim", str(root / "scenarios" / "failover.yaml"), "--runs-dir", str(tmp_path), "--diagnose"]) == 0
    capsys.readouterr()
    verdicts = sorted(tmp_path.rglob("diagnosis.json"))
    assert len(verdicts) == 2
    for path in verdicts:
        first = json.loads(path.read_text())["culprits"][0]
        assert (first["kind"], first["target"], first["symptom"]) == ("link", "h1-leaf1", "down"), path
        assert abs(first["start_s"] - 2.0) < 0.15, first
        assert json.loads((path.parent / "result.json").read_text())["switches"] == "program"
