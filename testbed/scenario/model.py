"""The typed, resolved scenario: frozen dataclasses with every default filled.

Units are in the field names.  Sizes in cells or packets are counts of
fixed-length cells (one cell = one packet on the wire); `*_rtt` fields are
multiples of `derived.base_rtt_us`; `*_bdp` fields multiples of
`derived.bdp_cells`.  `to_dict()` is what a run writes as its resolved
scenario, so it holds plain YAML/JSON types only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from testbed.topo import FatTreeSpec, LeafSpineSpec, Topology, build_topology

if TYPE_CHECKING:  # the job's numbers are host/training.py's (numpy stays out of a scenario's load)
    from testbed.host.training import Job


@dataclass(frozen=True)
class LinkParams:
    rate_mbps: float
    delay_us: float
    buffer_packets: int  # egress queue depth of the switch port driving this link


@dataclass(frozen=True)
class LocalParams:
    """The intra-server channel between two GPUs of one server (each direction)."""

    rate_mbps: float
    delay_us: float


@dataclass(frozen=True)
class Links:
    host: LinkParams  # host <-> ToR links (both directions)
    fabric: LinkParams  # switch <-> switch links
    local: LocalParams | None = None  # GPU <-> GPU inside a server (gpus_per_server > 1 only)

    def for_tier(self, tier: str) -> LinkParams:
        return self.host if tier == "host" else self.fabric


@dataclass(frozen=True)
class Switch:
    target: str  # auto | builtin | bmv2
    program: str  # path of the P4 program, relative to the repository root
    priority_queues: int
    pcap: bool
    log_level: str
    # builtin target: "per_switch" (one process each), or N fabric processes ("auto": one per two cores)
    processes: str | int = "auto"
    # builtin target's packet path: auto (native when a C compiler is present), native or python
    backend: str = "auto"
    # P4Runtime and the TM control port over TLS with client certificates made for the run
    control_tls: bool = False


@dataclass(frozen=True)
class Ecn:
    mode: str  # none | step | red
    k_cells: int  # step: mark when the queue exceeds this
    kmin_cells: int  # red: marking starts above this
    kmax_cells: int  # red: marking probability reaches pmax here, 1 above
    pmax: float


@dataclass(frozen=True)
class Credits:
    enabled: bool
    rate_fraction: float  # of the link rate, per egress port
    burst_credits: int  # token bucket depth
    queue_credits: int  # credit queue depth; excess credits are dropped


@dataclass(frozen=True)
class Pfc:
    """Lossless DATA: the builtin traffic manager's priority flow control (testbed/p4model/tm)."""

    enabled: bool
    xoff_cells: int  # pause a link's sender when this many of its DATA cells are queued at the switch
    xon_cells: int  # resume it at this many


@dataclass(frozen=True)
class Int:
    """In-band telemetry (p4src/README.md, "In-band telemetry"): every switch records a hop in the
    DATA cells whose psn is a multiple of `sample` (a power of two), at most `max_hops` a cell."""

    enabled: bool
    sample: int = 1
    max_hops: int = 8


@dataclass(frozen=True)
class Fabric:
    load_balancing: str  # ecmp | spray_rr_entropy | spray_random_entropy | spray_rr_switch | spray_random_switch
    cell_size: int  # DATA cell body, bytes
    entropy_values: int
    ecn: Ecn
    credits: Credits
    pfc: Pfc = Pfc(False, 8, 4)
    int_telemetry: Int = Int(False)  # fabric.int in the scenario file
    # performance isolation between tenants (p4src/README.md, "Tenants"): none; queues (a data queue
    # per tenant on every port, deficit round robin between them by share); meters (each tenant's
    # packets entering the fabric at a ToR capped at its share of the ToR's uplink capacity)
    tenant_isolation: str = "none"


@dataclass(frozen=True)
class Tita:
    max_outstanding_bdp: float
    initial_w: float
    target_loss_factor: float
    credit_order: str  # fair | srpt (testbed/host/cc/tita.py)
    overcommit: int  # srpt: how many least-remaining flows share the credits


@dataclass(frozen=True)
class Dcqcn:
    g: float
    r_ai_fraction: float  # additive increase, fraction of the host link rate
    hyper_factor: float  # R_HAI = hyper_factor * R_AI
    timer_rtt: float  # rate-increase and alpha timers
    byte_counter_bytes: int
    cnp_interval_rtt: float
    fast_recovery_steps: int


