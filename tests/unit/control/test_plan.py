"""The controller's plan: routes, groups, ECN, credits and link settings per switch."""

import dataclasses
from pathlib import Path

import pytest

from testbed.control.plan import CELL_MODES, credit_rate_pps, plan_fabric, plan_switch
from testbed.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def default():
    return load_scenario(ROOT / "scenarios" / "default.yaml")


def entries(plan, table):
    return [e for e in plan.entries if e.table == table]


def test_leaf_routes_remote_hosts_over_both_spines_in_spine_order(default):
    topology = default.topo
    plan = plan_switch(topology, default, "leaf1")
    routes = {e.match["dstAddr"][0]: e.params["group_id"] for e in entries(plan, "FabricIngress.ipv4_routes")}
    assert len(routes) == len(topology.hosts)
    remote = [h for h in topology.hosts if "leaf1" not in topology.tors_of(h)]
    uplinks = tuple(topology.next_hops("leaf1", remote[0]))
    assert len(uplinks) == 2
    assert {routes[topology.node(h).ip] for h in remote} == {plan.groups[uplinks]}, "one shared uplink group"
    members = entries(plan, "FabricIngress.group_members")
    uplink_members = sorted((e.match["member"], e.params["port"]) for e in members
                            if e.match["group_id"] == plan.groups[uplinks])
    spines = [topology.port("leaf1", port).peer for _, port in uplink_members]
    assert spines == sorted(spines), "member i is the same spine on every leaf"
    local = [h for h in topology.hosts if "leaf1" in topology.tors_of(h)]
    for host in local:
        group = routes[topology.node(host).ip]
        (ports,) = [p for p, g in plan.groups.items() if g == group]
        assert len(ports) == 1 and topology.port("leaf1", ports[0]).peer == host


def test_next_hop_mac_is_the_neighbours_port_mac(default):
    topology = default.topo
    plan = plan_switch(topology, default, "spine1")
    for e in entries(plan, "FabricIngress.group_members"):
        port = topology.port("spine1", e.params["port"])
        assert e.params["next_hop_mac"] == topology.port(port.peer, port.peer_port).mac


@pytest.mark.parametrize("mode", sorted(CELL_MODES))
def test_cell_mode_follows_load_balancing(default, mode):
    scenario = dataclasses.replace(default, fabric=dataclasses.replace(default.fabric, load_balancing=mode))
    plan = plan_switch(scenario.topo, scenario, "leaf2")
    assert {e.params["cell_mode"] for e in entries(plan, "FabricIngress.groups")} == {CELL_MODES[mode]}


def test_ecn_credit_and_link_settings(default):
    fabric = dataclasses.replace(
        default.fabric,
        ecn=dataclasses.replace(default.fabric.ecn, mode="red", kmin_cells=5, kmax_cells=20, pmax=0.2),
        credits=dataclasses.replace(default.fabric.credits, enabled=True))
    scenario = dataclasses.replace(default, fabric=fabric)
    plan = plan_switch(scenario.topo, scenario, "leaf1")
    ports = [p.number for p in scenario.topo.ports("leaf1")]
    red = entries(plan, "FabricEgress.ecn_config")
    assert sorted(e.match["egress_port"] for e in red) == ports
    assert red[0].action == "FabricEgress.mark_red" and red[0].params == {"kmin": 5, "kmax": 20, "pmax": 13107}
    assert [m.index for m in plan.meters] == ports
    rate = credit_rate_pps(scenario.links.host.rate_mbps, scenario)
    # credits at the credit share of the link: about one per data cell the reverse link can carry
    cells_per_s = scenario.links.host.rate_mbps * 1e6 / (scenario.derived.cell_wire_bytes * 8)
    assert 0.8 * cells_per_s < rate < 1.05 * cells_per_s
    # the credit queue is shaped at the credit rate and holds burst + queue credits; the meter
    # drops only what it could not hold
    hold = fabric.credits.burst_credits + fabric.credits.queue_credits
    assert plan.meters[0].cburst == plan.meters[0].pburst == hold
    assert f"set_queue_depth {hold} {ports[0]} 1" in plan.tm_commands
    assert f"set_queue_rate {rate} {ports[0]} 1" in plan.tm_commands
    assert f"set_port_rate_bps {int(scenario.links.host.rate_mbps * 1e6)} {ports[0]}" in plan.tm_commands


