"""The tenant entries of a ToR: what fabric.p4 needs to isolate a scenario's tenants.

A pure function of the topology and the scenario's tenants (p4src/README.md, "Tenants").  On a
switch with host ports, when the scenario has tenants: `tenant_config` on; each host port of a
host in a tenant bound to that tenant with the MAC of the host's NIC port and the host's IPv4
address (the source the ToR accepts from it); each port to another switch a fabric port; and
every tenant host's address with its tenant.  A host in no tenant gets no binding, so its port
is denied.  Other switches, and every switch of a scenario without tenants, get no entry: the
program's defaults forward as before.

Performance isolation, `fabric.tenant_isolation: queues`: every switch maps each tenant (the
DSCP its packets carry) to a data queue of its own (`tenant_queues`: tenant 1 to queue 0, tenant
t > 1 to queue t; queue 1 stays the credits' and CNPs'), and every port serves those queues by
deficit round robin, each with a quantum of its share of n data cell frames per turn (n tenants):
a tenant's backlog then waits in its own queue, and each tenant with cells queued gets its share
of the link.  `meters`: each ToR meters, in bytes, every
packet a tenant's host ports send at the data priority (DATA cells, ACKs, NACKs; `tenant_meter`,
indexed by tenant id) at the tenant's share of the ToR's uplink capacity (the sum of its ports to
switches), with a bucket of one uplink queue's DATA cells (the fabric links' buffer): what a
tenant sends beyond that is dropped at its ToR, before it reaches a queue another tenant shares.
"""

from __future__ import annotations

from testbed.cells import wire
from testbed.control.p4runtime_client import TableEntrySpec
from testbed.topo.model import Topology


def tenant_of_host(tenants) -> dict[str, int]:
    """Host name -> its tenant's id."""
    return {host: tenant.id for tenant in tenants for host in tenant.hosts}


def tenant_entries(topology: Topology, tenants, switch: str) -> list[TableEntrySpec]:
    ports = topology.ports(switch)
    if not tenants or not any(p.tier == "host" for p in ports):
        return []
    owner = tenant_of_host(tenants)
    entries = [TableEntrySpec("FabricIngress.tenant_config", {}, "FabricIngress.tenants_on", {}, is_default=True)]
    for port in ports:
        if port.tier != "host":
            entries.append(TableEntrySpec("FabricIngress.tenant_ports", {"ingress_port": port.number},
                                          "FabricIngress.fabric_port", {}))
        elif port.peer in owner:
            host = topology.node(port.peer)
            entries.append(TableEntrySpec(
                "FabricIngress.tenant_ports", {"ingress_port": port.number}, "FabricIngress.bind_host",
                {"tenant": owner[port.peer], "mac": topology.port(port.peer, port.peer_port).mac, "ipv4": host.ip}))
    for host, tenant in sorted(owner.items()):
        entries.append(TableEntrySpec("FabricIngress.tenant_hosts", {"dstAddr": topology.node(host).ip},
                                      "FabricIngress.set_dst_tenant", {"tenant": tenant}))
    return entries


def tenant_meter_rates(topology: Topology, scenario, switch: str) -> list[tuple[int, int, int]]:
    """(tenant id, bytes/s, bucket in bytes) for each tenant `switch`'s tenant_meter caps: every
    tenant on a ToR of a scenario with `fabric.tenant_isolation: meters`; nothing otherwise."""
    tenants = getattr(scenario, "tenants", ())
    ports = topology.ports(switch)
    if scenario.fabric.tenant_isolation != "meters" or not tenants or not any(p.tier == "host" for p in ports):
        return []
    uplink_bytes = sum(scenario.links.fabric.rate_mbps * 1e6 / 8 for p in ports if p.tier != "host")
    bucket = scenario.links.fabric.buffer_packets * wire.wire_bytes(scenario.fabric.cell_size, wire.DATA)
    return [(t.id, max(1, int(uplink_bytes * t.share)), bucket) for t in tenants]


def tenant_queue(tenant_id: int) -> int:
    """The data queue (priority) of tenant `tenant_id` with `fabric.tenant_isolation: queues`."""
    return 0 if tenant_id == 1 else tenant_id


def tenant_queue_plan(scenario) -> tuple[list[TableEntrySpec], list[tuple[int, int]]]:
    """With `fabric.tenant_isolation: queues`, every switch's `tenant_queues` entries and each
    tenant queue's (priority, DRR quantum in bytes); nothing otherwise."""
    tenants = getattr(scenario, "tenants", ())
    if scenario.fabric.tenant_isolation != "queues" or not tenants:
        return [], []
    frame = wire.wire_bytes(scenario.fabric.cell_size, wire.DATA)
    entries = [TableEntrySpec("FabricIngress.tenant_queues", {"dscp": t.id}, "FabricIngress.set_tenant_queue",
                              {"queue": tenant_queue(t.id)}) for t in tenants]
    weights = [(tenant_queue(t.id), max(1, round(t.share * len(tenants) * frame))) for t in tenants]
    return entries, weights
