"""`testbed validate FILE...` and `testbed show FILE`."""

from __future__ import annotations

import argparse
import sys

from testbed.scenario import capacity
from testbed.scenario.errors import ScenarioError
from testbed.scenario.feasibility import check_runnable, machine_problems, server_problems
from testbed.scenario.load import load_scenario
from testbed.scenario.model import Scenario
from testbed.scenario.processes import describe_placement, switch_placement
from testbed.scenario.variants import expand_variants
from testbed.topo.entropy import layout_of
from testbed.topo.render import describe


def register(subparsers) -> None:
    validate = subparsers.add_parser(
        "validate", help="check scenario files; print 'FILE: ok (N variants)' or 'file:line: error'",
        description="Load and validate each scenario, every variant included, without running anything. "
                    "A good file prints 'FILE: ok (N variants)'; a bad one prints one line 'file:line: what is "
                    "wrong' on stderr, and the command exits 1. Fields are documented in scenarios/README.md.")
    validate.add_argument("files", nargs="+", metavar="FILE", help="scenario YAML files")
    validate.set_defaults(func=run_validate)
    show = subparsers.add_parser(
        "show", help="print a scenario's resolved settings and its topology: counts, ports, "
                     "addresses, example path sets",
        description="Print what a scenario resolves to (defaults filled in, base RTT and BDP, workload, "
                    "variants) and the fabric it builds: node and link counts, every switch's port map, "
                    "host addresses and example equal-cost path sets.")
    show.add_argument("file", metavar="FILE", help="scenario YAML file")
    show.add_argument("--variant", default=None, metavar="NAME",
                      help="show this variant's resolved settings (e.g. load_balancing=spray) instead of the base")
    show.set_defaults(func=run_show)


def run_validate(args: argparse.Namespace) -> int:
    failed = 0
    for file in args.files:
        try:
            scenario = load_scenario(file)
        except ScenarioError as error:
            print(error, file=sys.stderr)
            failed += 1
            continue
        variants = expand_variants(scenario)
        problem = _cannot_run(scenario, variants)
        if problem is not None:
            print(problem, file=sys.stderr)
            failed += 1
            continue
        n = len(variants)
        print(f"{file}: ok ({n} variant{'s' if n != 1 else ''})")
        for note in _logging_notes(scenario, variants):
            print(f"  note: {note}")
        for variant in variants:  # the file is valid; whether this machine can run it is a note
            try:  # the check's line names the costs it planned with and the runs they came from
                print(f"  {variant.name or 'the scenario'}: {capacity.check(variant.scenario)}")
            except capacity.CapacityError as error:
                print(f"  note: {variant.name or 'the scenario'}: {error}")
                break
    return 1 if failed else 0


def _int(telemetry) -> str:
    """fabric.int as `testbed show` prints it."""
    if not telemetry.enabled:
        return "off"
    share = "every DATA cell" if telemetry.sample == 1 else f"1 DATA cell in {telemetry.sample}"
    return f"on ({share}, at most {telemetry.max_hops} hop records)"


def _cannot_run(scenario: Scenario, variants) -> ScenarioError | None:
    """The first reason a variant cannot run as written (feasibility's rules), None when none."""
    from testbed.scenario.workload import scenario_messages  # the phases' messages, as a run makes them

    problem = server_problems(scenario)
    if problem is not None:
        return problem
    for variant in variants:
        try:
            check_runnable(variant.scenario, scenario_messages(variant.scenario))
        except ScenarioError as error:
            return error
        problem = machine_problems(variant.scenario)
        if problem is not None:
            return scenario._origin.smap.error(_where_set(scenario, variant, ("switch", "target")), problem)
    return None


def _logging_notes(scenario: Scenario, variants) -> list[str]:
    """What a variant asks to log and its switches will not: the native packet path (switch.backend
    native) writes no per-packet log, whatever switch.log_level asks for (testbed.targets)."""
    from testbed.targets import PER_PACKET_LOG_LEVELS

    notes = []
    for variant in variants:
        switch = variant.scenario.switch
        if switch.target != "bmv2" and switch.backend == "native" and switch.log_level in PER_PACKET_LOG_LEVELS:
            where = _where_set(scenario, variant, ("switch", "log_level"))
            said = scenario._origin.smap.error(where, (f"{variant.name}: " if len(variants) > 1 else "")
                                               + f"{switch.log_level} asks for every packet, but switch.backend "
                                                 "native writes no per-packet log (only the Python packet path "
                                                 "does: backend python or auto)")
            if str(said) not in notes:
                notes.append(str(said))
    return notes