@dataclass(frozen=True)
class Nscc:
    """NSCC (UEC's htsim model), times in base RTTs and sizes in BDPs (testbed/host/cc/nscc.py)."""

    target_qdelay_rtt: float  # target queueing delay
    max_wnd_bdp: float
    initial_wnd_bdp: float
    min_wnd_cells: float
    md_gain: float  # decrease W *= max(1 - md_gain (avg - target) / avg, md_floor)
    md_floor: float
    delay_ewma: float  # gain of the delay average, per sample
    quick_adapt_x_target: float  # quick adapt above this many targets of delay
    pi_bdp: float  # proportional increase per RTT at zero delay
    fi_bdp: float  # fair increase per RTT


@dataclass(frozen=True)
class Transport:
    cc: str  # tita | dcqcn | nscc | none
    reorder_window_cells: int
    rto_low_rtt: float
    rto_high_rtt: float
    tita: Tita
    dcqcn: Dcqcn
    nscc: Nscc


@dataclass(frozen=True)
class Phase:
    """One workload phase; fields a kind does not use are None or empty."""

    kind: str
    name: str
    start_s: float
    hosts: tuple[str, ...]  # the selected hosts ('all' resolved), in rank order
    count: int  # pingall: pings per pair; stream: messages in all; others: messages per flow (ring: iterations)
    message_bytes: int | None = None  # per flow; all_to_all and ring: each rank's buffer S
    senders: tuple[str, ...] = ()  # incast, stream (in the order they take turns)
    receiver: str | None = None  # incast, stream
    interval_s: float | None = None  # stream: between one message's start and the next's
    pairs: tuple[tuple[str, str], ...] = ()  # permutation: (sender, receiver), seeded
    cross_tor: bool | None = None  # permutation
    zipf_s: float | None = None  # all_to_all destination skew (0 = uniform)
    # collective: a data-carrying collective per size, back to back, `count` times each
    op: str | None = None  # all_reduce | all_gather | reduce_scatter | all_to_all
    algorithm: str | None = None  # ring | tree | hierarchical | direct
    sizes_bytes: tuple[int, ...] = ()  # S per collective (all_gather: the gathered output)
    channels: int = 1
    chunk_bytes: int = 0  # 0: no pipelining inside a channel's segment
    scheduling: str = "static"  # all_to_all: "dynamic" chunks go out on whichever channel is free
    servers: tuple[tuple[int, ...], ...] = ()  # ranks of each server, GPU order (multi-GPU topologies)
    # algorithm auto: per size, the (algorithm, channels, chunk_bytes) the tuning table gives
    tuned: tuple[tuple[str, int, int], ...] = ()
    tuning: str | None = None  # the tuning table (tuning.json of `testbed tune`) it came from
    # poisson: open-loop arrivals (workloads.poisson), with what they need resolved here
    load: float | None = None  # offered load per host, fraction of link_rate_bps
    arrivals_s: float | None = None  # arrivals from start_s to start_s + arrivals_s
    link_rate_bps: float | None = None  # the host link rate
    message_wire_bytes: int | None = None  # the DATA cells of one message on the wire
    arrivals_seed: str | None = None  # "poisson:<scenario seed>:<phase index>", as permutation seeds
    job: Job | None = None  # training: the data-parallel job (host/training.py), count its iterations


@dataclass(frozen=True)
class Fault:
    at_s: float
    kind: str  # link_down | link_up | host_down | link_flap | link_degrade | agent_stall | switch_restart | host_slow | gpu_slow
    target: str  # a link name (h1-leaf1, leaf1-spine2, leaf1-spine2/2), a host or a switch
    period_s: float = 0.0  # link_flap: down for half of each period, up for the other half
    count: int = 0  # link_flap: how many periods
    duration_s: float | None = None  # link_degrade, gpu_slow (None: to the end), agent_stall, switch_restart, host_slow
    rate_mbps: float | None = None  # link_degrade: the link's rate; host_slow: the NIC's (None: unchanged)
    extra_delay_us: float = 0.0  # link_degrade: propagation delay added
    loss: float = 0.0  # link_degrade: probability that a packet is lost on the link
    delay_ms: float = 0.0  # host_slow: added before each message the host's application starts
    factor: float = 1.0  # gpu_slow: the host's (GPU's) compute takes this many times as long

    def events(self) -> list[tuple[float, str]]:
        """(time, event) this fault is made of, in time order: link_down, link_up, host_down,
        link_degrade / link_restore, agent_stall / agent_resume, switch_stop / switch_start,
        host_slow / host_restore, gpu_slow / gpu_restore."""
        if self.kind == "link_flap":
            out = []
            for i in range(self.count):
                start = self.at_s + i * self.period_s
                out += [(start, "link_down"), (start + self.period_s / 2, "link_up")]
            return out
        if self.kind == "switch_restart":
            return [(self.at_s, "switch_stop"), (self.at_s + self.duration_s, "switch_start")]
        undo = {"link_degrade": "link_restore", "agent_stall": "agent_resume", "host_slow": "host_restore",
                "gpu_slow": "gpu_restore"}.get(self.kind)
        if undo is not None and self.duration_s is not None:
            return [(self.at_s, self.kind), (self.at_s + self.duration_s, undo)]
        return [(self.at_s, self.kind)]


