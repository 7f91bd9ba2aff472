"""Schema-valid data -> a resolved `Scenario`: defaults, derived values and
the cross-field checks that need the topology or the BDP.

Every failure is raised at the line of the field to change.
"""

from __future__ import annotations

import math
import os
import random
from pathlib import Path
from typing import Any

from testbed.cells import segment, wire
from testbed.scenario import defaults as d
from testbed.scenario.errors import ScenarioError
from testbed.scenario.model import (
    Credits, Dcqcn, Derived, Ecn, Fabric, Fault, Int, LinkParams, Links, LocalParams, Pfc, Phase, Scenario, Server, Switch,
    Nscc, Tita, Transport, VariantAxis,
)
from testbed.scenario.source import DataPath, SourceMap
from testbed.scenario.tenants import check_phase_hosts, resolve_tenants
from testbed.topo import Topology, TopoError, build_topology, spec_from_dict
from testbed.topo.entropy import layout_of

REPO_ROOT = Path(__file__).resolve().parents[2]  # switch.program is relative to it
MAX_TENANT_QUEUES = 7  # fabric.tenant_isolation: queues: 8 queues a port, one the credits' and CNPs'


def get(data: dict, path: DataPath, default: Any = None) -> Any:
    node: Any = data
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return default
    return node


def resolve(data: dict, smap: SourceMap, variants: tuple[VariantAxis, ...] = (),
            variant: tuple = ()) -> Scenario:
    r = _Resolver(data, smap)
    return r.scenario(variants, variant)


