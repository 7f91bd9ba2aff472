"""Will this machine hold the fabric at the asked rates? Asked before building it.

A fabric's CPU demand is, to first order, cells per second times the CPU
one cell costs where it is handled: each switch it crosses, and the host
agents at both ends. The rates come from the scenario (every sending host
at its NIC rate, each cell crossing the switches of its longest path, with
its share of ACKs and credits coming back); the per-cell costs are
measured: every run writes what its switches and agents spent per packet,
its fabric and the load the check planned for it (`CALIBRATION_PATH`: runs that
kept real time only, as an overloaded run's figures are the CPU's, not the
fabric's). The check takes each cost from the runs of the same fabric when
there are any, those measured nearest its planned load, the busiest moment's
rates per switch process and per agent process (`calibration`: a slowed run
costs more per packet, and a fat-tree's packet less than a leaf-spine's), and
until a first run has done so the figures measured on this project's 2-core
reference machine stand in. A run that needs more than `HEADROOM` of the
machine's cores is refused before anything is built, with the largest rate that
fits: each rate scale is planned with its own load's costs, and the rate is where
the CPU first exceeds the plan going up from zero (`fitscale`).

A fabric spread over servers (`placement.servers`) is planned server by
server, each against its own cores and memory (`servers.probe`): a server
carries the busy switch work in proportion to the switches it runs and the
agents' work in proportion to the hosts it runs (a host runs where its first
ToR does), plus the idle cost of its own processes; the fabric fits when
every server does, and the largest rate that fits is the lowest of the
servers'. The ssh tunnels' own CPU (a cross-server cable's frames are
encrypted by an ssh process at each end) is not counted. A server whose
share does not fit its memory at any clock means the scenario needs more
servers than it names.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError
from testbed.scenario import calibration
from testbed.scenario.agent_groups import agent_processes, stalled_hosts
from testbed.scenario.fitscale import first_crossing
from testbed.targets import effective_target, packet_path, process_mode

# Share of the cores a run may plan to use: the rest is slack for bursts,
# the kernel's veth work and the controller, so that departures stay on time.
HEADROOM = 0.6
# Measured on the 2-core reference machine, idle otherwise, in the default scenario's runs
# (switch CPU from the agents' start to teardown over the packets its traffic manager took:
# 196-221 us; agents 96 us per datagram sent or received).
# fabric: see docs/architecture.md.  bmv2 (one process per switch) starts from the builtin per-switch
# figure until runs on it measure their own (switch CPU over the packets its program's tx counters
# saw), kept apart from the builtin runs under their own mode.
# The native packet path (engine.c, SCHED_FIFO, 100 us timer slack), measured in runs on the same
# machine: a k=4 fat-tree in one fabric process 7.7-8.1 us, the default leaf-spine with one process
# per switch 36.7 us (each process wakes for its own packets and runs its own control side).
DEFAULT_SWITCH_US_PER_PACKET = {"per_switch": 210.0, "fabric": 125.0, "bmv2": 210.0,
                                "per_switch/native": 37.0, "fabric/native": 8.0}
# Agents in groups (one process per core, testbed.host.group), in quiet runs of default.yaml and
# fattree.yaml at 5 Mbit/s on the same machine: 38-53 us per datagram (57 in default's ECMP
# variant, whose hosts send half as much).
DEFAULT_AGENT_US_PER_DATAGRAM = 45.0
DEFAULT_IDLE_CPU_PER_PROCESS = 0.01  # CPU-s per second a quiet switch process spends
# A quiet switch inside a fabric process (telemetry every 100 ms, its gRPC and control servers):
# the reference machine's figure (docs/measurements.md), used until this machine has runs.
DEFAULT_IDLE_CPU_PER_SWITCH_IN_FABRIC = 0.0014
# An agent process with nothing to send wakes 20 times a second: 0.0022 CPU-s/s measured on a busy
# 2-core machine (a group of hosts' agents wakes once for all its members). It matters for large
# fabrics run with a process per host (128 agents in a k=8 fat-tree).
DEFAULT_IDLE_CPU_PER_AGENT = 0.003
MEMORY_PER_SWITCH_BYTES = 80 << 20  # a switch in a process of its own
# A fabric process: the interpreter, gRPC and the compiled program once, then each switch's
# tables, queues, servers and its real ports' PACKET_MMAP rings (RSS measured: two processes of
# 10 switches of a k=4 fat-tree 135 MiB each, of 40 switches of a k=8 one 524 MiB each).
MEMORY_PER_FABRIC_PROCESS_BYTES = 64 << 20
MEMORY_PER_SWITCH_IN_FABRIC_BYTES = 12 << 20
MEMORY_PER_AGENT_BYTES = 60 << 20


class CapacityError(TestbedError):
    """The fabric does not fit this machine at the asked rates."""


@dataclass(frozen=True)
class Costs:
    switch_us_per_packet: float = DEFAULT_SWITCH_US_PER_PACKET["per_switch"]
    agent_us_per_datagram: float = DEFAULT_AGENT_US_PER_DATAGRAM
    source: str = "reference figures (no run measured on this machine yet)"
    mode: str = "per_switch"  # how the switches run: one process each, or in fabric processes
    # CPU-s/s a switch spends with no traffic, as runs measured it (None: DEFAULT_IDLE_CPU_PER_PROCESS
    # per switch process)
    switch_idle_cpu_per_switch: float | None = None

    def line(self) -> str:
        """The figures and where they came from, as the check prints them."""
        return (f"switches {self.switch_us_per_packet:.3g} us/packet, agents {self.agent_us_per_datagram:.3g} "
                f"us/datagram; from {self.source}")


@dataclass(frozen=True)
class Demand:
    """CPU-seconds per second the fabric needs, and its parts."""

    switch_packets_per_s: float
    agent_datagrams_per_s: float
    processes: int
    cpu: float
    memory_bytes: int


CALIBRATION_PATH = Path(os.environ.get("TESTBED_CALIBRATION", "/run/testbed/calibration.json"))


def calibration_path() -> Path:
    return CALIBRATION_PATH


RECENT_RUNS = 20  # entries kept per mode: enough runs at other loads for calibration.nearest to choose from


def _runs() -> list[dict]:
    try:
        return [r for r in json.loads(calibration_path().read_text())["runs"] if isinstance(r, dict)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def recent_runs(mode: str) -> list[dict]:
    """This machine's calibration entries of switches run in `mode`, the newest RECENT_RUNS, oldest first."""
    return [r for r in _runs() if r.get("mode", "per_switch") == mode][-RECENT_RUNS:]