def _where_set(scenario: Scenario, variant, path: tuple) -> tuple:
    """The line that gave this variant its value at `path`: its variant axis's value, else the field."""
    from testbed.scenario.variants import SHORT_NAMES

    axes = scenario._origin.data.get("variants") or {}
    for key, value in variant.assignments:
        target = SHORT_NAMES.get(key) or tuple(key.split("."))
        if target == path and key in axes:
            return ("variants", key, axes[key].index(value))
    return path


def run_show(args: argparse.Namespace) -> int:
    from testbed.errors import TestbedError

    scenario = load_scenario(args.file)
    problem = server_problems(scenario)  # show says who runs where: every server must answer
    if problem is not None:
        raise problem
    if args.variant is not None:
        variants = {v.name: v for v in expand_variants(scenario)}
        if args.variant not in variants:
            raise TestbedError(f"{args.file}: no variant {args.variant}; variants: {', '.join(variants)}")
        print(f"variant {args.variant}")
        scenario = variants[args.variant].scenario
    print(summary(scenario))
    print(describe_placement(scenario, switch_placement(scenario)))
    print()
    print(describe(scenario.topo))
    print()
    print(link_names(scenario))
    return 0


def link_names(s: Scenario) -> str:
    """Every cable by the name faults target (`faults[].target`), with its tier's rate and delay."""
    lines = ["links (the names fault targets use):"]
    for link in s.topo.links:
        params = s.links.host if link.tier == "host" else s.links.fabric
        lines.append(f"  {link.name:<16} {link.tier:<6} {link.a}:{link.a_port} - {link.b}:{link.b_port}  "
                     f"{params.rate_mbps:g} Mbit/s, {params.delay_us:g} us")
    return "\n".join(lines)


def _entropy_fit(s: Scenario) -> str:
    paths = layout_of(s.topo).paths
    fit = "a multiple: every path equally often" if s.fabric.entropy_values % paths == 0 else \
        "not a multiple: some paths more often than others"
    return f"{paths} equal-cost paths between the farthest hosts, {fit}"