def test_no_ecn_entries_when_off_and_a_plan_for_every_switch(default):
    plans = plan_fabric(default.topo, default)
    assert set(plans) == set(default.topo.switches)
    if default.fabric.ecn.mode == "none":
        assert not any(entries(p, "FabricEgress.ecn_config") for p in plans.values())


def test_bmv2_gets_packet_rates_and_a_note_about_delay(default):
    from testbed.control.apply import bmv2_tm_lines

    plan = plan_switch(default.topo, default, "leaf1")
    lines, notes = bmv2_tm_lines(plan, default.derived.cell_wire_bytes)
    rate_pps = int(default.links.host.rate_mbps * 1e6 / (default.derived.cell_wire_bytes * 8))
    assert f"set_queue_rate {rate_pps} 1" in lines
    assert not any(line.startswith(("set_port_rate_bps", "set_port_delay_us")) for line in lines)
    assert any(line.startswith("set_queue_depth") for line in lines)
    assert notes and "no link delay" in notes[0]


def test_int_config_only_with_fabric_int(default):
    from testbed.scenario.model import Int

    assert not entries(plan_switch(default.topo, default, "leaf1"), "FabricEgress.int_config")
    scenario = dataclasses.replace(default, fabric=dataclasses.replace(
        default.fabric, int_telemetry=Int(True, sample=4, max_hops=5)))
    ids = set()
    for switch in scenario.topo.switches:
        (entry,) = entries(plan_switch(scenario.topo, scenario, switch), "FabricEgress.int_config")
        assert entry.is_default and entry.action == "FabricEgress.int_enable"
        assert entry.params["max_hops"] == 5 and entry.params["sample_mask"] == 3
        assert entry.params["switch_id"] == scenario.topo.node(switch).device_id
        ids.add(entry.params["switch_id"])
    assert len(ids) == len(scenario.topo.switches), "every switch has its own id"


# -- tenants (p4src/README.md, "Tenants") -----------------------------------------

TENANTS_DUAL = """
topology: {kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 3, dual_homed: true}
tenants:
  - {name: blue, hosts: [h1, h2]}
  - {name: red, hosts: [h3, h4, h5]}
workload: [{kind: pingall, hosts: [h1, h2]}]
"""


def test_no_tenants_no_tenant_entry_anywhere(default):
    assert default.tenants == ()
    for plan in plan_fabric(default.topo, default).values():
        assert not [e for e in plan.entries if "tenant" in e.table]


def test_tenants_bind_every_tor_port_and_leave_other_switches_alone():
    from testbed.scenario import parse_scenario

    scenario = parse_scenario(TENANTS_DUAL, "t.yaml")
    topo = scenario.topo
    owner = {"h1": 1, "h2": 1, "h3": 2, "h4": 2, "h5": 2}  # h6: in no tenant
    for switch, plan in plan_fabric(topo, scenario).items():
        tenant_rows = [e for e in plan.entries if "tenant" in e.table]
        if not any(p.tier == "host" for p in topo.ports(switch)):
            assert tenant_rows == [], switch
            continue
        (config,) = entries(plan, "FabricIngress.tenant_config")
        assert config.is_default and config.action == "FabricIngress.tenants_on"
        bound = {e.match["ingress_port"]: e for e in entries(plan, "FabricIngress.tenant_ports")}
        for port in topo.ports(switch):
            if port.tier != "host":
                assert bound[port.number].action == "FabricIngress.fabric_port"
            elif port.peer in owner:  # each ToR a dual-homed host reaches binds its own NIC port's MAC
                e = bound[port.number]
                assert e.params == {"tenant": owner[port.peer], "mac": topo.port(port.peer, port.peer_port).mac,
                                    "ipv4": topo.node(port.peer).ip}
            else:
                assert port.number not in bound, "a host in no tenant stays unbound: denied"
        hosts = {e.match["dstAddr"]: e.params["tenant"] for e in entries(plan, "FabricIngress.tenant_hosts")}
        assert hosts == {topo.node(h).ip: t for h, t in owner.items()}