def scenario_mode(scenario) -> str:
    """How this scenario's switches will run, as the costs are kept: "fabric" or "per_switch"
    (testbed.targets.process_mode) for the builtin target, with "/native" when the native engine
    moves the packets (testbed.targets.packet_path); "bmv2" for bmv2."""
    switch = scenario.switch
    if effective_target(switch.target) == "bmv2":
        return "bmv2"
    mode = process_mode(switch.target, switch.processes)
    if packet_path(switch.target, switch.backend, switch.log_level) == "native":
        mode += "/native"
    return mode


def in_fabric_processes(mode: str) -> bool:
    """Whether `mode` runs the switches in fabric processes."""
    return mode.split("/")[0] == "fabric"


@dataclass(frozen=True)
class Load:
    """A fabric's load as calibration entries record it: per switch process and per agent process
    (None: not known, as for a run whose traffic span could not be read)."""

    switch_packets_per_s_per_process: float | None
    agent_datagrams_per_s_per_process: float | None

    def scaled(self, factor: float) -> "Load":
        switch, agent = self.switch_packets_per_s_per_process, self.agent_datagrams_per_s_per_process
        return Load(None if switch is None else switch * factor, None if agent is None else agent * factor)


def fabric_signature(scenario) -> str:
    """What a calibration entry says its fabric was, and a check matches: the topology's kind and
    its switches and hosts (a scenario's copy under another name matches; another size does not)."""
    topo = scenario.topo
    return f"{scenario.topology.kind} of {len(topo.switches)} switches and {len(topo.hosts)} hosts"