def summary(s: Scenario) -> str:
    d, f, t = s.derived, s.fabric, s.transport
    lines = [
        f"scenario {s.name}: {s.description}".rstrip(": "),
        f"duration {s.duration_s:g} s, seed {s.seed}, switch target {s.switch.target} "
        f"({s.switch.program}, {s.switch.priority_queues} priority queue(s))",
        f"links: host {_link(s.links.host)}; fabric {_link(s.links.fabric)}",
        f"base RTT {d.base_rtt_us / 1000:.2f} ms over {d.path_host_links}+{d.path_fabric_links} "
        f"links, BDP {d.bdp_cells} cells ({d.bdp_bytes} B), oversubscription {d.oversubscription:g}:1",
        f"fabric: {f.load_balancing}, {f.cell_size} B cells, {f.entropy_values} entropy values "
        f"({_entropy_fit(s)}), ECN {_ecn(s)}, credits {'on' if f.credits.enabled else 'off'}, "
        f"PFC {f'XOFF/XON {f.pfc.xoff_cells}/{f.pfc.xon_cells} DATA cells' if f.pfc.enabled else 'off'}, "
        f"INT {_int(f.int_telemetry)}",
        f"transport: cc {t.cc}, reorder window {t.reorder_window_cells} cells, "
        f"RTO {t.rto_low_rtt:g}/{t.rto_high_rtt:g} RTT",
        "workload:",
    ]
    for p in s.workload:
        size = f", {p.message_bytes} B x {p.count}" if p.message_bytes else f", x {p.count}"
        extra = ""
        if p.kind == "incast":
            extra = f", {len(p.senders)}:1 into {p.receiver}"
        elif p.kind == "stream":
            size = f", {p.count} x {p.message_bytes} B every {p.interval_s * 1000:g} ms"
            extra = f", from {' '.join(p.senders)} in turn into {p.receiver}"
        elif p.kind == "poisson":
            size = f", {p.message_bytes} B messages"
            extra = (f", Poisson arrivals for {p.arrivals_s:g} s at {p.load:g} of "
                     f"{p.link_rate_bps / 1e6:g} Mbit/s per host (seed {p.arrivals_seed})")
        elif p.kind == "permutation":
            extra = ", " + _first(f"{a}->{b}" for a, b in p.pairs)
        elif p.kind == "collective":
            size = f", {p.op} {p.algorithm}, sizes {'/'.join(str(b) for b in p.sizes_bytes)} B x {p.count}"
            extra = (f", {p.channels} channel(s), chunk {p.chunk_bytes} B"
                     + (", dynamic channel scheduling" if p.scheduling == "dynamic" else "")
                     + (f", {len(p.servers)} servers" if p.servers else "") + ", ranks " + _first(p.hosts))
        elif p.kind == "training" and p.job.pipe is not None:
            from testbed.host.pipeline import activation_bytes

            j, q = p.job, p.job.pipe
            size = (f", pipeline job of {q.stages} stages x {len(p.hosts) // q.stages} replica(s), "
                    f"{q.microbatches} micro-batches ({q.schedule}), {p.count} iterations")
            extra = (f", activations and gradients of {activation_bytes(j)} B, embedding all-reduce of "
                     f"{q.vocab * q.hidden * j.dtype_bytes} B, forward {j.forward_us / 1000:g} ms, backward "
                     f"{j.backward_us / 1000:g} ms per iteration's batch, jitter {j.jitter:g}"
                     + (f", {j.slow_host} x{j.slow_factor:g}" if j.slow_host else ""))
        elif p.kind == "training" and p.job.moe is not None:
            from testbed.host.moe import block_bytes, steps

            j, m = p.job, p.job.moe
            size = (f", MoE job of {j.layers} layers x {m.experts} experts (top-{m.top_k}, hidden {m.hidden}, "
                    f"{m.tokens} tokens per GPU), expert-parallel groups of {m.expert_degree}, {p.count} iterations")
            extra = (f", {len(steps(j.layers))} all-to-alls per iteration of {block_bytes(j)} B per peer ("
                     + ("dropless" if m.capacity_factor is None else f"capacity factor {m.capacity_factor:g}")
                     + f", {j.channels} channel(s), {j.scheduling}), forward {j.forward_us / 1000:g} ms, backward "
                     f"{j.backward_us / 1000:g} ms, expert share {m.expert_share:.3g}, jitter {j.jitter:g}"
                     + (f", {j.slow_host} x{j.slow_factor:g}" if j.slow_host else ""))
        elif p.kind == "training":
            from testbed.host.training import buckets

            j = p.job
            size = (f", data-parallel job of {j.parameters} parameters x {j.dtype_bytes} B in {j.layers} layers, "
                    f"{p.count} iterations")
            extra = (f", buckets {'/'.join(str(b.size_bytes) for b in buckets(j))} B ({j.algorithm}, "
                     f"{j.channels} channel(s)), forward {j.forward_us / 1000:g} ms, backward "
                     f"{j.backward_us / 1000:g} ms, jitter {j.jitter:g}"
                     + (f", {j.slow_host} x{j.slow_factor:g}" if j.slow_host else ""))
        lines.append(f"  at {p.start_s:g} s {p.name}: {len(p.hosts)} hosts{size}{extra}")
    for fault in s.faults:
        lines.append(f"  fault at {fault.at_s:g} s: {fault.kind} {fault.target}")
    variants = expand_variants(s)
    lines.append(f"variants ({len(variants)}): " + ", ".join(v.name for v in variants))
    return "\n".join(lines)


SHOWN = 16  # items of a long list (pairs, ranks) printed before "... and N more"


def _first(items) -> str:
    """Up to SHOWN items, space-separated, then how many more: a k=16 permutation stays one readable line."""
    items = list(items)
    more = len(items) - SHOWN
    return " ".join(items[:SHOWN]) + (f" ... and {more} more" if more > 0 else "")


def _link(p) -> str:
    return f"{p.rate_mbps:g} Mbit/s, {p.delay_us:g} us, {p.buffer_packets} packets"


def _ecn(s: Scenario) -> str:
    e = s.fabric.ecn
    if e.mode == "step":
        return f"step K={e.k_cells} cells"
    if e.mode == "red":
        return f"red {e.kmin_cells}-{e.kmax_cells} cells pmax {e.pmax:g}"
    return "off"
