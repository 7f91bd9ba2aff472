"""Loading: defaults filled, derived values, resolution of the workload."""

import math
from pathlib import Path

import pytest
import yaml

from testbed.scenario import ScenarioError, load_scenario, parse_scenario

MINIMAL = "topology: {kind: leaf_spine}\nworkload: [{kind: pingall}]\n"


def test_defaults_are_filled_and_follow_the_bdp():
    s = parse_scenario(MINIMAL, "minimal.yaml")
    assert s.name == "minimal"
    assert (s.duration_s, s.seed) == (20.0, 1)
    assert (s.topology.leaves, s.topology.spines, s.topology.hosts_per_leaf) == (4, 2, 2)
    assert s.links.host.rate_mbps == s.links.fabric.rate_mbps == 20.0
    assert s.switch.target == "auto" and s.switch.program == "p4src/fabric.p4"
    assert s.fabric.cell_size == 1024 and s.fabric.entropy_values == 32
    d = s.derived
    assert d.cell_wire_bytes == 1024 + 66
    # 4 links each way, 1 ms each, plus one cell and one ACK serialised per link
    expected_rtt = 4 * (2 * 1000 + (1090 + 74) * 8 / 20)
    assert d.base_rtt_us == pytest.approx(expected_rtt)
    assert d.bdp_cells == math.ceil(math.ceil(20 * expected_rtt / 8) / 1090)
    assert 16 <= d.bdp_cells <= 32
    assert s.links.host.buffer_packets == 2 * d.bdp_cells
    assert s.transport.reorder_window_cells == 2 * d.bdp_cells
    assert s.fabric.ecn.kmax_cells == d.bdp_cells
    assert s.fabric.ecn.kmin_cells == math.ceil(0.2 * d.bdp_cells)
    assert s.fabric.credits.rate_fraction == pytest.approx(66 / (66 + 1090 + 74), abs=1e-6)  # + ACK share
    # Zhu et al.: B = 10 MB at 40 Gbit/s = 36.4 increase-timer periods (5 RTT each) at line rate
    assert s.transport.dcqcn.byte_counter_bytes == math.ceil(10e6 * 8 / 40e9 / 55e-6 * 5 * d.bdp_bytes)


def test_cc_drives_ecn_credits_and_queues():
    tita = parse_scenario(MINIMAL + "transport: {cc: tita}\n")
    assert tita.fabric.credits.enabled and tita.switch.priority_queues == 2
    assert tita.fabric.ecn.mode == "none"
    dcqcn = parse_scenario(MINIMAL + "transport: {cc: dcqcn}\n")
    # Two queues: fabric.p4 queues CNPs at priority 1, ahead of the data they report on.
    assert not dcqcn.fabric.credits.enabled and dcqcn.switch.priority_queues == 2
    assert dcqcn.fabric.ecn.mode == "red"
    with pytest.raises(ScenarioError, match="dcqcn needs 2"):
        parse_scenario(MINIMAL + "transport: {cc: dcqcn}\nswitch: {priority_queues: 1}\n")
    none = parse_scenario(MINIMAL + "transport: {cc: none}\n")
    assert none.switch.priority_queues == 1
    explicit = parse_scenario(MINIMAL + "transport: {cc: dcqcn}\nfabric: {ecn: {mode: step, k_cells: 9}}\n")
    assert (explicit.fabric.ecn.mode, explicit.fabric.ecn.k_cells) == ("step", 9)


def test_spray_is_an_alias_and_per_tier_links_override():
    s = parse_scenario(MINIMAL + "fabric: {load_balancing: spray}\n"
                       "links: {rate_mbps: 50, delay_us: 200, host: {rate_mbps: 25}, "
                       "fabric: {buffer_packets: 64}}\n")
    assert s.fabric.load_balancing == "spray_rr_entropy"
    assert (s.links.host.rate_mbps, s.links.fabric.rate_mbps) == (25, 50)
    assert s.links.host.delay_us == s.links.fabric.delay_us == 200
    assert s.links.fabric.buffer_packets == 64
    assert s.derived.oversubscription == pytest.approx(2 * 25 / (2 * 50))


def test_oversubscription_accepts_the_matching_value():
    s = parse_scenario("topology: {kind: leaf_spine, hosts_per_leaf: 4, spines: 2, "
                       "oversubscription: 2}\nworkload: [{kind: pingall}]\n")
    assert s.derived.oversubscription == 2