def load_costs(mode: str = "per_switch", load: Load | None = None, fabric: str | None = None) -> Costs:
    """The costs for switches run in `mode` at a planned `load` of a `fabric`: each from this
    machine's recent runs of that fabric (of any, when none was of it), those nearest that load
    (calibration.nearest; without a load, the newest), their count-weighted median, or the
    reference figure where no run measured it."""
    return costs_from(recent_runs(mode), mode, load, fabric)


def costs_from(runs: list[dict], mode: str, load: Load | None, fabric: str | None = None) -> Costs:
    """load_costs over these calibration entries (oldest first)."""
    switch = calibration.figure(runs, calibration.SWITCH, load and load.switch_packets_per_s_per_process, fabric)
    agent = calibration.figure(runs, calibration.AGENT, load and load.agent_datagrams_per_s_per_process, fabric)
    newest = runs[-calibration.NEAREST_RUNS:]
    idle = [float(r["switch_idle_cpu_per_switch"]) for r in newest if r.get("switch_idle_cpu_per_switch") is not None]
    where = f"{mode.replace('_', '-')} switches"
    if switch is None and agent is None:
        return Costs(DEFAULT_SWITCH_US_PER_PACKET[mode], mode=mode,
                     source=f"reference figures for {where} (no run measured on this machine yet)")
    parts = [f.source() if f is not None else f"{who}: the reference figure"
             for f, who in ((switch, "switches"), (agent, "agents"))]
    return Costs(switch.value if switch is not None else DEFAULT_SWITCH_US_PER_PACKET[mode],
                 agent.value if agent is not None else DEFAULT_AGENT_US_PER_DATAGRAM,
                 f"this machine's runs with {where}: {'; '.join(parts)}", mode,
                 statistics.median(idle) if idle else None)


def save_costs(switch_us_per_packet: float | None, agent_us_per_datagram: float | None, source: str,
               mode: str = "per_switch", switch_idle_cpu_per_switch: float | None = None,
               switch_packets: int | None = None, agent_datagrams: int | None = None,
               load: Load | None = None, fabric: str | None = None) -> None:
    """Keep a run's measured costs (None: not measured), the counts they were measured over (their
    weights in load_costs), the load they were measured at and the fabric they were measured on
    (which plans they serve)."""
    kept = {m: recent_runs(m) for m in DEFAULT_SWITCH_US_PER_PACKET}
    kept[mode] = (kept[mode] + [{"switch_us_per_packet": switch_us_per_packet,
                                 "agent_us_per_datagram": agent_us_per_datagram,
                                 "switch_idle_cpu_per_switch": switch_idle_cpu_per_switch, "from": source,
                                 "mode": mode, "switch_packets": switch_packets,
                                 "agent_datagrams": agent_datagrams, "fabric": fabric,
                                 "switch_packets_per_s_per_process": load and load.switch_packets_per_s_per_process,
                                 "agent_datagrams_per_s_per_process":
                                     load and load.agent_datagrams_per_s_per_process}])[-RECENT_RUNS:]
    try:
        calibration_path().parent.mkdir(parents=True, exist_ok=True)
        calibration_path().write_text(json.dumps({"runs": [r for m in kept.values() for r in m]}, indent=1))
    except OSError:
        pass  # a read-only place only means the reference figures stay in use


