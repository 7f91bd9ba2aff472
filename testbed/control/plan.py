"""What every switch of a fabric must be told, computed from topology + scenario.

A pure function of its inputs (no switches, no sockets) so it is tested
directly; `testbed.control.apply` pushes a plan to running switches.  The
tables and their meaning are the contract in p4src/README.md.

Routing: one /32 route per destination host, to a next-hop group whose
members are the equal-cost egress ports towards it (the topology's
shortest paths), ordered and given an entropy divisor by
`testbed.topo.entropy`, so each tier reads its own digit of a cell's
entropy and a DATA cell can retrace its credit's path.  Each switch gets its
own ECMP hash multiplier, drawn from the scenario's seed and the switch's
name, so no tier repeats another's flow-hash choice.  With tenants, each ToR
also gets its tenant bindings (`testbed.control.tenants`), and with
`fabric.tenant_isolation` each tenant's queue on every switch (queues) or rate meter
at its ToRs (meters).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from testbed.control.p4runtime_client import TableEntrySpec
from testbed.cells import wire
from testbed.control.tenants import tenant_entries, tenant_meter_rates, tenant_queue_plan
from testbed.topo.entropy import exact_division, group_choice, layout_of
from testbed.topo.model import Topology

CELL_UDP_OVERHEAD = 8 + 24  # UDP header + cell header in front of a DATA body
# Load-balancing scheme -> the groups' cell_mode (p4src/README.md).  Both
# entropy schemes let switches read the cell's entropy; they differ in how
# senders choose it (testbed/host/sender.py).
CELL_MODES = {"ecmp": 0, "spray_rr_switch": 1, "spray_rr_entropy": 2, "spray_random_entropy": 2,
              "spray_random_switch": 3}
DATA_PRIORITY, CREDIT_PRIORITY = 0, 1
PMAX_SCALE = 65536


@dataclass
class MeterSetting:
    meter: str
    index: int
    cir: int
    cburst: int
    pir: int
    pburst: int


@dataclass
class SwitchPlan:
    """Everything one switch needs after its pipeline is set."""

    switch: str
    entries: list[TableEntrySpec] = field(default_factory=list)
    meters: list[MeterSetting] = field(default_factory=list)
    tm_commands: list[str] = field(default_factory=list)  # traffic-manager control lines
    groups: dict[tuple[int, ...], int] = field(default_factory=dict)  # member ports -> group id
    hash_multiplier: int = 0


def hash_multiplier(seed: int, switch: str) -> int:
    """An odd 32-bit ECMP multiplier, a pure function of the seed and the switch."""
    digest = hashlib.blake2b(f"{seed}/{switch}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") | 1


def add_group(plan: SwitchPlan, ports: tuple[int, ...], cell_mode: int, neighbour_macs: dict[int, str],
              divisor: int) -> int:
    """The id of the plan's group of these member ports, added with its entries if new."""
    if ports in plan.groups:
        return plan.groups[ports]
    group = len(plan.groups) + 1
    plan.groups[ports] = group
    shift, inverse = exact_division(divisor)
    plan.entries.append(TableEntrySpec("FabricIngress.groups", {"group_id": group}, "FabricIngress.set_group",
                                       {"size": len(ports), "cell_mode": cell_mode, "entropy_divisor": divisor,
                                        "entropy_shift": shift, "entropy_inverse": inverse}))
    for member, port in enumerate(ports):
        plan.entries.append(TableEntrySpec(
            "FabricIngress.group_members", {"group_id": group, "member": member},
            "FabricIngress.set_next_hop", {"port": port, "next_hop_mac": neighbour_macs[port]}))
    return group


def _link_params(scenario, tier: str):
    return scenario.links.host if tier == "host" else scenario.links.fabric


def credit_rate_pps(link_rate_mbps: float, scenario) -> int:
    """Credits per second a port may send: the link's credit share (fabric.credits.rate_fraction)
    in whole credit frames (wire.credit_meter_rate; the simulator and the agents use the same)."""
    return wire.credit_meter_rate(link_rate_mbps * 1e6, scenario.fabric.credits.rate_fraction,
                                  scenario.fabric.cell_size)


