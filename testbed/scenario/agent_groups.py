"""Which host agents share a process, for a run of a scenario on this machine.

One answer for the pre-flight check (`capacity`: each agent process's idle wake-ups) and
`testbed run` (`testbed.emulation.agents` starts them).
"""

from __future__ import annotations


def agent_processes(hosts: list[str], solo: set[str], cores: int, per_process: int | None = None
                    ) -> list[list[str]]:
    """The hosts each agent process of a run runs (`testbed.emulation.agents`), in name order.

    A process may run several hosts' agents in one loop, which wakes once for all of them. Rules:
    the hosts are split into as many groups as there are `cores`, their sizes differing by at most
    one, so every core can serve agents at once; `per_process` caps a group's size (1: a process
    per host, None: no cap); a host in `solo` runs alone (an agent_stall fault stops its agent's
    whole process)."""
    if per_process is not None and per_process < 1:
        raise ValueError(f"agents per process must be at least 1, not {per_process}")
    alone = [[h] for h in sorted(hosts) if h in solo]
    shared = [h for h in sorted(hosts) if h not in solo]
    if not shared:
        return alone
    groups = max(1, min(cores, len(shared)))
    if per_process is not None:
        groups = max(groups, -(-len(shared) // per_process))
    base, extra = divmod(len(shared), groups)
    out, start = [], 0
    for index in range(groups):
        size = base + (1 if index < extra else 0)
        out.append(shared[start:start + size])
        start += size
    return alone + out


def stalled_hosts(scenario) -> set[str]:
    """The hosts an agent_stall fault names: each needs an agent process of its own."""
    return {f.target for f in scenario.faults if f.kind == "agent_stall"}