def rates(scenario, rate_scale: float = 1.0) -> tuple[float, float]:
    """(switch packets/s, agent datagrams/s) of the scenario's busiest moment at `rate_scale`."""
    topo = scenario.topo
    derived = scenario.derived
    # A dual-homed host sends on both NIC ports at once (testbed/host/nic.py): twice the cells.
    nic_ports = 2 if getattr(scenario.topology, "dual_homed", False) else 1
    cells_per_host = nic_ports * scenario.links.host.rate_mbps * 1e6 * rate_scale / (derived.cell_wire_bytes * 8)
    # Hosts sending at their NIC rate at once in the busiest phase; a receiver-paced
    # transport (tita) cannot send more than its receivers' links take.
    paced = scenario.transport.cc == "tita"
    busy = max((_busy_hosts(phase, paced) for phase in scenario.workload), default=0) or len(topo.hosts)
    switch_hops = derived.path_host_links + derived.path_fabric_links - 1
    # Per DATA cell, the answers that cross the fabric back: an ACK every
    # ack_every (4) cells, and with credits one credit per cell.
    answers = 0.25 + (1.0 if scenario.fabric.credits.enabled else 0.0)
    cells = busy * cells_per_host * (1 + answers)
    switch_packets = cells * switch_hops
    agent_datagrams = 2 * cells  # sent at one end, received at the other
    if scenario.links.local is not None and topo.local_links:
        # a GPU's local channel: its agent may also send (and its peers receive) at the channel's
        # rate, with the ACKs back; no switch sees these
        local_cells = scenario.links.local.rate_mbps * 1e6 * rate_scale / (derived.cell_wire_bytes * 8)
        agent_datagrams += 2 * busy * local_cells * 1.25
    return switch_packets, agent_datagrams


def switch_processes(scenario, mode: str) -> int:
    """The switch processes a run of the scenario starts in `mode`."""
    return auto_fabric_processes() if in_fabric_processes(mode) else len(scenario.topo.switches)


def planned_load(scenario, mode: str, rate_scale: float = 1.0) -> Load:
    """The busiest moment's rates per switch process and per agent process (the hosts shared out as a
    run shares them by default, `agent_groups`), as calibration entries record a run's load."""
    switch_packets, agent_datagrams = rates(scenario, rate_scale)
    agents = len(agent_processes(scenario.topo.hosts, stalled_hosts(scenario), machine_cores())) or 1
    return Load(switch_packets / switch_processes(scenario, mode), agent_datagrams / agents)


def demand(scenario, costs: Costs, rate_scale: float = 1.0) -> Demand:
    """What the scenario's busiest moment asks of the CPU at `rate_scale`, at the given costs."""
    topo = scenario.topo
    switch_packets, agent_datagrams = rates(scenario, rate_scale)
    processes = len(topo.hosts) + switch_processes(scenario, costs.mode)
    idle = _idle_cpu(scenario, costs)
    cpu = (switch_packets * costs.switch_us_per_packet + agent_datagrams * costs.agent_us_per_datagram) / 1e6
    cpu += idle
    return Demand(switch_packets, agent_datagrams, processes, cpu, memory_need(topo, costs.mode))


class CostModel:
    """The costs a scenario is planned with at each rate scale: the `fixed` costs when given, else
    this machine's calibration at that scale's planned load (load_costs), which changes only at
    `steps()`."""

    def __init__(self, scenario, fixed: Costs | None = None) -> None:
        self.fixed = fixed
        self.mode = fixed.mode if fixed is not None else scenario_mode(scenario)
        self.load = planned_load(scenario, self.mode)
        self.fabric = fabric_signature(scenario)
        self.runs = [] if fixed is not None else recent_runs(self.mode)

    def at(self, rate_scale: float = 1.0) -> Costs:
        if self.fixed is not None:
            return self.fixed
        return costs_from(self.runs, self.mode, self.load.scaled(rate_scale), self.fabric)

    def steps(self) -> list[float]:
        """The rate scales at which the chosen runs can change (calibration.turning_loads)."""
        out = []
        for kind, load in ((calibration.SWITCH, self.load.switch_packets_per_s_per_process),
                           (calibration.AGENT, self.load.agent_datagrams_per_s_per_process)):
            if load:
                out += [at / load for at in calibration.turning_loads(
                    calibration.of_fabric(self.runs, kind, self.fabric), kind)]
        return out