def plan_switch(topology: Topology, scenario, switch: str) -> SwitchPlan:
    plan = SwitchPlan(switch)
    fabric = scenario.fabric
    cell_mode = CELL_MODES[fabric.load_balancing]
    ports = topology.ports(switch)
    neighbour_macs = {p.number: topology.port(p.peer, p.peer_port).mac for p in ports}

    plan.entries.append(TableEntrySpec("FabricIngress.cell_config", {}, "FabricIngress.set_cell_size",
                                       {"data_udp_length": CELL_UDP_OVERHEAD + fabric.cell_size},
                                       is_default=True))
    plan.hash_multiplier = hash_multiplier(scenario.seed, switch)
    plan.entries.append(TableEntrySpec("FabricIngress.hash_config", {}, "FabricIngress.set_hash_multiplier",
                                       {"multiplier": plan.hash_multiplier}, is_default=True))
    if fabric.int_telemetry.enabled:
        # In-band telemetry (p4src/README.md): the hop records name the switch by its device id.
        telemetry = fabric.int_telemetry
        plan.entries.append(TableEntrySpec("FabricEgress.int_config", {}, "FabricEgress.int_enable",
                                           {"switch_id": topology.node(switch).device_id,
                                            "max_hops": telemetry.max_hops,
                                            "sample_mask": telemetry.sample - 1}, is_default=True))
    # tenants (p4src/README.md, "Tenants"): a ToR's bindings; nothing without a tenants: section
    plan.entries += tenant_entries(topology, getattr(scenario, "tenants", ()), switch)
    # performance isolation (fabric.tenant_isolation: meters): each tenant's DATA cells capped at its
    # share of the ToR's uplink capacity
    plan.meters += [MeterSetting("FabricIngress.tenant_meter", tenant, rate, bucket, rate, bucket)
                    for tenant, rate, bucket in tenant_meter_rates(topology, scenario, switch)]
    # ... or (queues) each tenant's data queue on every port, served by deficit round robin
    queue_entries, queue_weights = tenant_queue_plan(scenario)
    plan.entries += queue_entries
    layout = layout_of(topology)
    for host in topology.hosts:
        divisor, members = group_choice(topology, layout, switch, topology.next_hops(switch, host))
        group = add_group(plan, tuple(members), cell_mode, neighbour_macs, divisor)
        plan.entries.append(TableEntrySpec("FabricIngress.ipv4_routes",
                                           {"dstAddr": (topology.node(host).ip, 32)},
                                           "FabricIngress.route_to_group", {"group_id": group}))

    for port in ports:
        plan.entries.append(TableEntrySpec("FabricEgress.port_macs", {"egress_port": port.number},
                                           "FabricEgress.set_source_mac", {"mac": port.mac}))
        ecn = fabric.ecn
        if ecn.mode == "step":
            plan.entries.append(TableEntrySpec("FabricEgress.ecn_config",
                                               {"egress_port": port.number},
                                               "FabricEgress.mark_step", {"k": ecn.k_cells}))
        elif ecn.mode == "red":
            pmax = min(PMAX_SCALE - 1, int(round(ecn.pmax * PMAX_SCALE)))
            plan.entries.append(TableEntrySpec("FabricEgress.ecn_config",
                                               {"egress_port": port.number},
                                               "FabricEgress.mark_red",
                                               {"kmin": ecn.kmin_cells, "kmax": ecn.kmax_cells, "pmax": pmax}))
        link = _link_params(scenario, port.tier)
        rate_bps = int(link.rate_mbps * 1e6)
        plan.tm_commands += [
            f"set_port_rate_bps {rate_bps} {port.number}",
            f"set_port_delay_us {int(link.delay_us)} {port.number}",
            f"set_queue_depth {link.buffer_packets} {port.number} {DATA_PRIORITY}",
        ]
        for queue, quantum in queue_weights:
            plan.tm_commands += [f"set_queue_depth {link.buffer_packets} {port.number} {queue}",
                                 f"set_queue_weight {quantum} {port.number} {queue}"]
        if fabric.credits.enabled:
            credits = fabric.credits
            rate = credit_rate_pps(link.rate_mbps, scenario)
            # ExpressPass's credit limiter, as the simulator models it: a credit queue served at the
            # credit rate (the TM shapes the credit priority) behind a bucket of burst_credits, so
            # burst + queue credits can wait and credits beyond them are dropped; the meter, at
            # the same rate with that depth, is where they are. (A meter of burst_credits alone,
            # in front of an unshaped queue, dropped what the queue would have held: a sprayed
            # 2-tier permutation under tita reached 0.58 of the payload rate emulated, 0.82 simulated.)
            hold = credits.burst_credits + credits.queue_credits
            plan.meters.append(MeterSetting("FabricIngress.credit_meter", port.number, rate, hold, rate, hold))
            plan.tm_commands += [f"set_queue_depth {hold} {port.number} {CREDIT_PRIORITY}",
                                 f"set_queue_rate {rate} {port.number} {CREDIT_PRIORITY}"]
    if fabric.pfc.enabled:
        # lossless DATA, as the simulator models it: pause a link's sender at XOFF of its cells
        # queued here, resume at XON, and the ports' DATA buffers pooled into one
        pool = sum(_link_params(scenario, port.tier).buffer_packets for port in ports)
        plan.tm_commands.append(f"set_pfc {fabric.pfc.xoff_cells} {fabric.pfc.xon_cells} {DATA_PRIORITY} {pool}")
    return plan


def plan_fabric(topology: Topology, scenario) -> dict[str, SwitchPlan]:
    return {switch: plan_switch(topology, scenario, switch) for switch in topology.switches}