class _Resolver:
    def __init__(self, data: dict, smap: SourceMap):
        self.data = data
        self.smap = smap
        self.tenants: tuple = ()

    def get(self, path: DataPath, default: Any = None) -> Any:
        return get(self.data, path, default)

    def fail(self, path: DataPath, message: str, key: bool = False) -> ScenarioError:
        return self.smap.error(path, message, key=key)

    # -- sections -----------------------------------------------------------
    def scenario(self, variants, variant) -> Scenario:
        duration = float(self.get(("duration_s",), d.DURATION_S))
        seed = int(self.get(("seed",), d.SEED))
        spec, topo = self.topology()
        cell_size = int(self.get(("fabric", "cell_size"), d.CELL_SIZE))
        cc = self.get(("transport", "cc"), "none")
        links_raw = self.link_params()
        derived = self.derived(topo, links_raw, cell_size)
        buffer = d.cells(derived.bdp_cells, d.BUFFER_BDP)
        links = Links(*(LinkParams(p["rate_mbps"], p["delay_us"], p.get("buffer_packets", buffer))
                        for p in (links_raw["host"], links_raw["fabric"])), local=self.local(topo, links_raw))
        fabric = self.fabric(topo, cell_size, cc, derived, links)
        switch = self.switch(fabric, cc)
        transport = self.transport(cc, derived)
        self.tenants = resolve_tenants(self.get(("tenants",)), topo, self.fail)
        if fabric.tenant_isolation != "none" and not self.tenants:
            raise self.fail(("fabric", "tenant_isolation"), f"'{fabric.tenant_isolation}' isolates tenants' "
                            "performance, but the scenario has no tenants: section")
        workload = tuple(self.phase(i, topo, duration, seed, links.host, cell_size)
                         for i in range(len(self.get(("workload",), []))))
        faults = tuple(self.fault(i, topo, duration) for i in range(len(self.get(("faults",), []))))
        servers = self.servers(topo, switch)
        return Scenario(
            name=self.get(("name",)) or _default_name(self.smap.file),
            description=self.get(("description",), ""),
            file=self.smap.file, duration_s=duration, seed=seed, topology=spec, links=links,
            switch=switch, fabric=fabric, transport=transport, workload=workload, faults=faults,
            variants=variants, variant=variant, derived=derived, servers=servers, tenants=self.tenants,
        )

    def topology(self):
        raw = self.get(("topology",))
        defaults = d.LEAF_SPINE if raw["kind"] == "leaf_spine" else d.FAT_TREE
        fields = {**defaults, **raw}
        try:
            spec = spec_from_dict(fields)
            topo = build_topology(spec)
        except TopoError as error:
            at = ("topology", error.field) if error.field in raw else ("topology",)
            raise self.fail(at, str(error), key=at == ("topology",)) from None
        if len(topo.hosts) < 2:
            raise self.fail(("topology",), f"has {len(topo.hosts)} host; a workload needs two",
                            key=True)
        return spec, topo

    def local(self, topo: Topology, links: dict) -> LocalParams | None:
        raw = self.get(("links", "local"))
        if topo.gpus_per_server == 1:
            if raw is not None:
                raise self.fail(("links", "local"), "is the channel between GPUs of one server, "
                                "but the topology has no servers (set topology.gpus_per_server "
                                "above 1 or drop the key)", key=True)
            return None
        raw = raw or {}
        host = links["host"]
        return LocalParams(float(raw.get("rate_mbps", host["rate_mbps"] * d.LOCAL_RATE_X_HOST)),
                           float(raw.get("delay_us", host["delay_us"] * d.LOCAL_DELAY_X_HOST)))

    def link_params(self) -> dict[str, dict]:
        top = {k: v for k, v in self.get(("links",), {}).items() if k not in ("host", "fabric")}
        base = {"rate_mbps": d.RATE_MBPS, "delay_us": d.DELAY_US, **top}
        return {tier: {**base, **self.get(("links", tier), {})} for tier in ("host", "fabric")}

    def derived(self, topo: Topology, links: dict, cell_size: int) -> Derived:
        cell_wire = cell_size + d.CELL_OVERHEAD_BYTES
        ack_wire = d.CELL_OVERHEAD_BYTES + d.ACK_BODY_BYTES
        path = topo.paths(topo.hosts[0], topo.hosts[-1])[0]
        tiers = [topo.link(name).tier for name in path.links]
        rtt_us = 0.0
        for tier in tiers:
            p = links[tier]
            rtt_us += 2 * p["delay_us"] + (cell_wire + ack_wire) * 8 / p["rate_mbps"]
        host_rate = links["host"]["rate_mbps"]
        bdp_bytes = math.ceil(host_rate * rtt_us / 8)  # Mbit/s x us = bits
        spec = topo.spec
        if spec.kind == "leaf_spine":
            over = (spec.hosts_per_leaf * host_rate) / (
                spec.spines * spec.uplinks_per_spine * links["fabric"]["rate_mbps"])
        else:
            over = host_rate / links["fabric"]["rate_mbps"]
        given = self.get(("topology", "oversubscription"))
        if given is not None and abs(given - over) > 1e-6 * max(1.0, over):
            raise self.fail(("topology", "oversubscription"),
                            f"{given:g} does not match the topology, whose ToRs have "
                            f"{over:g}:1 host-facing over spine-facing capacity; "
                            "change hosts_per_leaf, spines, uplinks_per_spine or the link rates, "
                            "or drop the key")
        return Derived(
            cell_wire_bytes=cell_wire, credit_wire_bytes=d.CELL_OVERHEAD_BYTES,
            path_host_links=tiers.count("host"), path_fabric_links=tiers.count("fabric"),
            base_rtt_us=round(rtt_us, 3), bdp_cells=max(1, math.ceil(bdp_bytes / cell_wire)),
            bdp_bytes=bdp_bytes, oversubscription=round(over, 6),
        )

    def fabric(self, topo: Topology, cell_size: int, cc: str, derived: Derived, links: Links) -> Fabric:
        lb = self.get(("fabric", "load_balancing"), d.LOAD_BALANCING)
        ecn = self.ecn(cc, derived, links)
        # credit/(credit + cell + ACK) of the link (wire.credit_link_share); without the ACK share
        # a full permutation overloaded every link by ~6% and tita dropped data in the core.
        credits = Credits(
            enabled=self.get(("fabric", "credits", "enabled"), cc == "tita"),
            rate_fraction=self.get(("fabric", "credits", "rate_fraction"), wire.credit_link_share(cell_size)),
            burst_credits=self.get(("fabric", "credits", "burst_credits"), d.BURST_CREDITS),
            queue_credits=self.get(("fabric", "credits", "queue_credits"), d.QUEUE_CREDITS),
        )
        entropy_values = self.get(("fabric", "entropy_values"),
                                  layout_of(topo).default_entropy_values(d.ENTROPY_VALUES))
        return Fabric(d.LB_ALIASES.get(lb, lb), cell_size, entropy_values, ecn, credits, self.pfc(),
                      self.int_telemetry(cell_size), self.get(("fabric", "tenant_isolation"), "none"))

    def int_telemetry(self, cell_size: int) -> Int:
        telemetry = Int(self.get(("fabric", "int", "enabled"), False),
                        self.get(("fabric", "int", "sample"), 1),
                        self.get(("fabric", "int", "max_hops"), wire.INT_MAX_HOPS))
        if telemetry.sample & (telemetry.sample - 1):
            raise self.fail(("fabric", "int", "sample"),
                            f"{telemetry.sample} is not a power of two (switches sample by psn mask)")
        frame = (wire.FRAME_OVERHEAD + wire.HEADER_LEN + wire.INT_SHIM_LEN
                 + telemetry.max_hops * wire.INT_HOP_LEN + cell_size)
        if telemetry.enabled and frame - 14 > 1500:
            raise self.fail(("fabric", "int", "max_hops"),
                            f"a DATA cell of {cell_size} B with {telemetry.max_hops} hop records is a "
                            f"{frame - 14}-byte IP packet, over the 1500-byte MTU: lower cell_size or max_hops")
        return telemetry

    def pfc(self) -> Pfc:
        pfc = Pfc(self.get(("fabric", "pfc", "enabled"), False),
                  self.get(("fabric", "pfc", "xoff_cells"), d.PFC_XOFF_CELLS),
                  self.get(("fabric", "pfc", "xon_cells"), d.PFC_XON_CELLS))
        if pfc.xon_cells >= pfc.xoff_cells:
            at = "xon_cells" if self.get(("fabric", "pfc", "xon_cells")) is not None else "xoff_cells"
            raise self.fail(("fabric", "pfc", at), f"xon_cells ({pfc.xon_cells}) must be below "
                            f"xoff_cells ({pfc.xoff_cells})")
        if pfc.enabled and self.get(("switch", "target"), d.TARGET) == "bmv2":
            raise self.fail(("fabric", "pfc", "enabled"), "PFC is the builtin traffic manager's; "
                            "bmv2's simple_switch has no pause frames (use target builtin or auto)")
        return pfc

    def ecn(self, cc: str, derived: Derived, links: Links) -> Ecn:
        raw = self.get(("fabric", "ecn"), {})
        mode = raw.get("mode", d.ecn_mode(cc))
        for key, used_by in (("k_cells", "step"), ("kmin_cells", "red"), ("kmax_cells", "red"),
                             ("pmax", "red")):
            if key in raw and mode != used_by:
                raise self.fail(("fabric", "ecn", key),
                                f"applies to ECN mode {used_by}, but the mode is {mode}", key=True)
        bdp = derived.bdp_cells
        ecn = Ecn(mode, raw.get("k_cells", d.cells(bdp, d.ECN_K_BDP)),
                  raw.get("kmin_cells", d.cells(bdp, d.ECN_KMIN_BDP)),
                  raw.get("kmax_cells", d.cells(bdp, d.ECN_KMAX_BDP)),
                  raw.get("pmax", d.ECN_PMAX))
        if mode == "red" and ecn.kmin_cells >= ecn.kmax_cells:
            at = "kmin_cells" if "kmin_cells" in raw else "kmax_cells"
            raise self.fail(("fabric", "ecn", at), f"kmin_cells ({ecn.kmin_cells}) must be below "
                            f"kmax_cells ({ecn.kmax_cells})")
        buffer = min(links.host.buffer_packets, links.fabric.buffer_packets)
        top = {"step": "k_cells", "red": "kmax_cells"}.get(mode)
        if top and getattr(ecn, top) > buffer:
            raise self.fail(("fabric", "ecn", top), f"{getattr(ecn, top)} exceeds the egress "
                            f"buffer of {buffer} packets, so the queue could never reach it")
        return ecn

    def tenant_queues(self, fabric: Fabric, queues: int) -> int:
        """The priority queues `fabric.tenant_isolation: queues` needs: a data queue per tenant (0,
        2, 3, ...: control.tenants.tenant_queue) beside queue 1 (credits, CNPs), so tenants + 1."""
        at = ("fabric", "tenant_isolation")
        tenants = len(self.get(("tenants",)) or ())
        if tenants > MAX_TENANT_QUEUES:
            raise self.fail(at, f"'queues' gives each tenant a data queue of the {MAX_TENANT_QUEUES + 1} a "
                            f"port has (one is the credits'), but the scenario has {tenants} tenants; "
                            "use meters")
        if fabric.pfc.enabled:
            raise self.fail(at, "'queues' splits the data priority into a queue per tenant, and PFC pauses "
                            "priority 0 alone: turn fabric.pfc off, or use meters")
        need = max(2, tenants + 1)
        given = self.get(("switch", "priority_queues"))
        if given is not None and given < need:
            raise self.fail(("switch", "priority_queues"), f"is {given}, but fabric.tenant_isolation: queues "
                            f"with {tenants} tenants needs {need} (a data queue per tenant and the credits')")
        return max(queues, need)

    def switch(self, fabric: Fabric, cc: str) -> Switch:
        queues = self.get(("switch", "priority_queues"), 2 if fabric.credits.enabled or cc == "dcqcn" else 1)
        if fabric.tenant_isolation == "queues":
            queues = self.tenant_queues(fabric, queues)
        if fabric.credits.enabled and queues < 2:
            raise self.fail(("switch", "priority_queues"),
                            f"is {queues}, but credits need 2 (they bypass data in the high queue)")
        if cc == "dcqcn" and queues < 2:
            raise self.fail(("switch", "priority_queues"),
                            f"is {queues}, but dcqcn needs 2 (its CNPs bypass data in the high queue)")
        target = self.get(("switch", "target"), d.TARGET)
        if fabric.pfc.enabled and target == "auto":
            target = "builtin"  # only the builtin traffic manager sends and obeys pause frames
        if fabric.tenant_isolation == "queues":
            if target == "bmv2":
                raise self.fail(("switch", "target"), "is bmv2, whose simple_switch serves its queues by "
                                "strict priority only; fabric.tenant_isolation: queues needs the builtin "
                                "target's deficit round robin")
            target = "builtin"
        processes = self.get(("switch", "processes"), d.PROCESSES)
        if target == "bmv2" and isinstance(processes, int):
            raise self.fail(("switch", "processes"), f"is {processes}, but bmv2 runs one process per "
                            "switch (fabric processes are the builtin target's); use per_switch or auto")
        program = self.get(("switch", "program"), d.PROGRAM)
        if not (REPO_ROOT / program).is_file():
            raise self.fail(("switch", "program"), f"{program} does not exist (a path relative to the "
                            f"repository root, {REPO_ROOT})")
        backend = self.get(("switch", "backend"), "auto")
        pcap = self.get(("switch", "pcap"), False)
        if backend == "native" and target == "bmv2":
            raise self.fail(("switch", "backend"), "native is the builtin target's packet path; bmv2 has its own")
        return Switch(target, program, queues, pcap,
                      self.get(("switch", "log_level"), d.LOG_LEVEL), processes, backend,
                      self.get(("switch", "control_tls"), False))

    def servers(self, topo: Topology, switch: Switch) -> tuple[Server, ...]:
        """placement.servers: distinct names and logins; the switches named, each on one server,
        all or none of the servers naming theirs; at least one switch per server."""
        at: DataPath = ("placement", "servers")
        raw = self.get(at)
        if raw is None:
            return ()
        names: dict[str, int] = {}
        logins: dict[str, int] = {}
        where: dict[str, int] = {}
        out = []
        for i, entry in enumerate(raw):
            server = Server(entry["name"], entry["address"], entry.get("user"), tuple(entry.get("switches", ())))
            if server.name in names:
                raise self.fail(at + (i, "name"), f"'{server.name}' is a duplicate server: "
                                f"placement.servers[{names[server.name]}] has this name")
            if server.login in logins:
                raise self.fail(at + (i, "address"), f"'{server.login}' is a duplicate server: "
                                f"placement.servers[{logins[server.login]}] is reached at it too")
            names[server.name], logins[server.login] = i, i
            for j, name in enumerate(server.switches):
                if name not in topo.switches:
                    raise self.fail(at + (i, "switches", j), f"'{name}' is not a switch of this topology "
                                    f"(switches: {', '.join(topo.switches[:4])}, ...; see testbed show)")
                if name in where:
                    raise self.fail(at + (i, "switches", j), f"'{name}' is already placed on "
                                    f"placement.servers[{where[name]}] ({raw[where[name]]['name']})")
                where[name] = i
            out.append(server)
        listing = [bool(s.switches) for s in out]
        if any(listing) and not all(listing):
            first = listing.index(False)
            raise self.fail(at + (first,), f"{out[first].name} names no switches while other servers do: "
                            "name every server's switches, or none and let the partition place them")
        missing = [name for name in topo.switches if where and name not in where]
        if missing:
            raise self.fail(at, f"{', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''} "
                            f"({len(missing)} switch{'es' if len(missing) != 1 else ''}) on no server: "
                            "when servers name their switches, every switch needs one", key=True)
        if len(out) > len(topo.switches):
            raise self.fail(at, f"names {len(out)} servers for {len(topo.switches)} switches: each server "
                            "runs at least one", key=True)
        processes = switch.processes
        if isinstance(processes, int) and processes < len(out):
            raise self.fail(("switch", "processes"), f"is {processes}, fewer fabric processes than the "
                            f"{len(out)} servers of placement.servers (each runs at least one)")
        return tuple(out)

    def transport(self, cc: str, derived: Derived) -> Transport:
        low = self.get(("transport", "rto_low_rtt"), d.RTO_LOW_RTT)
        high = self.get(("transport", "rto_high_rtt"), d.RTO_HIGH_RTT)
        if low >= high:
            at = "rto_high_rtt" if self.get(("transport", "rto_high_rtt")) is not None else "rto_low_rtt"
            raise self.fail(("transport", at),
                            f"rto_low_rtt ({low:g}) must be below rto_high_rtt ({high:g})")
        tita = Tita(**{**d.TITA, **self.get(("transport", "tita"), {})})
        if tita.overcommit > 1 and tita.credit_order != "srpt":
            raise self.fail(("transport", "tita", "overcommit"), f"is {tita.overcommit}, but only credit_order "
                            "srpt credits a subset of the flows (fair shares every flow)")
        given = self.get(("transport", "dcqcn"), {})
        timer = given.get("timer_rtt", d.DCQCN["timer_rtt"])
        dcqcn = {**d.DCQCN,
                 "byte_counter_bytes": math.ceil(derived.bdp_bytes * timer * d.DCQCN_BYTE_COUNTER_TIMER_PERIODS),
                 **given}
        return Transport(
            cc=cc,
            reorder_window_cells=self.get(("transport", "reorder_window_cells"),
                                          d.cells(derived.bdp_cells, d.REORDER_WINDOW_BDP)),
            rto_low_rtt=low, rto_high_rtt=high,
            tita=tita,
            dcqcn=Dcqcn(**dcqcn),
            nscc=Nscc(**{**d.NSCC, **self.get(("transport", "nscc"), {})}),
        )

    # -- workload and faults ------------------------------------------------
    def phase(self, i: int, topo: Topology, duration: float, seed: int, host_link: LinkParams,
              cell_size: int) -> Phase:
        at: DataPath = ("workload", i)
        raw = self.get(at)
        kind = raw["kind"]
        start = float(raw.get("start_s", 0.0))
        if start >= duration:
            raise self.fail(at + ("start_s",), f"{start:g} is not before the end of the run "
                            f"(duration_s {duration:g})")
        hosts = self.hosts(at + ("hosts",), raw.get("hosts", "all"), topo)
        check_phase_hosts(at, hosts, self.tenants, self.fail, "hosts" in raw)
        fields: dict[str, Any] = {}
        if kind == "collective":
            hosts, fields = self.collective(at, raw, hosts, topo)
        elif kind == "training":
            hosts, fields = self.training(at, raw, hosts, topo)
        elif kind != "pingall":
            fields["message_bytes"] = raw.get("message_bytes", d.PHASE_MESSAGE_BYTES[kind])
        count = raw.get("count", {"stream": d.STREAM_COUNT, "poisson": 0}.get(kind, 1))
        if kind == "training":
            count = fields["job"].iterations
        if kind in ("incast", "stream"):
            fields.update(self.incast(at, raw, hosts, topo))
        if kind == "stream":
            fields["interval_s"] = self.stream_interval(at, raw, start, count, duration)
        elif kind == "poisson":
            fields.update(self.poisson(at, raw, start, duration, fields["message_bytes"], host_link, cell_size,
                                       f"poisson:{seed}:{i}"))
        elif kind == "permutation":
            cross = raw.get("cross_tor", True)
            fields.update(cross_tor=cross,
                          pairs=self.permutation(at, hosts, topo, cross, f"{seed}:{i}"))
        elif kind == "all_to_all":
            fields["zipf_s"] = float(raw.get("zipf_s", 0.0))
        return Phase(kind=kind, name=raw.get("name", f"{i + 1}-{kind}"), start_s=start,
                     hosts=hosts, count=count, **fields)

    def poisson(self, at: DataPath, raw: dict, start: float, duration: float, message_bytes: int,
                host_link: LinkParams, cell_size: int, seed: str) -> dict:
        """Load, arrivals, and what workloads.poisson needs besides: the host link rate and one
        message's DATA cells on the wire (as testbed/claims/experiments.py's _run_load has them)."""
        arrivals = float(raw.get("arrivals_s", d.POISSON_ARRIVALS_S))
        if start + arrivals > duration:
            raise self.fail(self.given(at, raw, "arrivals_s", "start_s"), f"{arrivals:g} s of arrivals from "
                            f"{start:g} s end after the run (duration_s {duration:g})")
        cells = segment.cell_count(message_bytes + segment.TRAILER_LEN, cell_size)
        return {"load": float(raw["load"]), "arrivals_s": arrivals, "link_rate_bps": host_link.rate_mbps * 1e6,
                "message_wire_bytes": cells * wire.wire_bytes(cell_size, wire.DATA), "arrivals_seed": seed}

    def stream_interval(self, at: DataPath, raw: dict, start: float, count: int, duration: float) -> float:
        """The stream's interval, once its last message is known to start before the end of the run."""
        interval = float(raw.get("interval_s", d.STREAM_INTERVAL_S))
        last = start + (count - 1) * interval
        if last >= duration:
            raise self.fail(self.given(at, raw, "count", "interval_s", "start_s"),
                            f"the last of {count} messages {interval:g} s apart from {start:g} s would start "
                            f"at {last:g} s, not before the end of the run (duration_s {duration:g})")
        return interval

    def given(self, at: DataPath, raw: dict, *keys: str) -> DataPath:
        """The first of `keys` the phase sets (where to fix it), else the phase's kind."""
        return at + (next((k for k in keys if k in raw), "kind"),)

    def collective(self, at: DataPath, raw: dict, hosts: tuple[str, ...], topo: Topology):
        """Ranks (server by server, GPU order, when the topology has servers), op, algorithm, sizes."""
        from testbed.host.collectives import ALGORITHMS

        op = raw.get("op", "all_reduce")
        algorithm = raw.get("algorithm", d.COLLECTIVE_ALGORITHM[op])
        if "tuning" in raw and algorithm != "auto":
            raise self.fail(at + ("tuning",), "is read only with algorithm: auto", key=True)
        if algorithm != "auto" and algorithm not in ALGORITHMS[op]:
            raise self.fail(at + ("algorithm",), f"'{algorithm}' is not an algorithm of {op}; "
                            f"it has {', '.join(ALGORITHMS[op])}")
        hosts, servers = self.ranks(hosts, topo)
        channels = raw.get("channels", 1)
        sizes = raw.get("sizes_bytes", d.COLLECTIVE_SIZES_BYTES)
        for j, size in enumerate(sizes):
            if size < len(hosts) * channels:
                raise self.fail(at + ("sizes_bytes", j), f"{size} B cannot give each of {len(hosts)} "
                                f"ranks a byte on each of {channels} channel(s)")
        tuned: tuple = ()
        if algorithm == "auto":
            tuned = self.tuned(at, raw, op, len(hosts), sizes, servers)
        if algorithm == "hierarchical":
            self.whole_servers(at, raw, servers, topo)
        scheduling = raw.get("scheduling", "static")
        if scheduling == "dynamic" and op != "all_to_all":
            raise self.fail(at + ("scheduling",), f"dynamic channel scheduling is modelled for all_to_all "
                            f"only, not {op} (its channels join other rank pairs)")
        return hosts, {"op": op, "algorithm": algorithm, "sizes_bytes": tuple(sizes), "channels": channels,
                       "chunk_bytes": raw.get("chunk_bytes", 0), "servers": servers, "tuned": tuned,
                       "tuning": raw.get("tuning"), "scheduling": scheduling}

    def ranks(self, hosts: tuple[str, ...], topo: Topology) -> tuple[tuple[str, ...], tuple]:
        """The ranks (server by server, GPU order, when the topology has servers) and, when whole
        servers are selected, each server's ranks (what hierarchical and the tuner need)."""
        if not topo.servers:
            return hosts, ()
        rank_of = {h: i for i, h in enumerate(h for gpus in topo.servers.values() for h in gpus)}
        hosts = tuple(sorted(hosts, key=rank_of.__getitem__))
        chosen = set(hosts)
        whole = [gpus for gpus in topo.servers.values() if set(gpus) <= chosen]
        if sum(len(g) for g in whole) != len(hosts) or len(whole) < 2:
            return hosts, ()
        index = {h: i for i, h in enumerate(hosts)}
        return hosts, tuple(tuple(index[h] for h in gpus) for gpus in whole)

    def whole_servers(self, at: DataPath, raw: dict, servers: tuple, topo: Topology) -> None:
        """hierarchical all-reduce: whole servers of several GPUs, at least two, must be selected."""
        if servers:
            return
        if not topo.servers:
            raise self.fail(at + ("algorithm",), "hierarchical needs servers of several GPUs "
                            "(topology.gpus_per_server above 1)")
        raise self.fail(at + ("hosts",) if "hosts" in raw else at + ("algorithm",),
                        "hierarchical runs over whole servers, at least two: select every GPU "
                        f"of each server used ({topo.gpus_per_server} per server)")

    def training(self, at: DataPath, raw: dict, hosts: tuple[str, ...], topo: Topology):
        """A data-parallel job (host/training.py): its ranks, model, compute times and buckets."""
        from testbed.host import training

        hosts, servers = self.ranks(hosts, topo)
        par = raw.get("parallelism", {})
        if par.get("tensor", 1) != 1:
            raise self.fail(at + ("parallelism", "tensor"), "tensor parallelism is not modelled yet: a "
                            "training job is data-, expert- or pipeline-parallel (tensor: 1)")
        stages = par.get("pipeline", 1)
        if len(hosts) % stages:
            raise self.fail(at + ("parallelism", "pipeline"), f"{stages} pipeline stages do not divide the "
                            f"job's {len(hosts)} GPUs")
        if par.get("data", len(hosts) // stages) * stages != len(hosts):
            raise self.fail(at + ("parallelism", "data"), f"{par['data']} data-parallel ranks x {stages} "
                            f"pipeline stage(s), but the job runs on {len(hosts)} GPUs (hosts); they must be equal")
        model, compute = raw["model"], raw["compute"]
        if model["layers"] > model["parameters"]:
            raise self.fail(at + ("model", "layers"), f"{model['layers']} layers need at least as many "
                            f"parameters ({model['parameters']})")
        slow = compute.get("slow_gpu")
        if slow is not None and slow["host"] not in hosts:
            raise self.fail(at + ("compute", "slow_gpu", "host"), f"'{slow['host']}' is not one of the "
                            f"job's GPUs ({', '.join(hosts)})")
        algorithm = raw.get("algorithm", "ring")
        if algorithm == "hierarchical":
            self.whole_servers(at, raw, servers, topo)
        job = training.Job(
            iterations=raw.get("iterations", d.TRAINING_ITERATIONS), parameters=model["parameters"],
            dtype_bytes=training.DTYPE_BYTES[model.get("dtype", d.TRAINING_DTYPE)], layers=model["layers"],
            forward_us=compute["forward_ms"] * 1e3, backward_us=compute["backward_ms"] * 1e3,
            jitter=float(compute.get("jitter", 0.0)), slow_host=slow and slow["host"],
            slow_factor=float(slow["factor"]) if slow else 1.0,
            bucket_bytes=raw.get("bucket_bytes", training.DDP_BUCKET_BYTES),
            first_bucket_bytes=raw.get("first_bucket_bytes", training.DDP_FIRST_BUCKET_BYTES),
            small_bucket=raw.get("small_bucket", "first"),
            algorithm=algorithm, channels=raw.get("channels", 1), chunk_bytes=raw.get("chunk_bytes", 0))
        if ("moe" in raw or par.get("expert", 1) != 1) and ("pipeline" in raw or stages != 1):
            raise self.fail(at + ("parallelism",), "a job is either expert- or pipeline-parallel here, "
                            "not both (the two together are not modelled yet)")
        if "moe" in raw or par.get("expert", 1) != 1:
            return hosts, self.moe_job(at, raw, hosts, job)
        if raw.get("scheduling", "static") != "static":
            raise self.fail(at + ("scheduling",), "dynamic channel scheduling is modelled for all-to-alls "
                            "only (an MoE job's), not a data-parallel job's all-reduces")
        if "pipeline" in raw or stages != 1:
            return hosts, self.pipeline_job(at, raw, hosts, job, stages)
        smallest = min(b.size_bytes for b in training.buckets(job))
        if smallest < len(hosts) * job.channels:
            where = next((k for k in ("first_bucket_bytes", "bucket_bytes", "channels") if k in raw), "model")
            raise self.fail(at + (where,), f"a gradient bucket of {smallest} B cannot give each of "
                            f"{len(hosts)} ranks a byte on each of {job.channels} channel(s)")
        return hosts, {"job": job, "servers": servers, "algorithm": algorithm, "channels": job.channels,
                       "chunk_bytes": job.chunk_bytes}

    def pipeline_job(self, at: DataPath, raw: dict, hosts: tuple[str, ...], job, stages: int) -> dict:
        """A pipeline-parallel job (host/pipeline.py): its stages, micro-batches and schedule."""
        from dataclasses import replace

        from testbed.host import training

        if "pipeline" not in raw:
            raise self.fail(at + ("parallelism", "pipeline"), f"{stages} pipeline stages need the "
                            "micro-batches' numbers: give 'pipeline' (microbatches, tokens, hidden, vocab)")
        if stages < 2:
            raise self.fail(at + ("pipeline",), "a pipeline job needs at least 2 stages: give "
                            "parallelism.pipeline")
        for key in ("bucket_bytes", "first_bucket_bytes", "small_bucket", "algorithm", "channels", "chunk_bytes",
                    "scheduling"):
            if key in raw:
                raise self.fail(at + (key,), "a pipeline job sends point-to-point messages and its "
                                "embedding all-reduce only (no buckets, algorithm or channels)", key=True)
        spec = raw["pipeline"]
        pipe = training.Pipe(stages=stages, microbatches=spec["microbatches"], tokens=spec["tokens"],
                             hidden=spec["hidden"], vocab=spec["vocab"], schedule=spec.get("schedule", "1f1b"))
        if pipe.vocab * pipe.hidden * job.dtype_bytes < 2:
            raise self.fail(at + ("pipeline", "vocab"), "the embedding's gradient must be at least 2 bytes")
        return {"job": replace(job, algorithm="ring", pipe=pipe), "servers": (), "algorithm": "ring",
                "channels": 1, "chunk_bytes": 0}

    def moe_job(self, at: DataPath, raw: dict, hosts: tuple[str, ...], job) -> dict:
        """An MoE job (host/moe.py): its expert-parallel groups, experts and all-to-all block."""
        from dataclasses import replace

        from testbed.host import moe, training

        degree = raw.get("parallelism", {}).get("expert", 1)
        if "moe" not in raw:
            raise self.fail(at + ("parallelism", "expert"), f"expert parallelism {degree} needs a model "
                            "with experts: give 'moe' (experts, top_k, hidden, tokens)")
        spec = raw["moe"]
        if degree < 2:
            raise self.fail(at + ("moe",), "an MoE job needs expert parallelism of at least 2 ranks: give "
                            "parallelism.expert")
        if len(hosts) % degree:
            raise self.fail(at + ("parallelism", "expert"), f"expert parallelism {degree} does not divide "
                            f"the job's {len(hosts)} GPUs into groups")
        if spec["experts"] % degree:
            raise self.fail(at + ("moe", "experts"), f"{spec['experts']} experts cannot be spread evenly "
                            f"over {degree} expert-parallel ranks")
        if spec["top_k"] > spec["experts"]:
            raise self.fail(at + ("moe", "top_k"), f"top_k {spec['top_k']} is more than the "
                            f"{spec['experts']} experts")
        if "bucket_bytes" in raw or "first_bucket_bytes" in raw or "small_bucket" in raw:
            key = next(k for k in ("bucket_bytes", "first_bucket_bytes", "small_bucket") if k in raw)
            raise self.fail(at + (key,), "an MoE job has no gradient buckets (its all-to-alls only)",
                            key=True)
        if raw.get("algorithm", "ring") != "ring":
            raise self.fail(at + ("algorithm",), "an MoE job's all-to-alls are direct; give no algorithm",
                            key=True)
        k = spec["top_k"]
        share = raw["compute"].get("expert_share", 2 * k / (1 + 2 * k))
        job = replace(job, algorithm="direct", scheduling=raw.get("scheduling", "static"), moe=training.Moe(
            experts=spec["experts"], expert_degree=degree, tokens=spec["tokens"], hidden=spec["hidden"],
            top_k=k, expert_share=float(share), capacity_factor=spec.get("capacity_factor"),
            min_capacity=spec.get("min_capacity", 0)))
        block = moe.block_bytes(job)
        if block < job.channels:
            raise self.fail(at + ("moe",), f"an all-to-all block of {block} B cannot give each of "
                            f"{job.channels} channel(s) a byte")
        return {"job": job, "servers": (), "algorithm": "direct", "channels": job.channels,
                "chunk_bytes": job.chunk_bytes}

    def tuned(self, at: DataPath, raw: dict, op: str, ranks: int, sizes: list[int], servers: tuple) -> tuple:
        """algorithm: auto: per size, the tuning table's entry of the nearest size (log scale)."""
        import json

        for key in ("channels", "chunk_bytes"):
            if key in raw:
                raise self.fail(at + (key,), "comes from the tuning table with algorithm: auto", key=True)
        if "tuning" not in raw:
            raise self.fail(at + ("algorithm",), "auto needs 'tuning': the tuning.json that testbed tune wrote")
        path = os.path.join(os.path.dirname(self.smap.file), raw["tuning"])
        try:
            table = json.loads(open(path, encoding="utf-8").read())
            entries = sorted(table["table"], key=lambda e: e["size_bytes"])
            table_op, table_ranks = table["op"], table["ranks"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise self.fail(at + ("tuning",), f"'{raw['tuning']}' is not a tuning table of testbed tune "
                            f"({type(error).__name__}: {error})") from None
        if (table_op, table_ranks) != (op, ranks):
            raise self.fail(at + ("tuning",), f"'{raw['tuning']}' tunes {table_op} over {table_ranks} ranks; "
                            f"this phase runs {op} over {ranks} ranks")
        out = []
        for size in sizes:
            e = min(entries, key=lambda e: abs(math.log(e["size_bytes"] / size)))
            if e["algorithm"] == "hierarchical" and not servers:
                raise self.fail(at + ("tuning",), f"its choice for {size} B is hierarchical, which needs "
                                "whole servers selected")
            if size < ranks * e["channels"]:
                raise self.fail(at + ("tuning",), f"its choice for {size} B has {e['channels']} channels, "
                                f"too many for {ranks} ranks")
            out.append((e["algorithm"], int(e["channels"]), int(e["chunk_bytes"])))
        return tuple(out)

    def hosts(self, at: DataPath, selection: Any, topo: Topology) -> tuple[str, ...]:
        if selection == "all":
            return tuple(topo.hosts)
        for j, name in enumerate(selection):
            self.known_host(at + (j,), name, topo)
        return tuple(selection)

    def known_host(self, at: DataPath, name: str, topo: Topology) -> None:
        if name not in topo.nodes or not topo.nodes[name].is_host:
            raise self.fail(at, f"'{name}' is not a host of this topology "
                            f"(hosts are h1..h{len(topo.hosts)})")

    def incast(self, at: DataPath, raw: dict, hosts: tuple[str, ...], topo: Topology) -> dict:
        """incast and stream: the receiver and its senders (a number of them: remote-ToR hosts first)."""
        receiver = raw.get("receiver", hosts[0])
        self.known_host(at + ("receiver",), receiver, topo)
        others = [h for h in hosts if h != receiver]
        senders = raw.get("senders", len(others))
        if isinstance(senders, int):
            if senders > len(others):
                raise self.fail(at + ("senders",), f"{senders} senders asked for, but only "
                                f"{len(others)} hosts besides the receiver are selected")
            near = set(topo.tors_of(receiver))
            # remote hosts first, so the incast crosses the fabric
            others.sort(key=lambda h: bool(near & set(topo.tors_of(h))))
            senders = others[:senders]
        else:
            for j, name in enumerate(senders):
                self.known_host(at + ("senders", j), name, topo)
                if name == receiver:
                    raise self.fail(at + ("senders", j), f"'{name}' is the receiver; "
                                    "a host does not send to itself")
        return {"receiver": receiver, "senders": tuple(senders)}

    def permutation(self, at: DataPath, hosts: tuple[str, ...], topo: Topology, cross: bool,
                    seed: str) -> tuple[tuple[str, str], ...]:
        """A seeded random permutation without fixed points (and, with `cross`,
        without same-ToR pairs): shuffle, then repair bad pairs by swapping
        receivers with a random partner that keeps both pairs good."""
        rng = random.Random(f"permutation:{seed}")
        tor = {h: tuple(topo.tors_of(h)) for h in hosts}
        n = len(hosts)

        def good(i: int, receiver: str) -> bool:
            return hosts[i] != receiver and not (cross and tor[hosts[i]] == tor[receiver])

        order = list(hosts)
        rng.shuffle(order)
        for _ in range(100):
            bad = [i for i in range(n) if not good(i, order[i])]
            if not bad:
                return tuple(zip(hosts, order))
            for i in bad:
                if good(i, order[i]):
                    continue
                partners = [j for j in range(n) if good(i, order[j]) and good(j, order[i])]
                if partners:
                    j = rng.choice(partners)
                    order[i], order[j] = order[j], order[i]
        raise self.fail(at + ("kind",), "found no permutation sending every selected host to a "
                        "host on another ToR; select more hosts or set cross_tor: false")

    def fault(self, i: int, topo: Topology, duration: float) -> Fault:
        at: DataPath = ("faults", i)
        raw = self.get(at)
        if raw["at_s"] >= duration:
            raise self.fail(at + ("at_s",), f"{raw['at_s']:g} is not before the end of the run "
                            f"(duration_s {duration:g})")
        target, kind = raw["target"], raw["kind"]
        used_by = {"period_s": ("link_flap",), "count": ("link_flap",),
                   "duration_s": ("link_degrade", "agent_stall", "switch_restart", "host_slow", "gpu_slow"),
                   "rate_mbps": ("link_degrade", "host_slow"), "extra_delay_us": ("link_degrade",),
                   "loss": ("link_degrade",), "delay_ms": ("host_slow",), "factor": ("gpu_slow",)}
        needs = {"link_flap": ("period_s", "count"), "agent_stall": ("duration_s",),
                 "switch_restart": ("duration_s",), "host_slow": ("duration_s",),
                 "gpu_slow": ("factor",)}.get(kind, ())
        for key, kinds in used_by.items():
            if key in needs and key not in raw:
                raise self.fail(at + ("kind",), f"{kind} needs {key}")
            if key in raw and kind not in kinds:
                raise self.fail(at + (key,), f"is only used by {' and '.join(kinds)}, not by {kind}")
        if kind == "link_flap" and raw["at_s"] + raw["period_s"] * raw["count"] > duration:
            raise self.fail(at + ("count",), f"{raw['count']} periods of {raw['period_s']:g} s from "
                            f"{raw['at_s']:g} s end after the run (duration_s {duration:g})")
        if kind == "link_degrade" and not any(k in raw for k in ("rate_mbps", "extra_delay_us", "loss")):
            raise self.fail(at + ("kind",), "link_degrade needs at least one of rate_mbps, extra_delay_us, loss")
        if kind == "host_slow" and not any(k in raw for k in ("delay_ms", "rate_mbps")):
            raise self.fail(at + ("kind",), "host_slow needs delay_ms or rate_mbps (or both)")
        if "duration_s" in raw and raw["at_s"] + raw["duration_s"] > duration:
            raise self.fail(at + ("duration_s",), f"{raw['duration_s']:g} s from {raw['at_s']:g} s ends after "
                            f"the run (duration_s {duration:g})")
        if kind in ("host_down", "agent_stall", "host_slow", "gpu_slow"):
            self.known_host(at + ("target",), target, topo)
        elif kind == "switch_restart":
            if target not in topo.switches:
                raise self.fail(at + ("target",), f"'{target}' is not a switch of this topology "
                                f"(switches: {', '.join(topo.switches[:4])}, ...)")
        else:
            try:
                topo.link(target)
            except TopoError:
                example = ", ".join(link.name for link in (topo.links[0], topo.links[-1]))
                raise self.fail(at + ("target",), f"'{target}' is not a link of this topology "
                                f"(links are named like {example}; see testbed show)") from None
        return Fault(float(raw["at_s"]), kind, target, float(raw.get("period_s", 0.0)), int(raw.get("count", 0)),
                     duration_s=float(raw["duration_s"]) if "duration_s" in raw else None,
                     rate_mbps=float(raw["rate_mbps"]) if "rate_mbps" in raw else None,
                     extra_delay_us=float(raw.get("extra_delay_us", 0.0)), loss=float(raw.get("loss", 0.0)),
                     delay_ms=float(raw.get("delay_ms", 0.0)), factor=float(raw.get("factor", 1.0)))


def _default_name(file: str) -> str:
    stem = os.path.splitext(os.path.basename(file))[0]
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in stem) or "scenario"
