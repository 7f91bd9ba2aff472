"""`tenants:` -> the resolved tenants, and the rule that a workload phase stays in one tenant.

Model.  A tenant names hosts, or servers (a server stands for all its GPUs, each a host of the
topology); fabric.p4's ToRs then bind each of those hosts' ports to the tenant and drop what
crosses tenants (p4src/README.md, "Tenants").  A host in no tenant is denied by its ToR.

Rules, each refused at the line of the field to change: a tenant names at least one host or
server; every name is a host of the topology and every number one of its servers; no host is in
two tenants (a server's GPUs count as named by the tenant naming the server); tenant names are
distinct; and the GPUs of one server are not split between tenants, since they talk over their
server's local channel, which no switch sees.  With tenants, a workload phase's hosts are all of
one tenant: a message across tenants is dropped by design and would never complete.  Each
tenant's `share` (of a ToR's uplink capacity, what `fabric.tenant_isolation: meters` caps it at)
is the one it gives, else an equal part of what the others leave; the shares add up to at most 1.
"""

from __future__ import annotations

from typing import Callable

from testbed.scenario.errors import ScenarioError
from testbed.scenario.model import Tenant
from testbed.scenario.source import DataPath
from testbed.topo import Topology

Fail = Callable[..., ScenarioError]


def resolve_tenants(raw: list | None, topo: Topology, fail: Fail) -> tuple[Tenant, ...]:
    """The section as Tenants, ids 1.. in its order; `fail(path, message)` makes the error."""
    if raw is None:
        return ()
    at: DataPath = ("tenants",)
    names: dict[str, int] = {}
    owner: dict[str, tuple[int, DataPath]] = {}  # host -> (its tenant's index, where it was named)
    out = []
    for i, entry in enumerate(raw):
        name = entry["name"]
        if name in names:
            raise fail(at + (i, "name"), f"'{name}' is a duplicate tenant: tenants[{names[name]}] has this name")
        names[name] = i
        named: list[tuple[str, DataPath]] = []
        for j, host in enumerate(entry.get("hosts", ())):
            where = at + (i, "hosts", j)
            if host not in topo.nodes or not topo.nodes[host].is_host:
                raise fail(where, f"'{host}' is not a host of this topology (hosts are h1..h{len(topo.hosts)})")
            named.append((host, where))
        for j, number in enumerate(entry.get("servers", ())):
            where = at + (i, "servers", j)
            if number not in topo.servers:
                raise fail(where, f"{number} is not a server of this topology "
                           + (f"(servers are 1..{len(topo.servers)})" if topo.servers
                              else "(it has none: topology.gpus_per_server is 1)"))
            named += [(gpu, where) for gpu in topo.servers[number]]
        if not named:
            raise fail(at + (i,), f"tenant '{name}' names no host: give it hosts or servers")
        for host, where in named:
            if host in owner:
                k = owner[host][0]
                raise fail(where, f"'{host}' is already in tenant '{raw[k]['name']}' (tenants[{k}]): "
                           "a host belongs to one tenant")
            owner[host] = (i, where)
        order = {h: n for n, h in enumerate(topo.hosts)}
        out.append(Tenant(name, i + 1, tuple(sorted({h for h, _ in named}, key=order.__getitem__)),
                          _share(raw, i, at, fail)))
    for number, gpus in topo.servers.items():
        split = sorted({owner[g][0] for g in gpus if g in owner})
        if len(split) > 1:
            first = next(owner[g][1] for g in gpus if g in owner and owner[g][0] == split[1])
            raise fail(first, f"server {number}'s GPUs are split between tenants '{raw[split[0]]['name']}' and "
                       f"'{raw[split[1]]['name']}': they share the server's local channel, which no switch "
                       "sees, so a server belongs to one tenant")
    return tuple(out)


def _share(raw: list, i: int, at: DataPath, fail: Fail) -> float:
    """Tenant i's share of a ToR's uplink capacity: its `share`, else an equal part of what the
    tenants that give none leave; the shares given may not add up to more than 1."""
    given = [entry["share"] for entry in raw if "share" in entry]
    if "share" in raw[i]:
        total = sum(entry["share"] for entry in raw[:i + 1] if "share" in entry)
        if total > 1 + 1e-9:
            raise fail(at + (i, "share"), f"brings the tenants' shares to {total:g}: together they may "
                       "have at most 1 (all of a ToR's uplink capacity)")
        return float(raw[i]["share"])
    left = 1 - sum(given)
    if left <= 1e-9:
        raise fail(at + (i, "name"), f"tenant '{raw[i]['name']}' gives no share, and the other tenants' "
                   "shares leave it none: give it a share, or lower theirs")
    return left / (len(raw) - len(given))


def check_phase_hosts(at: DataPath, hosts: tuple[str, ...], tenants: tuple[Tenant, ...], fail: Fail,
                      given: bool) -> None:
    """With tenants, a phase's hosts must be of one tenant (`given`: the phase names its hosts)."""
    if not tenants:
        return
    tenant_of = {h: t for t in tenants for h in t.hosts}
    where = at + ("hosts",) if given else at + ("kind",)
    first = tenant_of.get(hosts[0])
    for host in hosts:
        tenant = tenant_of.get(host)
        if tenant is None:
            raise fail(where, f"'{host}' is in no tenant: with tenants: its ToR denies it, so this phase "
                       "would never complete (give the phase the hosts of one tenant)")
        if tenant is not first:
            raise fail(where, f"its hosts span tenants '{first.name}' ({hosts[0]}) and '{tenant.name}' ({host}), "
                       "which the fabric isolates: give the phase the hosts of one tenant")
