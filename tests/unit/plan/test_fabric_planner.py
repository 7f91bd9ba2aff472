"""`testbed plan`: the Clos arithmetic against the textbook counts and published fabrics.

Sources of the published figures:
* k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k^3/4 hosts, 5k^2/4 switches; a two-tier
  folded Clos of k-port switches: k^2/2 hosts.
* 128-port switches (25.6 Tbit/s as 128 x 200G) with dual-port NICs stop at 4,096 GPUs in
  two tiers, which is why larger clusters need a third tier.
* Alibaba HPN (SIGCOMM 2024): 51.2 Tbit/s switches, 8 GPUs a host each with a 2 x 200G NIC
  whose ports go to two ToRs, two planes; a segment of 1,024 GPUs, a pod of about 15K GPUs
  (15 segments) with the aggregation tier keeping 1/16 of its ports for the core.
* NVIDIA DGX SuperPOD (DGX H100 reference architecture): a scalable unit of 32 servers of
  8 GPUs, rail-optimised over 8 rails, one 64-port 400G leaf switch a rail (32 ports down,
  32 up); four units take 32 leaves and 16 spines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.plan.clos import max_gpus, plan, split_ports
from testbed.plan.hardware import PlanError, make_hardware
from testbed.scenario.load import load_scenario


def hosts_hw(k: int, **kw):
    return make_hardware(switch_ports=k, port_gbps=100, gpus_per_server=1, **kw)


@pytest.mark.parametrize("k", [4, 8, 16, 48, 128])
def test_textbook_host_and_switch_counts(k):
    hw = hosts_hw(k)
    limits = max_gpus(hw)
    assert limits == {"1": k, "2": k * k // 2, "3": k ** 3 // 4}
    full = plan(hw, k ** 3 // 4)
    assert full.tiers == 3
    assert full.switches == 5 * k * k // 4
    assert [t.switches for t in full.tier_list] == [k * k // 2, k * k // 2, k * k // 4]
    two = plan(hw, k * k // 2)
    assert two.tiers == 2 and two.switches == k + k // 2      # 1.5k switches


def test_128_port_switches_with_dual_port_nics_stop_at_4k_gpus_in_two_tiers():
    hw = make_hardware(switch_tbps=25.6, switch_ports=None, port_gbps=200, ports_per_gpu=2)
    assert hw.switch_ports == 128
    assert max_gpus(hw)["2"] == 4096
    assert plan(hw, 4096).tiers == 2
    assert plan(hw, 4096 + 8).tiers == 3


def test_alibaba_hpn_segment_and_pod():
    hw = make_hardware(switch_tbps=51.2, switch_ports=None, port_gbps=400, nic_port_gbps=200, ports_per_gpu=2,
                       gpus_per_server=8, rail_optimised=True, planes=2, agg_oversubscription=15)
    p = plan(hw, 15360)
    assert p.segment_gpus == 1024
    assert p.pod_gpus == 15360
    assert p.tier_list[0].switches == 240            # 15 segments x 16 ToRs
    pods = plan(hw, 2 * 15360)
    assert pods.tiers == 3 and pods.pods == 2


def test_a_smaller_fabric_keeps_uplinks_and_takes_the_fewest_top_switches():
    hw = hosts_hw(8)
    p = plan(hw, 12)                                 # three ToRs of 4 hosts, 4 uplinks each
    assert p.tiers == 2
    tors, spines = p.tier_list
    assert tors.switches == 3 and spines.switches == 2 and spines.links_down == 12


def test_oversubscription_and_bisection():
    hw = hosts_hw(16, tor_oversubscription=3)
    p = plan(hw, 64)
    assert p.oversubscription == {"tor": 3.0}
    assert p.bisection_gbps == pytest.approx(64 * 100 / 2 / 3)


def test_transceivers_count_both_ends_and_breakout():
    hw = make_hardware(switch_ports=8, port_gbps=400, nic_port_gbps=200, gpus_per_server=1)
    p = plan(hw, 8)                                   # one ToR: 4 down ports x 2 = 8 host ports
    tor = p.tier_list[0]
    assert tor.switches == 1 and tor.optics_down == 8 + 4


@pytest.mark.parametrize("kwargs, gpus, words", [
    (dict(switch_ports=64, port_gbps=400), 10_000_000, "do not fit in 3 tiers"),
    (dict(switch_ports=100, switch_tbps=51.2, port_gbps=400), 8, "disagrees"),
    (dict(switch_ports=64, port_gbps=200, nic_port_gbps=400), 8, "cannot be served"),
    (dict(switch_ports=64, port_gbps=400, nic_port_gbps=300), 8, "does not break out"),
    (dict(switch_ports=64, port_gbps=400, ports_per_gpu=1, planes=2), 8, "cannot be dealt"),
    (dict(switch_ports=64, port_gbps=400), 12, "whole number"),
    (dict(switch_ports=64, port_gbps=400, tor_oversubscription=0.5), 8, "at least 1"),
])
def test_bad_hardware_is_one_line(kwargs, gpus, words):
    with pytest.raises(PlanError, match=words) as info:
        plan(make_hardware(**kwargs), gpus)
    assert "\n" not in str(info.value)


def test_cli_json_has_tiers_and_max_gpus(capsys):
    assert main(["plan", "--gpus", "4096", "--switch-ports", "128", "--port-gbps", "200",
                 "--ports-per-gpu", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tiers"] == 2
    assert data["max_gpus"] == {"1": 0, "2": 4096, "3": 262144}      # dual-homed: never one switch


def test_cli_bad_input_is_one_line(capsys):
    assert main(["plan", "--gpus", "9000000", "--switch-ports", "64", "--port-gbps", "400"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("testbed: ") and "\n" not in err


def test_scenario_for_100k_gpus_validates_and_simulates(tmp_path, capsys):
    out = tmp_path / "plan.yaml"
    assert main(["plan", "--gpus", "100000", "--switch-tbps", "51.2", "--port-gbps", "400",
                 "--scenario", str(out)]) == 0
    scenario = load_scenario(str(out))
    assert scenario.topology.kind == "fat_tree"
    capsys.readouterr()
    assert main(["sim", str(out), "--runs-dir", str(tmp_path / "runs")]) == 0
    assert "finished" in capsys.readouterr().out
    summary = next((tmp_path / "runs").rglob("summary.json"))
    assert summary.is_file()


def test_scenario_keeps_dual_homing_rails_and_oversubscription(tmp_path):
    out = tmp_path / "plan.yaml"
    assert main(["plan", "--gpus", "4096", "--switch-ports", "128", "--port-gbps", "200", "--ports-per-gpu", "2",
                 "--rail-optimised", "--tor-oversubscription", "3", "--scenario", str(out)]) == 0
    scenario = load_scenario(str(out))
    spec = scenario.topology
    assert spec.kind == "leaf_spine" and spec.dual_homed and spec.rail_optimised
    assert scenario.derived.oversubscription == pytest.approx(3.0)


def _rail_hw(k, gpus_per_server=8, **kw):
    return make_hardware(switch_ports=k, port_gbps=400, gpus_per_server=gpus_per_server, rail_optimised=True, **kw)


@pytest.mark.parametrize("k, gpus_per_server, gpus", [(128, 8, 256), (128, 128, 4096), (64, 8, 256),
                                                      (64, 8, 1024), (128, 8, 8192), (16, 4, 96)])
def test_rails_get_a_tor_each_and_a_segment_no_larger_than_the_fabric(k, gpus_per_server, gpus):
    hw = _rail_hw(k, gpus_per_server)
    p = plan(hw, gpus)
    assert p.tiers >= 2
    servers = gpus // gpus_per_server
    per_tor = split_ports(k, 1).down
    tors = p.tier_list[0].switches
    assert tors == gpus_per_server * -(-servers // per_tor)            # a rail's servers fill its own ToRs
    assert tors >= gpus_per_server
    assert p.segment_gpus == min(servers, per_tor) * gpus_per_server <= gpus


def test_the_issue_rail_cases():
    small = plan(_rail_hw(128), 256)
    assert small.tier_list[0].switches == 8 and small.segment_gpus == 256
    wide = plan(_rail_hw(128, 128), 4096)
    assert wide.tier_list[0].switches == 128 and wide.segment_gpus == 4096


def test_dgx_superpod_scalable_unit():
    unit = plan(_rail_hw(64), 256)                  # 32 servers, 8 rails
    assert unit.tiers == 2 and unit.segment_gpus == 256
    assert [t.switches for t in unit.tier_list] == [8, 4]
    four = plan(_rail_hw(64), 1024)                 # four units
    assert [t.switches for t in four.tier_list] == [32, 16] and four.segment_gpus == 256


def test_alibaba_hpn_rails_have_their_own_tors_in_each_plane():
    hw = make_hardware(switch_tbps=51.2, switch_ports=None, port_gbps=400, nic_port_gbps=200, ports_per_gpu=2,
                       gpus_per_server=8, rail_optimised=True, planes=2, agg_oversubscription=15)
    segment = plan(hw, 1024)
    assert segment.segment_gpus == 1024 and segment.tier_list[0].switches == 16     # 8 rails x 2 planes
    assert plan(hw, 512).segment_gpus == 512


@pytest.mark.parametrize("gpus, k", [(8, 128), (64, 8), (4096, 128)])
def test_each_port_of_a_dual_port_nic_reaches_its_own_tor(gpus, k):
    hw = make_hardware(switch_ports=k, port_gbps=400, ports_per_gpu=2)
    p = plan(hw, gpus)
    assert p.tiers >= 2 and max_gpus(hw)["1"] == 0
    per_tor = split_ports(k, 1).down
    assert p.tier_list[0].switches == 2 * -(-gpus // per_tor)


def test_two_planes_of_one_switch_each():
    p = plan(make_hardware(switch_ports=128, port_gbps=400, ports_per_gpu=2, planes=2), 8)
    assert p.tiers == 1 and p.switches == 2


@pytest.mark.parametrize("ports", [65, 1000])
def test_impossible_port_counts_are_one_line(ports, capsys):
    assert main(["plan", "--gpus", "8", "--switch-ports", "128", "--port-gbps", "400",
                 "--ports-per-gpu", str(ports)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("testbed: --ports-per-gpu") and "\n" not in err


def _meet_rate(a: list[int], b: list[int]) -> int:
    """Links two ToRs can use between them over the spines: sum of the smaller counts."""
    return sum(min(x, y) for x, y in zip(a, b))


def test_top_tier_is_the_fewest_divisor_and_an_uneven_spread_would_block():
    p = plan(make_hardware(switch_ports=128, port_gbps=400), 4160)
    tors, spines = (t.switches for t in p.tier_list)
    assert tors == 65 and spines == 64
    uplinks = 64
    assert uplinks % spines == 0 and -(-tors * uplinks // 128) == 33
    # 33 spines would hold the links, but with 64 uplinks over 33 spines a ToR doubles 31 of them:
    even = [uplinks // spines] * spines
    assert _meet_rate(even, even) == uplinks
    a = [2] * 31 + [1, 1]
    b = [1, 1] + [2] * 31
    assert sum(a) == sum(b) == uplinks and _meet_rate(a, b) == 62 < uplinks


DOC = Path(__file__).resolve().parents[3] / "docs" / "planning.md"


def _worked_examples():
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| `--gpus ")]
    out = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        out.append((cells[0].strip("`").split(), *cells[1:6]))
    return out


def test_the_doc_has_worked_examples():
    assert len(_worked_examples()) >= 10


@pytest.mark.parametrize("flags, tiers, tors, middle, cores, segment", _worked_examples())
def test_worked_examples_agree_with_testbed_plan(flags, tiers, tors, middle, cores, segment, capsys):
    assert main(["plan", *flags, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    per_tier = [t["switches"] for t in data["per_tier"]]
    assert data["tiers"] == int(tiers)
    assert per_tier[0] == int(tors)
    assert (str(per_tier[1]) if len(per_tier) > 1 else "-") == middle
    assert (str(per_tier[2]) if len(per_tier) > 2 else "-") == cores
    assert (str(data["gpus_per_segment"]) if data["gpus_per_segment"] else "-") == segment


def test_rails_wider_than_a_pod_stop_at_two_tiers_and_say_why():
    hw = _rail_hw(128, 128)                          # 128 rails: a segment is 128 ToRs, a pod holds 64
    assert max_gpus(hw) == {"1": 128, "2": 8192, "3": 0}
    with pytest.raises(PlanError, match=r"the most is 8192 GPUs in 2 tiers \(a pod's 64 ToRs hold no whole rail "
                                        r"segment of 128 ToRs"):
        plan(hw, 16384)