def memory_need(topo, mode: str, cores: int | None = None) -> int:
    """Bytes the fabric's switch processes and host agents take (the per-process figures above)."""
    return _memory(len(topo.switches), len(topo.hosts), mode, cores)


def _memory(switches: int, hosts: int, mode: str, cores: int | None = None) -> int:
    if not in_fabric_processes(mode):
        memory = switches * MEMORY_PER_SWITCH_BYTES
    else:
        memory = (min(switches, auto_fabric_processes(cores)) * MEMORY_PER_FABRIC_PROCESS_BYTES
                  + switches * MEMORY_PER_SWITCH_IN_FABRIC_BYTES)
    return memory + hosts * MEMORY_PER_AGENT_BYTES


@dataclass(frozen=True)
class Share:
    """What one machine runs of the fabric: this machine alone, or one of placement.servers."""

    name: str
    cores: int
    memory_bytes: int
    switches: int
    hosts: int
    switch_fraction: float  # of all the switches, as the busy switch work is shared
    host_fraction: float  # of all the hosts, as the agents' work is shared


def shares(scenario, cores: int | None = None) -> list[Share]:
    """Each machine's part: one share for this machine, or one per placement.servers entry (their
    cores and memory probed over ssh; `cores`, when given, stands in for every server's)."""
    topo = scenario.topo
    if not scenario.servers:
        return [Share("this machine", cores or machine_cores(), machine_memory_bytes(), len(topo.switches),
                      len(topo.hosts), 1.0, 1.0)]
    from testbed.scenario.servers import facts, server_hosts, server_switches

    switches = server_switches(scenario)
    hosts = server_hosts(scenario, switches)
    out = []
    for server, mine, theirs in zip(scenario.servers, switches, hosts):
        known = facts(server)
        out.append(Share(f"server {server.name} ({server.login})", cores or known.cores, known.memory_bytes,
                         len(mine), len(theirs), len(mine) / len(topo.switches), len(theirs) / len(topo.hosts)))
    return out


def memory_problem(scenario, mode: str | None = None) -> str | None:
    """Why the fabric does not fit in this machine's memory at any clock (None when it does); over
    servers, why it needs more servers than it names."""
    mode = mode or scenario_mode(scenario)
    if scenario.servers:
        return _servers_memory_problem(scenario, mode)
    memory = machine_memory_bytes()
    need = memory_need(scenario.topo, mode)
    if not memory or need <= memory:
        return None
    return (f"{len(scenario.topo.switches)} switches and {len(scenario.topo.hosts)} hosts need about "
            f"{need / 2**30:.1f} GiB of memory and {memory / 2**30:.1f} GiB is available (memory, not CPU, "
            f"decides; no slower clock helps): {largest_fitting(scenario, mode, memory)}")


def _servers_memory_problem(scenario, mode: str) -> str | None:
    parts = shares(scenario)
    needs = [_memory(part.switches, part.hosts, mode, part.cores) for part in parts]
    for part, need in zip(parts, needs):
        if part.memory_bytes and need > part.memory_bytes:
            total = sum(needs)
            smallest = min(p.memory_bytes for p in parts if p.memory_bytes)
            return (f"needs more servers than the {len(parts)} given: {part.name} runs {part.switches} switches "
                    f"and {part.hosts} hosts, about {need / 2**30:.1f} GiB of memory, and has "
                    f"{part.memory_bytes / 2**30:.1f} GiB available; the fabric needs about "
                    f"{total / 2**30:.1f} GiB in all, at least {math.ceil(total / smallest)} servers like "
                    "the smallest")
    return None


