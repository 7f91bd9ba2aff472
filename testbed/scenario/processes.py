"""Which process runs which switch, for a scenario on this machine.

One answer for `testbed show` and `testbed run`: None when every switch runs
in a process of its own (bmv2, or `switch.processes: per_switch`), else the
builtin switches' placement over fabric processes (`testbed.topo.partition`):
`auto` is one process per two cores (capacity.auto_fabric_processes says why). A cable that a fault takes down stays a veth
pair even inside a process, since faults act on interfaces.

A scenario with `placement.servers` is placed server by server
(`testbed.topo.partition.place_on_servers`): each server's switches
(`servers.server_switches`) in its own fabric processes, `auto` being one
per two of that server's cores, `N` shared out over the servers in
proportion to their switches (at least one each).
"""

from __future__ import annotations

from testbed.scenario.capacity import auto_fabric_processes, in_fabric_processes, scenario_mode
from testbed.topo.partition import Placement, place, place_on_servers


def switch_placement(scenario, cores: int | None = None, server_cores: list[int] | None = None
                     ) -> Placement | None:
    """`server_cores`: each server's cores, for a scenario with placement.servers (None: probed)."""
    fabric = in_fabric_processes(scenario_mode(scenario))
    faulted = frozenset(f.target for f in scenario.faults if f.kind in ("link_down", "link_up", "link_flap"))
    restarted = frozenset(f.target for f in scenario.faults if f.kind == "switch_restart")
    processes = scenario.switch.processes
    if scenario.servers:
        from testbed.scenario.servers import facts, server_switches

        switches = server_switches(scenario)
        if not fabric:
            counts = [None] * len(switches)
        elif processes == "auto":
            cores_each = server_cores or [facts(server).cores for server in scenario.servers]
            counts = [auto_fabric_processes(c) for c in cores_each]
        else:
            counts = shares(int(processes), [len(group) for group in switches])
        return place_on_servers(scenario.topo, switches, counts, veth_links=faulted, alone=restarted)
    if not fabric:
        return None
    count = auto_fabric_processes(cores) if processes == "auto" else int(processes)
    return place(scenario.topo, count, veth_links=faulted, alone=restarted)


def shares(total: int, sizes: list[int]) -> list[int]:
    """`total` split in proportion to `sizes`, at least one each (largest remainders first)."""
    whole = sum(sizes)
    exact = [max(1.0, total * size / whole) for size in sizes]
    out = [int(x) for x in exact]
    for i in sorted(range(len(sizes)), key=lambda i: exact[i] - out[i], reverse=True)[:max(0, total - sum(out))]:
        out[i] += 1
    return out


def describe_placement(scenario, placement: Placement | None) -> str:
    """One line per process, and how many cables are in memory."""
    if placement is None:
        return f"switch processes: one per switch ({len(scenario.topo.switches)})"
    if placement.server_of:
        cross = placement.cross_server(scenario.topo)
        lines = [f"servers: {len(scenario.servers)}, {len(cross)} switch cables between servers (tunnelled)"]
        for i, server in enumerate(scenario.servers):
            mine = [g for g, owner in zip(placement.groups, placement.server_of) if owner == i]
            lines.append(f"  {server.name} ({server.login}): {len(mine)} process(es), "
                         f"{sum(len(g) for g in mine)} switches: " + "; ".join(", ".join(g) for g in mine))
        return "\n".join(lines)
    cables = sum(1 for link in scenario.topo.links if link.tier == "fabric")
    lines = [f"switch processes: {len(placement.groups)} fabric process(es), {len(placement.in_memory)} of "
             f"{cables} switch cables in memory, {placement.cut(scenario.topo)} between processes"]
    lines += [f"  fabric{i}: {', '.join(group)}" for i, group in enumerate(placement.groups)]
    return "\n".join(lines)
