"""`testbed plan`: the Clos arithmetic against the textbook counts and published fabrics.

Sources of the published figures:
* k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k^3/4 hosts, 5k^2/4 switches; a two-tier
  folded Clos of k-port switches: k^2/2 hosts.
* 128-port switches (25.6 Tbit/s as 128 x 200G) with dual-port NICs stop at 4,096 GPUs in
  two tiers, which is why larger clusters need a third tier.
* Alibaba HPN (SIGCOMM 2024): 51.2 Tbit/s switches, 8 GPUs a host each with a 2 x 200G NIC
  whose ports go to two ToRs, two planes; a segment of 1,024 GPUs, a pod of about 15K GPUs
  (15 segments) with the aggregation tier keeping 1/16 of its ports for the core.
"""

from __future__ import annotations

import json

import pytest

from testbed.cli import main
from testbed.plan.clos import max_gpus, plan
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
    assert data["max_gpus"] == {"1": 64, "2": 4096, "3": 262144}


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