def largest_fitting(scenario, mode: str, memory: int) -> str:
    """The largest fabric of the scenario's shape that fits in `memory` bytes: a smaller k for a
    fat-tree, fewer leaves for a leaf-spine, every other setting kept; or that none does."""
    import dataclasses

    from testbed.topo import TopoError, build_topology

    spec = scenario.topology
    field, start, step = ("k", spec.k - 2, 2) if spec.kind == "fat_tree" else ("leaves", spec.leaves - 1, 1)
    for value in range(start, 1, -step):
        try:
            smaller = dataclasses.replace(spec, **{field: value})
            topo = build_topology(smaller)
        except (TopoError, ValueError):  # a size this shape does not allow (dual-homing, rails): the next
            continue
        if memory_need(topo, mode) <= memory:
            return (f"the largest that fits is {field} {value} ({len(topo.switches)} switches, "
                    f"{len(topo.hosts)} hosts, about {memory_need(topo, mode) / 2**30:.1f} GiB)")
    return f"no smaller {field} of this shape fits either"


def _idle_cpu(scenario, costs: Costs) -> float:
    """CPU-s/s the fabric's processes spend with no traffic at all: per switch as runs on this
    machine measured it, else the reference figure per switch process, or per switch of a fabric
    process (its telemetry, servers and control ticks grow with the switches it holds); and each
    agent process's quiet wake-ups (as a run shares the hosts out, `agent_groups`)."""
    processes = agent_processes(scenario.topo.hosts, stalled_hosts(scenario), machine_cores())
    agents = len(processes) * DEFAULT_IDLE_CPU_PER_AGENT
    switches = len(scenario.topo.switches)
    if costs.switch_idle_cpu_per_switch is not None:
        return switches * costs.switch_idle_cpu_per_switch + agents
    if in_fabric_processes(costs.mode):
        return switches * DEFAULT_IDLE_CPU_PER_SWITCH_IN_FABRIC + agents
    return switches * DEFAULT_IDLE_CPU_PER_PROCESS + agents


def _busy_hosts(phase, paced: bool) -> int:
    """Hosts of the phase sending at once at worst: into one receiver (incast, a stream whose
    messages overlap) a paced transport sends no faster than that receiver's link takes; every
    selected host of the other kinds (poisson: each host offers load of its own)."""
    if phase.kind == "pingall":
        return 0
    if phase.kind in ("incast", "stream"):
        return 1 if paced else len(phase.senders)
    return len(phase.hosts)


