"""Switches into fabric processes: balanced, few cables cut, the same every time."""

from testbed.scenario import parse_scenario
from testbed.scenario.processes import describe_placement, switch_placement
from testbed.topo.partition import place


def topology(text):
    return parse_scenario(f"topology: {text}\nworkload: [{{kind: pingall}}]\n", "t.yaml").topo


def test_a_fat_tree_splits_in_halves_along_pods_cutting_a_quarter_of_its_cables():
    t = topology("{kind: fat_tree, k: 4}")
    p = place(t, 2)
    assert [len(g) for g in p.groups] == [10, 10]
    assert sorted(s for g in p.groups for s in g) == sorted(t.switches)
    assert p.cut(t) == 8 and len(p.in_memory) == 24
    pods = {t.node(s).pod for s in t.switches if t.node(s).pod is not None}
    for pod in pods:  # a pod's edge and aggregation switches stay in one process
        assert len({p.process_of(s) for s in t.switches if t.node(s).pod == pod}) == 1, pod
    assert place(t, 2) == p  # deterministic


def test_one_process_holds_every_cable_and_more_processes_than_switches_is_one_each():
    t = topology("{kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}")
    assert place(t, 1).cut(t) == 0 and len(place(t, 1).in_memory) == 2
    many = place(t, 16)
    assert len(many.groups) == 3 and not many.in_memory


def test_a_cable_a_fault_touches_stays_a_veth():
    s = parse_scenario("topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
                       "switch: {target: builtin, processes: 1}\n"
                       "workload: [{kind: pingall}]\n"
                       "faults: [{at_s: 1, kind: link_down, target: leaf1-spine2}]\n", "t.yaml")
    p = switch_placement(s)
    assert "leaf1-spine2" not in p.in_memory and len(p.in_memory) == 3
    assert "3 of 4 switch cables in memory" in describe_placement(s, p)


def test_per_switch_and_bmv2_have_no_placement():
    s = parse_scenario("topology: {kind: fat_tree, k: 4}\nswitch: {target: builtin, processes: per_switch}\n"
                       "workload: [{kind: pingall}]\n", "t.yaml")
    assert switch_placement(s) is None
    assert describe_placement(s, None) == "switch processes: one per switch (20)"
