"""The tenant entries of a ToR: what fabric.p4 needs to isolate a scenario's tenants.

A pure function of the topology and the scenario's tenants (p4src/README.md, "Tenants").  On a
switch with host ports, when the scenario has tenants: `tenant_config` on; each host port of a
host in a tenant bound to that tenant with the MAC of the host's NIC port and the host's IPv4
address (the source the ToR accepts from it); each port to another switch a fabric port; and
every tenant host's address with its tenant.  A host in no tenant gets no binding, so its port
is denied.  Other switches, and every switch of a scenario without tenants, get no entry: the
program's defaults forward as before.
"""

from __future__ import annotations

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