def auto_fabric_processes(cores: int | None = None) -> int:
    """`switch.processes: auto`: one fabric process per two cores, the other half left to the host
    agents. Measured on 2 cores (k=4 permutation at 0.267 Mbit/s, fidelity kept in both): one
    process spent 210-233 us of switch CPU per cell-hop, two processes 270-285 us (8 cables cross
    between them as veths, and two busy loops leave the agents no core of their own)."""
    return max(1, (cores or machine_cores()) // 2)


def machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except OSError:
        return os.cpu_count() or 1


def machine_memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def fitting_rate(scenario, costs: Costs | None = None, cores: int | None = None) -> float:
    """The host link rate (Mbit/s) up to which every slower rate fits the plan, each rate scale
    planned with its own load's costs (fitscale.first_crossing; 0: none); over servers, the lowest
    of the servers' rates."""
    model = CostModel(scenario, costs)
    if scenario.servers:
        return min(_server_fit(scenario, model, part) for part in shares(scenario, cores))
    budget = (cores or machine_cores()) * HEADROOM

    def cpu_at(scale: float) -> tuple[float, float]:
        at = model.at(scale)
        idle = _idle_cpu(scenario, at)
        return demand(scenario, at, scale).cpu - idle, idle

    return first_crossing(cpu_at, model.steps(), budget) * scenario.links.host.rate_mbps


def server_cpu(scenario, costs: Costs, part: Share, rate_scale: float = 1.0) -> tuple[float, float]:
    """(busy, idle) CPU-s/s of one server's part: the busy switch and agent work in proportion to
    its switches and hosts, the idle cost of its own processes."""
    need = demand(scenario, costs, rate_scale)
    busy = (part.switch_fraction * need.switch_packets_per_s * costs.switch_us_per_packet
            + part.host_fraction * need.agent_datagrams_per_s * costs.agent_us_per_datagram) / 1e6
    agents = part.hosts * DEFAULT_IDLE_CPU_PER_AGENT
    if costs.switch_idle_cpu_per_switch is not None:
        idle = part.switches * costs.switch_idle_cpu_per_switch + agents
    else:
        processes = min(part.switches, auto_fabric_processes(part.cores)) if in_fabric_processes(costs.mode) \
            else part.switches
        idle = processes * DEFAULT_IDLE_CPU_PER_PROCESS + agents
    return busy, idle


def _server_fit(scenario, model: CostModel, part: Share) -> float:
    return first_crossing(lambda scale: server_cpu(scenario, model.at(scale), part, scale), model.steps(),
                          part.cores * HEADROOM) * scenario.links.host.rate_mbps


def _check_servers(scenario, model: CostModel, cores: int | None) -> str:
    """check() over placement.servers: each server against its own cores."""
    costs = model.at(1.0)
    where = f"{scenario.file}: " if scenario.file else ""
    problem = memory_problem(scenario, costs.mode)
    if problem is not None:
        raise CapacityError(f"{where}{problem}")
    rate = scenario.links.host.rate_mbps
    lines = []
    for part in shares(scenario, cores):
        busy, idle = server_cpu(scenario, costs, part)
        budget = part.cores * HEADROOM
        if busy + idle > budget:
            fits = fitting_rate(scenario, model.fixed, cores)
            advice = (f"the largest host link rate every server holds is about {fits:.2g} Mbit/s" if fits > 0
                      else "even its idle processes do not fit: choose a smaller fabric or more servers")
            raise CapacityError(
                f"{where}{part.name} runs {part.switches} switches and {part.hosts} hosts, which need about "
                f"{busy + idle:.2f} CPU-s/s at {rate:g} Mbit/s, and it plans for {budget:.2f} ({part.cores} "
                f"cores x {HEADROOM:g}); {advice} (costs at {rate:g} Mbit/s: {costs.line()}); "
                "`testbed run --fit` slows the whole scenario to it, `--force` runs it as it is")
        lines.append(f"{part.name} {busy + idle:.2f} of {budget:.2f} ({part.cores} cores x {HEADROOM:g})")
    return f"capacity: needs about {'; '.join(lines)} CPU-s/s planned (costs: {costs.line()})"


def check(scenario, costs: Costs | None = None, cores: int | None = None) -> str:
    """One line on whether the fabric fits, with the costs it was planned with and where they came
    from; raises CapacityError when it does not. Without `costs`, this machine's calibration at the
    scenario's planned load."""
    model = CostModel(scenario, costs)
    if scenario.servers:
        return _check_servers(scenario, model, cores)
    costs = model.at(1.0)
    cores = cores or machine_cores()
    need = demand(scenario, costs)
    budget = cores * HEADROOM
    rate = scenario.links.host.rate_mbps
    where = f"{scenario.file}: " if scenario.file else ""
    problem = memory_problem(scenario, costs.mode)
    if problem is not None:
        raise CapacityError(f"{where}{problem}")
    if need.cpu > budget:
        fits = fitting_rate(scenario, model.fixed, cores)
        advice = (f"the largest host link rate that fits is about {fits:.2g} Mbit/s" if fits > 0
                  else "even its idle processes do not fit: choose a smaller fabric")
        raise CapacityError(
            f"{where}this fabric needs about {need.cpu:.2f} CPU-s/s at {rate:g} Mbit/s "
            f"({need.switch_packets_per_s:,.0f} switch packets/s, {need.agent_datagrams_per_s:,.0f} agent "
            f"datagrams/s) and this machine plans for {budget:.2f} ({cores} cores x {HEADROOM:g}); {advice} "
            f"(costs at {rate:g} Mbit/s: {costs.line()}); `testbed run --fit` slows the whole scenario to it, "
            "`--force` runs it as it is")
    return (f"capacity: needs about {need.cpu:.2f} of {budget:.2f} CPU-s/s planned "
            f"({cores} cores x {HEADROOM:g}; costs: {costs.line()})")