def test_fat_tree_paths_set_the_rtt():
    s = parse_scenario("topology: {kind: fat_tree, k: 4}\nworkload: [{kind: pingall}]\n")
    assert (s.derived.path_host_links, s.derived.path_fabric_links) == (2, 4)
    assert s.topo.counts.hosts == 16


def test_workload_resolution_is_concrete_and_seeded():
    text = MINIMAL.replace("[{kind: pingall}]", "") + """\
  - kind: incast
    senders: 3
    receiver: h3
  - kind: permutation
    start_s: 1
  - kind: all_to_all
    hosts: [h1, h5, h8]
    zipf_s: 1.2
  - kind: ring_allreduce
    count: 3
"""
    s = parse_scenario(text)
    incast, perm, a2a, ring = s.workload
    assert incast.receiver == "h3" and len(incast.senders) == 3
    assert "h4" not in incast.senders  # h4 shares h3's leaf: remote senders come first
    assert sorted(r for _, r in perm.pairs) == sorted(perm.hosts)
    topo = s.topo
    assert all(topo.tors_of(a) != topo.tors_of(b) for a, b in perm.pairs)
    assert parse_scenario(text).workload[1].pairs == perm.pairs
    assert parse_scenario(text.replace("topology:", "seed: 7\ntopology:")).workload[1].pairs != perm.pairs
    assert a2a.hosts == ("h1", "h5", "h8") and a2a.zipf_s == 1.2
    assert ring.count == 3 and ring.message_bytes == 1024 * 1024
    assert incast.name == "1-incast"


def test_faults_resolve_against_the_topology():
    s = parse_scenario(MINIMAL + "faults:\n  - {at_s: 3, kind: link_down, target: leaf1-spine2}\n"
                       "  - {at_s: 4, kind: host_down, target: h2}\n")
    assert [(f.at_s, f.kind, f.target) for f in s.faults] == [
        (3.0, "link_down", "leaf1-spine2"), (4.0, "host_down", "h2")]


def test_to_dict_round_trips_through_yaml():
    s = load_scenario(Path(__file__).parents[3] / "scenarios" / "default.yaml")
    data = yaml.safe_load(yaml.safe_dump(s.to_dict()))
    assert data["fabric"]["load_balancing"] == "ecmp"
    assert data["variants"] == {"load_balancing": ["ecmp", "spray"]}
    assert data["derived"]["bdp_cells"] == s.derived.bdp_cells
    assert data["topology"]["kind"] == "leaf_spine"
    assert "_origin" not in data


def test_scenario_is_frozen():
    s = parse_scenario(MINIMAL)
    with pytest.raises(AttributeError):
        s.seed = 3


def test_yaml_anchors_and_merges_work():
    s = parse_scenario("""\
base: &base {rate_mbps: 30, delay_us: 500}
""".replace("base: &base", "links: &l") + "topology: {kind: leaf_spine}\nworkload: [{kind: pingall}]\n")
    assert s.links.host.rate_mbps == 30
    merged = parse_scenario("topology: &t {kind: leaf_spine, leaves: 2}\n"
                            "workload: [{kind: pingall}]\n"
                            "links: {host: {rate_mbps: 40}, fabric: {<<: {rate_mbps: 10}, delay_us: 5}}\n")
    assert merged.links.fabric.rate_mbps == 10 and merged.links.fabric.delay_us == 5


def test_unreadable_file_is_one_line(tmp_path):
    with pytest.raises(ScenarioError) as caught:
        load_scenario(tmp_path / "missing.yaml")
    assert str(caught.value).startswith(f"{tmp_path / 'missing.yaml'}: cannot read")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("topology", ["{kind: fat_tree, k: 8}", "{kind: leaf_spine, leaves: 2, hosts_per_leaf: 5}",
                                      "{kind: leaf_spine, dual_homed: true}"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_permutations_cross_the_fabric_at_any_size(topology, seed):
    s = parse_scenario(f"seed: {seed}\ntopology: {topology}\nworkload: [{{kind: permutation}}]\n")
    pairs = s.workload[0].pairs
    assert sorted(a for a, _ in pairs) == sorted(b for _, b in pairs) == sorted(s.topo.hosts)
    assert all(s.topo.tors_of(a) != s.topo.tors_of(b) for a, b in pairs)


def test_permutation_within_a_tor_when_allowed():
    s = parse_scenario("topology: {kind: leaf_spine}\n"
                       "workload: [{kind: permutation, hosts: [h1, h2], cross_tor: false}]\n")
    assert s.workload[0].pairs == (("h1", "h2"), ("h2", "h1"))
