"""Whether a valid scenario can run as written: refused at its line when it cannot.

A scenario can pass the schema and every cross-field rule and still be
unable to do what it says. The rules here refuse it at the line to change:

* The run is shorter than one base round trip: no message can be
  acknowledged before it ends.
* A host's messages cannot all leave before the run ends, even alone on the
  fabric: for every message start t, the DATA cells of that host's messages
  starting at t or later, serialised back to back from t at the host's NIC
  rate (all its ports), plus half a base RTT, must end by `duration_s`. The
  bound ignores every other host, so a refusal is certain; passing it does
  not promise the run finishes. Messages between GPUs of one server take
  the local channel and are left out.
* Two values of one variant axis are equal: both variants would write one
  directory and the report would show one of them.
* `switch.target: bmv2` where no usable bmv2 is installed (machine check,
  `machine_problems`).
* A server of `placement.servers` that ssh cannot reach (`server_problems`),
  or servers too few for the fabric's memory (capacity.memory_problem).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict

from testbed.scenario.errors import ScenarioError


def duplicate_variant_values(data: dict, smap) -> None:
    """Refuse a variant axis that lists a value twice, at the second one."""
    for key, values in (data.get("variants") or {}).items():
        seen: dict[str, int] = {}
        for index, value in enumerate(values):
            text = json.dumps(value, sort_keys=True)
            if text in seen:
                raise smap.error(("variants", key, index),
                                 f"{value!r} is listed twice (also at position {seen[text] + 1}): both variants "
                                 "would write one run directory")
            seen[text] = index


def _phase_index(scenario) -> dict[str, int]:
    return {phase.name: i for i, phase in enumerate(scenario.workload) if getattr(phase, "name", None)}


def check_runnable(scenario, messages) -> None:
    """Refuse (ScenarioError at its line) a scenario whose run cannot carry its traffic; `messages`
    are its MessageSpecs (scenario.workload.scenario_messages)."""
    origin = scenario._origin
    if origin is None:
        return
    smap = origin.smap
    duration = scenario.duration_s
    rtt_s = scenario.derived.base_rtt_us / 1e6
    if rtt_s >= duration:
        raise smap.error(("duration_s",), f"is {duration:g} s, shorter than one base round trip "
                         f"({rtt_s:.3f} s at these link rates and delays): nothing can be acknowledged")
    cell = scenario.fabric.cell_size
    wire = scenario.derived.cell_wire_bytes
    topo = scenario.topo
    by_host = defaultdict(list)
    for m in messages:
        if topo.same_server(m.src, m.dst):
            continue
        cells = math.ceil((m.size_bytes + 4) / cell)  # the CRC-32 trailer rides in the last cell
        by_host[m.src].append((m.start_us / 1e6, cells * wire * 8, m))
    phases = _phase_index(scenario)
    for host, sends in by_host.items():
        rate_bps = scenario.links.host.rate_mbps * 1e6 * max(1, len(topo.ports(host)))
        sends.sort(key=lambda s: s[0])
        remaining = sum(bits for _, bits, _ in sends)
        worst = None
        for start, bits, message in sends:
            finish = start + remaining / rate_bps + rtt_s / 2
            if worst is None or finish > worst[0]:
                worst = (finish, start, remaining, message)
            remaining -= bits
        finish, start, bits, message = worst
        if finish > duration:
            index = phases.get(message.collective)
            path = ("workload", index) if index is not None else ("duration_s",)
            raise smap.error(path, f"cannot finish before duration_s {duration:g} s: {host} sends "
                             f"{bits / 8 / 2**20:.2f} MiB on the wire from {start:g} s at "
                             f"{rate_bps / 1e6:g} Mbit/s, the last byte arriving at {finish:.2f} s at the "
                             "earliest; start it earlier, send less or lengthen the run")


def machine_problems(scenario) -> str | None:
    """Why this machine cannot run the scenario's switches as written (None when it can)."""
    from testbed.targets import bmv2_problem

    if scenario.switch.target == "bmv2":
        problem = bmv2_problem()
        if problem:
            return f"is bmv2, which is not usable here: {problem}"
    return None


def server_problems(scenario) -> ScenarioError | None:
    """The first server of placement.servers that cannot be reached, or the servers' memory too
    small for the fabric (it needs more servers than given), at its line; None when neither."""
    from testbed.scenario.capacity import memory_problem
    from testbed.scenario.servers import ServerUnreachable, facts

    if not scenario.servers or scenario._origin is None:
        return None
    smap = scenario._origin.smap
    for i, server in enumerate(scenario.servers):
        try:
            facts(server)
        except ServerUnreachable as error:
            return smap.error(("placement", "servers", i, "address"), str(error))
    problem = memory_problem(scenario)
    if problem is not None:
        return smap.error(("placement", "servers"), problem, key=True)
    return None


__all__ = ["ScenarioError", "check_runnable", "duplicate_variant_values", "machine_problems", "server_problems"]