@dataclass(frozen=True)
class Tenant:
    """A tenant the fabric isolates (`tenants:`): its id is what fabric.p4's ToRs bind its hosts'
    ports to and carry in DSCP (1, 2, ... in the section's order); its hosts reach each other and
    no other tenant's (p4src/README.md, "Tenants")."""

    name: str
    id: int
    hosts: tuple[str, ...]  # the hosts it names and the GPUs of the servers it names, topology order
    share: float = 1.0  # with fabric.tenant_isolation: its DRR weight (queues) or its part of a ToR's uplinks (meters)


@dataclass(frozen=True)
class Server:
    """A machine of a fabric spread over several (`placement.servers`), reached with ssh."""

    name: str
    address: str  # host name or IP address ssh reaches it at; "localhost" runs here without ssh
    user: str | None = None  # ssh login (None: ssh's default)
    switches: tuple[str, ...] = ()  # the switches placed on it; empty: the partition decides

    @property
    def login(self) -> str:
        """What ssh is given: user@address, or the address alone."""
        return f"{self.user}@{self.address}" if self.user else self.address


@dataclass(frozen=True)
class Derived:
    """Quantities computed from the topology and link parameters."""

    cell_wire_bytes: int  # Ethernet + IPv4 + UDP + cell header + body
    credit_wire_bytes: int  # a control cell on the wire
    path_host_links: int  # links of the longest host-to-host shortest path, by tier
    path_fabric_links: int
    base_rtt_us: float  # that path, there and back: propagation + one cell + one ACK
    bdp_cells: int  # host link rate x base RTT, in cells
    bdp_bytes: int
    oversubscription: float  # ToR host-facing over fabric-facing capacity


@dataclass(frozen=True)
class VariantAxis:
    key: str  # as written: 'load_balancing' or 'fabric.ecn.mode'
    path: tuple[str | int, ...]  # the field it sets
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    file: str
    duration_s: float
    seed: int
    topology: LeafSpineSpec | FatTreeSpec
    links: Links
    switch: Switch
    fabric: Fabric
    transport: Transport
    workload: tuple[Phase, ...]
    faults: tuple[Fault, ...]
    variants: tuple[VariantAxis, ...]  # the matrix (empty in an expanded variant)
    variant: tuple[tuple[str, Any], ...]  # the assignments this variant applied
    derived: Derived
    # How many times slower than the file's clock this one runs (scenario.timescale.slowed: testbed
    # run --fit, sim --host-rate-mbps); 1: the file's own. Reports divide run times by it.
    time_stretch: float = 1.0
    # placement.servers: the machines the fabric is spread over (empty: this machine alone)
    servers: tuple[Server, ...] = ()
    # tenants: the fabric isolates each from the others (empty: every host reaches every host)
    tenants: tuple[Tenant, ...] = ()
    _origin: Any = field(default=None, compare=False, repr=False)

    @cached_property
    def topo(self) -> Topology:
        """The built topology (computed once per scenario)."""
        return build_topology(self.topology)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the run directory (YAML/JSON safe)."""
        out = _plain(self)
        out["variants"] = {axis.key: list(axis.values) for axis in self.variants}
        out["variant"] = dict(self.variant)
        return out


@dataclass(frozen=True)
class Variant:
    name: str  # 'load_balancing=spray' or 'load_balancing=spray,cc=tita'; 'base' if none
    assignments: tuple[tuple[str, Any], ...]
    scenario: Scenario


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name))
                for f in dataclasses.fields(value) if not f.name.startswith("_")}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
