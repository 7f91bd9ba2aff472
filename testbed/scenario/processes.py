"""Which process runs which switch, for a scenario on this machine.

One answer for `testbed show` and `testbed run`: None when every switch runs
in a process of its own (bmv2, or `switch.processes: per_switch`), else the
builtin switches' placement over fabric processes (`testbed.topo.partition`):
`auto` is one process per two cores (capacity.auto_fabric_processes says why). A cable that a fault takes down stays a veth
pair even inside a process, since faults act on interfaces.
"""

from __future__ import annotations

from testbed.scenario.capacity import auto_fabric_processes, in_fabric_processes, scenario_mode
from testbed.topo.partition import Placement, place


def switch_placement(scenario, cores: int | None = None) -> Placement | None:
    if not in_fabric_processes(scenario_mode(scenario)):
        return None
    processes = scenario.switch.processes
    count = auto_fabric_processes(cores) if processes == "auto" else int(processes)
    faulted = frozenset(f.target for f in scenario.faults if f.kind in ("link_down", "link_up", "link_flap"))
    restarted = frozenset(f.target for f in scenario.faults if f.kind == "switch_restart")
    return place(scenario.topo, count, veth_links=faulted, alone=restarted)


def describe_placement(scenario, placement: Placement | None) -> str:
    """One line per process, and how many cables are in memory."""
    if placement is None:
        return f"switch processes: one per switch ({len(scenario.topo.switches)})"
    cables = sum(1 for link in scenario.topo.links if link.tier == "fabric")
    lines = [f"switch processes: {len(placement.groups)} fabric process(es), {len(placement.in_memory)} of "
             f"{cables} switch cables in memory, {placement.cut(scenario.topo)} between processes"]
    lines += [f"  fabric{i}: {', '.join(group)}" for i, group in enumerate(placement.groups)]
    return "\n".join(lines)
