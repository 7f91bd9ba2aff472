"""One variant of a scenario, from nothing to results and back to nothing.

Order: manifest first, then the Mininet network,
the switch processes (in parallel, readiness polled), the controller
(pipelines and plans, in parallel), a ping-all check, the host agents, and
telemetry throughout.  Teardown runs whatever happened: from a `with`
block, and from SIGTERM/SIGINT turned into an exception.  A run that is
killed with -9 leaves its manifest for `testbed clean`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testbed import progress
from testbed.control.apply import apply_tm, build_pipeline_config, configure_all, configure_switch
from testbed.control.p4runtime_client import P4RuntimeClient
from testbed.control.plan import plan_fabric
from testbed.control.tenants import tenant_of_host
from testbed.telemetry.live import host_readings
from testbed.emulation.agents import AgentSet, AgentStartError, namespace_file
from testbed.emulation.cluster import Runner, check_shared, control_directory, server_address
from testbed.emulation.cluster_network import ClusterNetwork
from testbed.emulation.costs import IdlePeriod, measure_costs, process_cpu_s
from testbed.emulation.machine_load import MachineLoad
from testbed.emulation.faults import FaultError, FaultRunner, plan_faults
from testbed.emulation.manifest import Manifest
from testbed.emulation import pinger
from testbed.emulation.packet_path import choose as choose_packet_path
from testbed.emulation.network import FabricNetwork, Pacing, host_interface, interface_names, run_in, switch_interface
from testbed.emulation.realtime import AGENT_RT_PRIORITY, ENGINE_THREAD, make_realtime
from testbed.emulation.reroute import RerouteController
from testbed.emulation.runlock import hold_run_lock
from testbed.emulation.switches import (FabricProcess, SwitchConfig, SwitchProcess, log_tail, resolve_target,
                                        start_all)
from testbed.scenario.workload import peers_document, scenario_messages
from testbed.errors import TestbedError
from testbed.scenario import capacity
from testbed.scenario.agent_groups import agent_processes, stalled_hosts
from testbed.scenario.processes import switch_placement
from testbed.p4model.certs import RunCertificates, make_run_certificates
from testbed.p4model.telemetry import INTERVAL_S as TELEMETRY_PERIOD_S
from testbed.p4model.tls import ClientTls
from testbed.targets import BMV2_BINARY, bmv2_problem
from testbed.telemetry.live.collector import Collector
from testbed.telemetry.summary import fidelity_threshold_us
from testbed.topo.entropy import layout_of
from testbed.topo.partition import Placement

CPU_PORT = 255
ENTROPY_SCHEMES = ("spray_rr_entropy", "spray_random_entropy")  # senders choose the path digits
AGENT_MARGIN_S = 30.0


def refuse_servers(scenario) -> None:
    """What a fabric over several servers (placement.servers) cannot do, refused in one line before
    anything starts: faults (they act on this machine's interfaces, processes and namespaces), a
    host whose ToRs are placed on different servers (its cables would cross between machines), and
    what validate refuses (feasibility.server_problems: a server ssh cannot reach now, servers too
    few for the fabric's memory)."""
    if not scenario.servers:
        return
    if scenario.faults:
        raise TestbedError(f"{scenario.file}: faults: a fabric over several servers (placement.servers) runs "
                           "without faults; drop the faults section or the placement section")
    from testbed.scenario.servers import server_switches

    where = {name: i for i, group in enumerate(server_switches(scenario)) for name in group}
    for host in scenario.topo.hosts:
        tors = scenario.topo.tors_of(host)
        if len({where[t] for t in tors}) > 1:
            raise TestbedError(f"{scenario.file}: placement.servers: host {host} plugs into {', '.join(tors)}, "
                               "placed on different servers; place a host's ToRs on one server "
                               "(placement.servers[].switches)")
    from testbed.scenario.feasibility import server_problems

    problem = server_problems(scenario)
    if problem is not None:
        raise problem


class RunError(TestbedError):
    """A run that could not complete; names the step and the evidence."""


def _refuse_existing_interfaces(names: list[str]) -> None:
    """A name this run would create that already exists here belongs to someone else (an earlier
    run killed before it cleaned, or a run beside this one): refuse before the manifest records it,
    so neither this run nor `testbed clean` ever touches an interface this run did not make."""
    taken = [name for name in names if Path(f"/sys/class/net/{name}").exists()]
    if taken:
        shown = ", ".join(taken[:3]) + (f" and {len(taken) - 3} more" if len(taken) > 3 else "")
        raise RunError(f"interface {shown} already exists on this machine: another run made it "
                       "('testbed clean' removes what a killed run left)")


class Interrupted(RunError):
    pass


def _raise_interrupted(signum, frame):
    raise Interrupted(f"run interrupted by signal {signal.Signals(signum).name}")


@dataclass
class RunResult:
    variant: str
    run_dir: Path
    target: str
    packet_path: str = "python"  # builtin target: native (the native engine) or python
    pingall: dict = field(default_factory=dict)
    agents: dict = field(default_factory=dict)  # host -> exit code
    notes: list[str] = field(default_factory=list)
    tm_stats: dict = field(default_factory=dict)  # switch -> traffic-manager statistics
    host_counters: dict = field(default_factory=dict)  # "before"/"after" -> host -> qdisc and UDP counters
    scheduling: str = "normal"  # realtime: every switch ran under SCHED_FIFO
    switch_cpu_s: dict = field(default_factory=dict)  # switch process -> CPU seconds, traffic start to teardown
    costs: dict = field(default_factory=dict)  # CPU per switch packet and per agent datagram
    switch_processes: dict = field(default_factory=dict)  # process -> its switches; links in memory
    restarts: list = field(default_factory=list)  # switches a fault stopped (their counters started again)
    failed: str | None = None  # why the run stopped before its traffic ended (one line), None if it did not
    faults_not_executed: list = field(default_factory=list)  # planned faults that never ran, with why
    tunnels: dict = field(default_factory=dict)  # placement.servers: cable -> its tunnel's measured delay


def _one_line(error: BaseException) -> str:
    """What stopped a run, in one line: a TestbedError's own sentence, else its type and first line."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, TestbedError):
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class VariantRun:
    """Runs one variant in `run_dir`; use as a context manager or call run()."""

    def __init__(self, variant, run_dir: Path, repo_root: Path, progress=print,
                 agents_per_process: int | None = None) -> None:
        self.variant = variant
        self.scenario = variant.scenario
        self.run_dir = run_dir
        self.repo_root = repo_root
        self.progress = progress
        self.manifest = Manifest(run_id=f"{self.scenario.name}-{run_dir.name}-{os.getpid()}",
                                 path=run_dir / "manifest.json")
        self.manifest.claim()  # this process: `testbed clean` leaves the run alone while it lives
        self.network: FabricNetwork | None = None
        self.placement: Placement | None = None  # fabric processes (builtin); None: one process per switch
        self.runners: list[Runner] = []  # placement.servers: one per server, in its order
        self.switch_server: dict[str, int] = {}  # placement.servers: switch -> its server's index
        self._control_dir: Path | None = None  # placement.servers: the shared ssh connections' sockets
        self._addresses: list[str] = []  # placement.servers: where the controller reaches each server
        self.switches: list[SwitchConfig] = []
        self.processes: list[SwitchProcess | FabricProcess] = []
        self.clients: dict[str, P4RuntimeClient] = {}
        self.certificates: RunCertificates | None = None  # switch.control_tls: made in _start_switches
        self.agents: AgentSet | None = None  # the host agents' processes, from the traffic's start
        self.agents_per_process = agents_per_process  # None: as agent_processes splits them
        self.collector: Collector | None = None
        self.faults: FaultRunner | None = None
        self.reroute: RerouteController | None = None
        self.plans: dict = {}
        self.pipeline_config = None
        self.packet_path = "python"  # builtin switches: native or python (emulation/packet_path.py)
        self.result = RunResult(variant.name, run_dir, target="")
        self._cpu_at_traffic: dict[str, float] = {}  # switch CPU seconds when the agents started
        self._traffic_started = 0.0  # time.monotonic() then
        self._machine_load: MachineLoad | None = None  # the machine's CPU ticks from the traffic's start
        self._idle: IdlePeriod | None = None  # the switches' CPU before the first message

    # -- the steps ---------------------------------------------------------------
    def run(self) -> RunResult:
        refuse_servers(self.scenario)
        with hold_run_lock(f"scenario {self.scenario.name}, {self.run_dir}"):
            return self._run()

    def _run(self) -> RunResult:
        previous = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._prepare()
            self._build_network()
            self._start_switches()
            self._configure()
            self._pingall()
            self._traffic()
        except BaseException as error:  # result.json says the run failed, so no report reads it as whole
            self.result.failed = _one_line(error)
            raise
        finally:
            try:
                self.teardown()
            finally:
                for s, handler in previous.items():
                    signal.signal(s, handler)
        return self.result

    def _prepare(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "scenario.resolved.yaml").write_text(
            yaml.safe_dump(self.scenario.to_dict(), sort_keys=False))
        self.result.target = resolve_target(self.scenario.switch.target)
        if self.scenario.switch.target == "auto" and shutil.which(BMV2_BINARY):
            problem = bmv2_problem()
            if problem:
                self.result.notes.append(f"switch.target auto chose builtin: bmv2 is on PATH, but {problem}")
        if self.result.target == "builtin":
            self.packet_path, note = choose_packet_path(self.scenario)
            self.result.packet_path = self.packet_path
            if note:
                self.result.notes.append(note)
        topology = self.scenario.topo
        self.placement = self._place()
        if self.scenario.servers:
            self._reach_servers()
            return
        names = interface_names(topology, self._in_memory())
        _refuse_existing_interfaces(names)
        self.manifest.plan_interfaces(names)

    def _reach_servers(self) -> None:
        """placement.servers: a runner per server (one shared ssh connection each), every other
        server named in the manifest before anything is made there, and each seen to share the run
        directory and the repository (emulation/cluster.py)."""
        from testbed.scenario.servers import server_switches

        config = os.environ.get("TESTBED_SSH_CONFIG")
        control = self._control_dir = control_directory(self.run_dir)
        self.manifest.ssh_control_dir = str(control)
        self.runners = [Runner(server, control, config) for server in self.scenario.servers]
        for runner in self.runners:
            if not runner.local:
                self.manifest.add_server(runner.server, config)
        self.switch_server = {name: i for i, group in enumerate(server_switches(self.scenario)) for name in group}
        check_shared(self.runners, self.run_dir, self.repo_root, sys.executable)
        self._addresses = [server_address(r) for r in self.runners]

    def _remote(self, index: int) -> str | None:
        """The manifest's key of server `index`: its login, None for this machine."""
        runner = self.runners[index]
        return None if runner.local else runner.server.login

    def _place(self) -> Placement | None:
        """Fabric processes for the builtin target (topo.partition); bmv2 runs one per switch."""
        if self.result.target != "builtin":
            if isinstance(self.scenario.switch.processes, int):
                self.result.notes.append("switch.processes is ignored: bmv2 runs one process per switch")
            return None
        return switch_placement(self.scenario)

    def _cost_mode(self) -> str:
        """The capacity check's name for how these switches ran (scenario.capacity.scenario_mode)."""
        if self.result.target == "bmv2":
            return "bmv2"
        mode = "per_switch" if self.placement is None else "fabric"
        return mode + "/native" if self.packet_path == "native" else mode

    def _in_memory(self) -> frozenset[str]:
        return self.placement.in_memory if self.placement is not None else frozenset()

    def _build_network(self) -> None:
        self.progress(f"building the network: {self.scenario.topo.counts.switches} switches, "
                      f"{self.scenario.topo.counts.hosts} hosts")
        local = self.scenario.links.local
        local_pacing = Pacing(local.rate_mbps) if local is not None else None
        if self.runners:
            self._build_cluster_network(local_pacing)
            return
        self.network = FabricNetwork(self.scenario.topo, Pacing(self.scenario.links.host.rate_mbps),
                                     self._in_memory(), local_pacing=local_pacing)
        self.network.build(on_host=lambda name, pid: self.manifest.add_process(pid, f"host {name}",
                                                                             ["mininet host", name]))

    def _build_cluster_network(self, local_pacing) -> None:
        """Every server's part (emulation/cluster_network.py), recorded in the manifest first; then each
        tunnel's delay measured before any switch opens it."""
        (self.run_dir / "logs").mkdir(exist_ok=True)
        network = self.network = ClusterNetwork(self.scenario.topo, Pacing(self.scenario.links.host.rate_mbps),
                                                self._in_memory(), local_pacing, self.runners, self.switch_server,
                                                tag=str(os.getpid()))
        for index, part in network.server_parts().items():
            self.manifest.plan_namespaces(part["namespaces"], self._remote(index))
            self.manifest.plan_interfaces(part["interfaces"], self._remote(index))
        self.progress(f"{len(self.runners)} servers, {len(network.tunnels)} cables between them in ssh tunnels")
        network.build(on_tunnel=lambda index, pid, start, argv: self.manifest.add_process(
            pid, "tunnel", argv, self._remote(index), start), log_dir=self.run_dir / "logs")
        self.result.tunnels = network.measure_tunnels(self.repo_root)

    def _switch_config(self, name: str, role_config: Path | None = None) -> SwitchConfig:
        topology = self.scenario.topo
        node = topology.node(name)
        switch = self.scenario.switch
        in_memory = self._in_memory()
        return SwitchConfig(
            name=name, target=self.result.target, device_id=node.device_id, grpc_port=node.grpc_port,
            thrift_port=node.thrift_port,
            ports={p.number: switch_interface(name, p.number) for p in topology.ports(name)
                   if p.link not in in_memory},
            log_file=self.run_dir / "logs" / f"{name}.log", cpu_port=CPU_PORT,
            telemetry_file=self.run_dir / "logs" / f"{name}.telemetry.jsonl",
            telemetry_interval_s=TELEMETRY_PERIOD_S * self.scenario.time_stretch,
            priority_queues=switch.priority_queues,
            pcap_dir=self.run_dir / "pcap" / name if switch.pcap else None, log_level=switch.log_level,
            backend=self.packet_path,
            memory_links={p.number: (p.peer, p.peer_port, switch_interface(name, p.number))
                          for p in topology.ports(name) if p.link in in_memory},
            address=self._addresses[self.switch_server[name]] if self.runners else "127.0.0.1",
            tls=self.certificates.server if self.certificates is not None else None, role_config=role_config)

    def _client_tls(self, name: str) -> ClientTls | None:
        """The run's certificate for client `name` (certs.CLIENTS), or None when the ports are plain."""
        return self.certificates.client(name) if self.certificates is not None else None

    def _start_switches(self) -> None:
        topology = self.scenario.topo
        roles = None
        if self.scenario.switch.control_tls:
            self.certificates = make_run_certificates(self.run_dir / "certs", self._addresses)
            roles = self.certificates.role_config() if self.result.target == "builtin" else None
        self.switches = [self._switch_config(n, roles) for n in topology.switches]
        if self.placement is None:
            self.processes = [SwitchProcess(c) for c in self.switches]
            self.progress(f"starting {len(self.switches)} {self.result.target} switches, one process each")
        else:
            by_name = {c.name: c for c in self.switches}
            self.processes = [FabricProcess(i, [by_name[s] for s in group], self.run_dir / "logs")
                              for i, group in enumerate(self.placement.groups)]
            self.progress(f"starting {len(self.switches)} builtin switches in {len(self.processes)} fabric "
                          f"process(es), {len(self.placement.in_memory)} of "
                          f"{sum(1 for link in topology.links if link.tier == 'fabric')} cables in memory")
        self.result.switch_processes = {
            "mode": self._cost_mode(),
            "processes": {p.name: [c.name for c in p.configs] for p in self.processes},
            "links_in_memory": len(self._in_memory())}
        server_of = {}
        for process in self.processes:
            if self.runners:
                server_of[process.name] = self.switch_server[process.configs[0].name]
                if not self.runners[server_of[process.name]].local:
                    process.runner = self.runners[server_of[process.name]]
        if self.runners:
            self.result.switch_processes["servers"] = {p.name: self.scenario.servers[server_of[p.name]].name
                                                       for p in self.processes}
        start_all(self.processes, on_started=lambda p, pid: self.manifest.add_process(
            pid, p.name, p.argv(), None if p.local else p.runner.server.login, p.start_time))

    def _configure(self) -> None:
        self.progress("configuring switches over P4Runtime")
        scenario = self.scenario
        program = (self.repo_root / scenario.switch.program).resolve()
        config = self.pipeline_config = build_pipeline_config(self.result.target, program, self.run_dir / "build")
        plans = self.plans = plan_fabric(scenario.topo, scenario)
        jobs = []
        for c in self.switches:
            client = P4RuntimeClient(c.name, c.grpc_addr, c.device_id, tls=self._client_tls("controller"))
            self.clients[c.name] = client
            jobs.append((client, config, plans[c.name]))
        try:
            configure_all(jobs)
        except TestbedError as error:  # a dead switch process explains the unanswered calls better
            raise next((d for d in (p.death() for p in self.processes) if d is not None), error) from None
        for c in self.switches:
            for note in apply_tm(self.result.target, plans[c.name], c.thrift_port, scenario.derived.cell_wire_bytes,
                                 tls=self._client_tls("controller")):
                if note not in self.result.notes:  # the same for every switch: said once
                    self.result.notes.append(note)
        self._raise_switches()

    def _packet_thread(self) -> str | None:
        """The name of the thread that moves a switch process's packets (None: its main thread)."""
        return ENGINE_THREAD if self.packet_path == "native" else None

    def _make_realtime(self, process, pid: int) -> str | None:
        """realtime.make_realtime for a switch process, run on its own server; None when done."""
        bmv2, thread = self.result.target == "bmv2", self._packet_thread()
        if process.local:
            return make_realtime(pid, all_threads=bmv2, thread=thread)
        argv = [sys.executable, "-m", "testbed.emulation.realtime", str(pid), *(["--all-threads"] if bmv2 else []),
                *(["--thread", thread] if thread else [])]
        try:
            said = process.runner.run(argv, f"raise {process.name} to real time", cwd=self.repo_root, check=False,
                                      timeout_s=30).strip()
        except TestbedError as error:
            return str(error)
        return said or None

    def _raise_switches(self) -> None:
        """Switches to real-time scheduling once configured (testbed/emulation/realtime.py)."""
        refused = {}
        for process in self.processes:
            reason = self._make_realtime(process, process.pid)
            if reason is not None:
                refused[process.name] = reason
        self.result.scheduling = "realtime" if not refused else "normal"
        if refused:
            name, reason = next(iter(refused.items()))
            note = (f"{len(refused)} of {len(self.processes)} switch processes run without real-time scheduling "
                    f"({name}: {reason}); a busy machine can delay their departures")
            self.result.notes.append(note)
            self.progress("warning: " + note)

    def _pingall(self) -> None:
        """The ping-all check: with a pingall phase, and before the traffic of every run with tenants
        (the report's first lines give its reachability)."""
        if not self.scenario.tenants and not any(p.kind == "pingall" for p in self.scenario.workload):
            return
        topology = self.scenario.topo
        self.progress("ping-all connectivity check")
        hosts = topology.hosts
        by_ip = {topology.node(h).ip: h for h in hosts}
        # One pinger per host (emulation/pinger.py); host i aims at i+1, i+2, ... so that each
        # receiver has about `window` pings coming at once, which its link's buffer holds. With
        # tenants, a second pinger per host aims at every host of other tenants, all at once (its
        # ToR drops them before any queue), and each answer is a breach of isolation.
        window = max(1, min(16, self.scenario.links.host.buffer_packets // 2))
        timeout_s = max(2.0, 4 * self.scenario.derived.base_rtt_us / 1e6 + 1.0)
        plan = pinger.targets(hosts, tenant_of_host(self.scenario.tenants))
        pingers = {}
        for src, (within, across) in plan.items():
            for kind, aims, width in (("within", within, window), ("across", across, len(across))):
                if aims:
                    pingers[(src, kind)] = self.network.host(src).popen(
                        [sys.executable, "-m", "testbed.emulation.pinger", "--timeout", str(timeout_s),
                         "--window", str(width), *(topology.node(h).ip for h in aims)],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=self.repo_root, text=True)
        failed, crossed = [], []
        for (src, kind), process in pingers.items():
            output, _ = process.communicate()
            try:
                missing = json.loads(output.strip().splitlines()[-1])["failed"]
            except (ValueError, IndexError, KeyError, TypeError):
                raise RunError(f"ping-all: the pinger in {src} failed: {output.strip()[-300:]}") from None
            if kind == "within":
                failed += [f"{src}->{by_ip[ip]}" for ip in missing]
            else:
                crossed += [f"{src}->{h}" for h in plan[src][1] if topology.node(h).ip not in missing]
        pairs = sum(len(within) for within, _ in plan.values())
        across = sum(len(others) for _, others in plan.values())
        self.result.pingall = {"pairs": pairs, "failed": failed}
        if self.scenario.tenants:
            self.result.pingall.update(across_tenants=across, crossed=crossed)
        if failed:
            raise RunError(f"ping-all failed for {len(failed)} of {pairs} pairs "
                           f"(first: {', '.join(failed[:5])}); switch logs in {self.run_dir / 'logs'}")
        if crossed:
            raise RunError(f"ping-all: {len(crossed)} of {across} pairs across tenants answered "
                           f"(first: {', '.join(crossed[:5])}); the fabric does not isolate its tenants")

    def _traffic(self) -> None:
        scenario = self.scenario
        messages = scenario_messages(scenario)
        if not messages:
            return
        topology = scenario.topo
        agent_dir = self.run_dir / "agents"
        records = self.run_dir / "records"
        agent_dir.mkdir(exist_ok=True)
        records.mkdir(exist_ok=True)
        (agent_dir / "peers.json").write_text(json.dumps(peers_document(scenario)))
        (agent_dir / "workload.json").write_text(json.dumps(
            {"seed": scenario.seed, "messages": [m.to_json() for m in messages]}))
        (agent_dir / "transport.json").write_text(json.dumps(scenario.to_dict()["transport"]))
        epoch_file = agent_dir / "epoch"
        self._cpu_at_traffic = {p.name: self._cpu_s(p) or 0.0 for p in self.processes}
        self._traffic_started = time.monotonic()
        self._machine_load = MachineLoad().start()
        busy = sorted({m.src for m in messages} | {m.dst for m in messages})
        self.result.host_counters["before"] = self._read_host_counters(busy)
        self.progress(f"traffic: {len(messages)} messages among {len(busy)} hosts, cc={scenario.transport.cc}, "
                      f"load balancing={scenario.fabric.load_balancing}")
        derived = scenario.derived
        lb, layout = scenario.fabric.load_balancing, layout_of(topology)
        rt_priority = AGENT_RT_PRIORITY if self.result.scheduling == "realtime" else 0
        member_argv = {}
        for host in busy:
            argv = ["--name", host, "--addr", topology.node(host).ip,
                    "--peers-file", str(agent_dir / "peers.json"),
                    "--workload-file", str(agent_dir / "workload.json"),
                    "--transport-file", str(agent_dir / "transport.json"),
                    "--cc", scenario.transport.cc, "--cell-size", str(scenario.fabric.cell_size),
                    "--link-rate-mbps", str(scenario.links.host.rate_mbps),
                    "--link-delay-us", str(scenario.links.host.delay_us),
                    "--realtime-priority", str(rt_priority),
                    "--bdp-cells", str(derived.bdp_cells), "--base-rtt-us", str(derived.base_rtt_us),
                    "--reorder-window-cells", str(scenario.transport.reorder_window_cells),
                    "--entropy-values", str(scenario.fabric.entropy_values),
                    "--entropy-choice", "random" if lb == "spray_random_entropy" else "rr",
                    "--entropy-layout", ",".join(str(r) for r in layout.radices_in_order),
                    "--nic-interfaces", ",".join(host_interface(host, p.number) for p in topology.ports(host)),
                    "--nic-choice", "entropy" if lb in ENTROPY_SCHEMES else "flow",
                    "--records", str(records), "--epoch-file", str(epoch_file),
                    "--progress-file", str(agent_dir / f"{host}.progress"),
                    "--command-file", str(agent_dir / f"{host}.command.json"),
                    "--timeout-s", str(scenario.duration_s + AGENT_MARGIN_S)]
            if scenario.fabric.pfc.enabled:
                argv.append("--pfc")  # the NIC obeys its ToR's pause frames
            if scenario.fabric.credits.enabled:  # one flow's credits no faster than the meters pass
                argv += ["--credit-meter-share", str(scenario.fabric.credits.rate_fraction)]
            member_argv[host] = argv
        self.agents = AgentSet(agent_dir, records, self.repo_root, rt_priority)
        self.agents.start(self._agent_plan(busy), member_argv,
                          start_in=lambda host, argv, log: self.network.host(host).popen(
                              argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.repo_root),
                          netns=lambda host: namespace_file(self.network.host(host).pid),
                          on_start=self.manifest.add_process)
        try:
            self.agents.wait_ready()
        except AgentStartError as error:
            raise RunError(str(error)) from None
        epoch = time.time() + 1.0  # the counters' baseline is sampled before it
        self._idle = IdlePeriod({p.name: p.pid for p in self.processes if p.process is not None and p.local}, epoch,
                                min(m.start_us for m in messages) / 1e6).start()
        thrift_ports = ({s: topology.node(s).thrift_port for s in topology.switches}
                        if self.result.target == "bmv2" else None)
        self.collector = Collector(list(self.clients.values()), epoch,
                                   ports={s: [p.number for p in topology.ports(s)] for s in topology.switches},
                                   thrift_ports=thrift_ports).start()
        partial = epoch_file.with_suffix(".partial")
        partial.write_text(repr(epoch))
        partial.replace(epoch_file)  # an agent never reads half a number
        self.reroute = RerouteController(topology, scenario, self.plans, self.clients, epoch,
                                         self.run_dir / "reroute.jsonl", self._in_memory()).start()
        self.faults = FaultRunner(plan_faults(scenario), epoch, self.run_dir / "faults.jsonl", tm=self._tm_command,
                                  agents=self.agents.pids(),
                                  switches=self._switch_fault,
                                  namespaces={h: self.network.host(h).pid for h in topology.hosts},
                                  commands={h: agent_dir / f"{h}.command.json" for h in busy}).start()
        with progress.task(self.variant.name or scenario.name, len(messages),
                           progress.planned_cells(messages, scenario.fabric.cell_size)) as shown:
            poller = (progress.FilePoller(shown, [agent_dir / f"{h}.progress" for h in busy]).start()
                      if shown is not None else None)
            try:
                self._wait_agents(scenario)
            finally:
                if poller is not None:
                    poller.stop()
        self.result.host_counters["after"] = self._read_host_counters(busy)
        failed = {h: c for h, c in self.result.agents.items() if c != 0}
        if failed:
            self.result.notes.append("agents with a non-zero exit code: " + ", ".join(
                f"{h} ({c}; log {self.agents.log_of(h)})" for h, c in sorted(failed.items())))

    def _wait_agents(self, scenario) -> None:
        codes, notes = self.agents.wait(time.monotonic() + scenario.duration_s + AGENT_MARGIN_S + 10)
        self.result.agents.update(codes)
        self.result.notes += notes

    def _agent_plan(self, hosts: list[str]) -> list[list[str]]:
        """Which hosts each agent process runs (scenario.agent_groups.agent_processes): over several
        servers, a process per host, started in its namespace there."""
        if self.runners:
            return [[h] for h in sorted(hosts)]
        return agent_processes(hosts, stalled_hosts(self.scenario), capacity.machine_cores(), self.agents_per_process)

    def _switch_fault(self, name: str, up: bool) -> dict:
        """Stop a switch's process, or start it again and configure it as at the start (pipeline,
        entries, meters, traffic manager, real time); the controller reroutes around it meanwhile.
        Returns what the fault record adds: the restart's timings and the controller's reaction;
        raises FaultError (the record says what failed) when a step fails."""
        process = next((p for p in self.processes if [c.name for c in p.configs] == [name]), None)
        if process is None:
            raise FaultError(f"{name} shares its process with other switches; a restart needs one of its own")
        try:
            return self._restart_step(process, name, up)
        except FaultError:
            raise
        except Exception as error:  # a switch that does not come back is the run's news, not a crash of it
            raise FaultError(f"{name}: {'restart' if up else 'stop'} failed: {error}") from None

    def _restart_step(self, process, name: str, up: bool) -> dict:
        config = next(c for c in self.switches if c.name == name)
        if not up:
            started = time.monotonic()
            code = process.kill()  # as a crash: the controller learns of it when its supervisor does
            killed_ms = round((time.monotonic() - started) * 1e3, 3)
            self.result.restarts.append({"switch": name, "exit_code": code})
            reaction = self.reroute.set_switch(name, up=False) if self.reroute is not None else None
            return {"exit_code": code, "killed_ms": killed_ms, "reroute": reaction}
        started = time.monotonic()
        pid = process.start(again=True)
        self.manifest.add_process(pid, process.name, process.argv())
        process.wait_ready(time.monotonic() + 30)
        client = self.clients[name]
        client.reopen()
        plan = self.plans[name]
        configure_switch(client, self.pipeline_config, plan)
        apply_tm(self.result.target, plan, config.thrift_port, self.scenario.derived.cell_wire_bytes,
                 tls=self._client_tls("controller"))
        if self.result.scheduling == "realtime":
            self._make_realtime(process, pid)
        configured_ms = round((time.monotonic() - started) * 1e3, 3)
        reaction = self.reroute.set_switch(name, up=True, plan=plan) if self.reroute is not None else None
        return {"configured_ms": configured_ms, "reroute": reaction}

    def _tm_command(self, switch: str, line: str) -> None:
        """One traffic-manager command for a fault (link_degrade); raises FaultError if refused."""
        if self.result.target != "builtin":
            raise FaultError(f"{switch}: link_degrade needs the builtin target (bmv2 models no link delay or loss)")
        from testbed.p4model.tm.control import SwitchControlClient

        config = next(c for c in self.switches if c.name == switch)
        try:
            with SwitchControlClient(config.address, config.thrift_port, timeout_s=3,
                                     tls=self._client_tls("controller")) as control:
                reply = control.request(line)
        except OSError as error:
            raise FaultError(f"{switch}: traffic-manager control unreachable ({error})") from None
        if not reply.get("ok"):
            raise FaultError(f"{switch}: traffic manager refused {line!r}: {reply.get('error')}")

    def _read_host_counters(self, hosts: list[str]) -> dict:
        """Each host's qdisc and UDP drop counters (telemetry.live.host_readings); a failed read is a note."""
        out = {}
        for host in hosts:
            interfaces = [host_interface(host, p.number) for p in self.scenario.topo.ports(host)]
            try:
                out[host] = host_readings.read_host(self.network.host(host), interfaces, run_in)
            except TestbedError as error:
                self.result.notes.append(f"{host}: qdisc/UDP counters unavailable ({error})")
        return out

    # -- teardown ------------------------------------------------------------------
    def _collect_tm_stats(self) -> None:
        if self.result.target != "builtin":
            return
        from testbed.p4model.tm.control import SwitchControlClient

        for c in self.switches:
            try:
                with SwitchControlClient(c.address, c.thrift_port, timeout_s=3,
                                         tls=self._client_tls("telemetry")) as control:
                    self.result.tm_stats[c.name] = {"tm": control.tm_stats(), "queues": control.queue_stats(),
                                                    "port_io": control.call("port_stats")}
            except Exception as error:  # telemetry must never block teardown
                self.result.notes.append(f"{c.name}: traffic-manager statistics unavailable ({error})")

    def _measure_costs(self) -> None:
        cpu = {p.name: self._cpu_s(p) for p in self.processes if p.process is not None}
        self.result.switch_cpu_s = {name: round(v - self._cpu_at_traffic[name], 3) for name, v in cpu.items()
                                    if v is not None and name in self._cpu_at_traffic}
        self.result.costs = measure_costs(self.result.switch_cpu_s, self.result.tm_stats, self.run_dir / "records",
                                          fidelity_threshold_us(self.scenario.to_dict()),
                                          f"{self.scenario.name} {self.variant.name}",
                                          self._cost_mode(), packets=self._bmv2_packets_sent(),
                                          idle_rates=self._idle.rates() if self._idle is not None else None,
                                          window_s=time.monotonic() - self._traffic_started,
                                          switches=len(self.scenario.topo.switches),
                                          calibrate=not self.runners,
                                          not_judged=frozenset(stalled_hosts(self.scenario)),
                                          planned=capacity.planned_load(self.scenario, self._cost_mode()),
                                          fabric=capacity.fabric_signature(self.scenario))
        if self._machine_load is not None:
            self.result.costs.update(self._machine_load.stop())

    @staticmethod
    def _cpu_s(process) -> float | None:
        """A switch process's CPU seconds, read on its own server; None when it is gone."""
        if process.pid is None:
            return None
        if process.local:
            return process_cpu_s(process.pid)
        try:
            stat = process.runner.run(["cat", f"/proc/{process.pid}/stat"], "read a switch's CPU time", timeout_s=20)
            fields = stat.rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (TestbedError, IndexError, ValueError):
            return None

    def _bmv2_packets_sent(self) -> int | None:
        """bmv2 only: packets its switches sent while the traffic ran, from the program's tx counters
        (the first and last telemetry samples); None on the builtin target (its TM counts them)."""
        if self.result.target != "bmv2" or self.collector is None:
            return None
        first, last = {}, {}
        for sample in self.collector.samples:
            first.setdefault(sample.switch, sample)
            last[sample.switch] = sample
        sent = [sum(c[0] for c in last[s].tx.values()) - sum(c[0] for c in first[s].tx.values()) for s in last]
        return sum(max(0, n) for n in sent)  # a restarted switch counted from 0 again: its part is lost

    def _fine_telemetry(self) -> None:
        """The switch processes' own samples (every port every 100 ms of the scenario's clock,
        testbed/p4model/telemetry.py, t_s in wall-clock seconds) replace the P4Runtime collector's
        telemetry.jsonl when every switch has them; t_s becomes seconds since the run's epoch, from
        1 s before it. Without them (bmv2, a process that wrote nothing) the collector's stay."""
        files = [p.telemetry_file for p in self.processes if getattr(p, "telemetry_file", None) is not None]
        if self.collector is None or not files or len(files) != len(self.processes) \
                or not all(f.exists() for f in files):
            return
        epoch = self.collector.epoch
        rows = []
        for process in self.processes:
            own = process.config.name if isinstance(process, SwitchProcess) else None  # it calls itself "switch"
            for line in process.telemetry_file.read_text().splitlines():
                try:
                    row = json.loads(line)
                    row["t_s"] = round(float(row["t_s"]) - epoch, 4)
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by the process's end
                if own is not None:
                    row["switch"] = own
                if row["t_s"] >= -1.0:
                    rows.append(row)
        if {r["switch"] for r in rows} != set(self.scenario.topo.switches):
            return
        rows.sort(key=lambda r: (r["t_s"], r["switch"]))
        with open(self.run_dir / "telemetry.jsonl", "w") as out:
            out.writelines(json.dumps(r) + "\n" for r in rows)

    def teardown(self) -> None:
        if self.reroute is not None:  # before anything takes links down
            self.result.notes += self.reroute.stop()
        if self.faults is not None:  # stalled agents go on, so that they can end
            self.faults.stop()
        if self.agents is not None:
            self.agents.terminate()
        if self.collector is not None:
            self.collector.stop()
            self.collector.write(self.run_dir / "telemetry.jsonl")
            self.result.notes += sorted(set(self.collector.errors))[:5]
        self._collect_tm_stats()
        self._measure_costs()
        for client in self.clients.values():
            client.close()
        for process in self.processes:
            code = process.stop()
            if code not in (0, None, -signal.SIGTERM):
                self.result.notes.append(f"{process.name} exited with code {code}: "
                                         f"{log_tail(process.log_file, 3)}")
        if self.certificates is not None:  # no switch of the run is left to talk to
            self.certificates.delete_keys()
        self._fine_telemetry()
        if self.faults is not None:
            self.result.notes += [f"fault not carried out: {e}" for e in self.faults.finish()]
            self.result.faults_not_executed = self.faults.not_executed(time.time() - self.faults.epoch)
        if self.network is not None:
            problems = self.network.stop()
            self.result.notes += problems or []
        for runner in self.runners:
            runner.close()
        if self._control_dir is not None:
            shutil.rmtree(self._control_dir, ignore_errors=True)
        self.manifest.finished = True
        self.manifest.save()
        self.manifest.unregister()
        (self.run_dir / "result.json").write_text(json.dumps({
            "variant": self.result.variant, "target": self.result.target,
            "packet_path": self.result.packet_path if self.result.target == "builtin" else None,
            "pingall": self.result.pingall,
            "agents": self.result.agents, "notes": self.result.notes, "tm_stats": self.result.tm_stats,
            "switch_scheduling": self.result.scheduling, "switch_cpu_s": self.result.switch_cpu_s,
            "costs": self.result.costs, "host_counters": self.result.host_counters,
            "switch_processes": self.result.switch_processes, "restarts": self.result.restarts,
            "failed": self.result.failed, "faults_not_executed": self.result.faults_not_executed,
            "tunnels": self.result.tunnels},
            indent=2, default=str))
