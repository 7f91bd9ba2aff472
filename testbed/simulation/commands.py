"""`testbed sim`: a scenario on the virtual-clock simulator, with its report."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from testbed.simulation import sweep
from testbed.telemetry.rundir import default_runs_dir


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sim", help="run a scenario on the virtual-clock simulator (no root, no Mininet)",
        description="Every variant of the scenario on the virtual clock, its switches running the scenario's P4 "
                    "program on the native engine (or the hand-written model, --switches model); writes "
                    "runs/<scenario>/<timestamp>-sim/ with records, summary.json, report.md and busbw.png.")
    p.add_argument("scenario", help="the scenario file")
    p.add_argument("--runs-dir", default=default_runs_dir(),
                   help="where results go (default: runs/, or $TESTBED_RUNS_DIR when set)")
    p.add_argument("--variant", action="append", default=None,
                   help="run only this variant (repeatable; default: all)")
    p.add_argument("--host-rate-mbps", type=float, default=None,
                   help="slow every variant as testbed run --fit does, to this host link rate (rates times "
                        "f, every time over f): the simulator's figures at the rate an emulated run used")
    add_switches_option(p)
    sweep.add_options(p)  # the variants side by side (simulation/sweep.py)
    p.set_defaults(func=sim_command)

    t = subparsers.add_parser(
        "tune", help="pick a collective's algorithm x channels x chunk size per size, on the simulator",
        description="For the scenario's first 'collective' phase (its op and ranks), measure candidates on "
                    "the simulator: coordinate descent (the choice) and exhaustive search (the best) per size; "
                    "writes tuning.json and tuning.md in runs/<scenario>/<timestamp>-tune/.")
    t.add_argument("scenario", help="the scenario file")
    t.add_argument("--sizes", type=_ints, default=None, help="bytes, comma-separated (default: the phase's sizes)")
    t.add_argument("--algorithms", type=lambda s: s.split(","), default=None,
                   help="comma-separated (default: every algorithm of the op this topology allows)")
    t.add_argument("--channels", type=_ints, default=None, help="comma-separated (default: 1,2,4)")
    t.add_argument("--chunks", type=_ints, default=None,
                   help="chunk sizes in bytes, comma-separated, 0 = no pipelining (default: 0,4096,16384,65536)")
    t.add_argument("--load-balancing", type=lambda s: s.split(","), default=None, dest="balancings",
                   help="the transport knob: load balancing modes, comma-separated (default: the scenario's own "
                        "and the other of ecmp and spray)")
    t.add_argument("--confirm", action="store_true",
                   help="then run the choice and the best fixed setting on the emulated fabric (testbed run --fit, "
                        "needs root) and on the simulator at the same rate, for the sizes that fit "
                        "--confirm-budget-s; writes confirm.json and confirm.md")
    t.add_argument("--confirm-budget-s", type=float, default=600.0,
                   help="emulated seconds of traffic the confirmation may take, estimated from the simulator's "
                        "times and the --fit slow-down (default: 600)")
    t.add_argument("--from", dest="tuned", default=None, metavar="TUNE_DIR",
                   help="with --confirm: confirm the tuning.json of an earlier testbed tune of this scenario "
                        "(its directory) instead of searching again; confirm.* are written there")
    t.add_argument("--runs-dir", default=default_runs_dir(),
                   help="where results go (default: runs/, or $TESTBED_RUNS_DIR when set)")
    add_switches_option(t)
    sweep.add_options(t)  # the candidates side by side (simulation/sweep.py)
    t.set_defaults(func=tune_command)

    r = subparsers.add_parser(
        "reachability", help="the N x N reachability matrix of a scenario's fabric, tenants checked",
        description="One cell per ordered pair of hosts through the scenario's P4 program with the controller's "
                    "plan, on the simulator's switches (testbed/simulation/reachability.py): prints the matrix "
                    "per variant and exits 1 if a pair within a tenant does not reach, or a pair across tenants "
                    "does or is not counted at its source's ToR. A run directory is checked with its scenario.yaml, "
                    "after what the run itself checked before its traffic (an emulated run's ping-all).")
    r.add_argument("scenario", help="the scenario file, or a run directory (testbed run or sim)")
    r.set_defaults(func=reachability_command)


def reachability_command(args) -> int:
    from testbed.scenario import expand_variants, load_scenario
    from testbed.simulation.reachability import measure, render

    path = Path(args.scenario)
    scenario = load_scenario(path / "scenario.yaml" if path.is_dir() else path)
    broken = 0
    if path.is_dir():  # what the run itself checked before its traffic (an emulated run's ping-all)
        from testbed.telemetry.tenants import reachability_lines

        for result_file in sorted(path.glob("*/result.json")):
            result = json.loads(result_file.read_text())
            lines = reachability_lines({result.get("variant") or result_file.parent.name:
                                        {"pingall": result.get("pingall")}})
            if lines:
                print("the run's own check: " + lines[0][2:])
                broken += "**BROKEN**" in lines[0]
    for variant in expand_variants(scenario):
        topo = variant.scenario.topo
        tors = {h: topo.tors_of(h)[0] for h in topo.hosts}
        matrix = measure(variant.scenario)
        print(f"{variant.name}:")
        print("\n".join(render(matrix, tors)))
        broken += bool(matrix.check(tors))
    return 1 if broken else 0


def _ints(text: str) -> list[int]:
    import argparse

    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of non-negative integers")
    return values


def add_switches_option(parser) -> None:
    parser.add_argument("--switches", choices=("program", "model"), default="program",
                        help="program (default): every switch runs the scenario's P4 program on the native "
                             "engine; model: the hand-written model of fabric.p4 (sim.py)")


def tune_command(args) -> int:
    from testbed.errors import TestbedError
    from testbed.scenario import load_scenario
    from testbed.simulation.tune import tune_scenario

    scenario = load_scenario(args.scenario)
    if args.confirm:
        from testbed.emulation.commands import need_root

        need_root("testbed tune --confirm")  # before minutes of simulation, not after
    if args.tuned is not None:
        if not args.confirm:
            raise TestbedError("--from confirms an earlier tuning: it needs --confirm")
        out_dir = Path(args.tuned)
        try:
            result = json.loads((out_dir / "tuning.json").read_text())
            tuned_hosts = result["hosts"]
            if not isinstance(result["rows"], list) or not result["space"]["load_balancing"]:
                raise ValueError("rows or load balancing space missing")
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise TestbedError(f"--from {args.tuned}: no tuning.json of this testbed tune there "
                               f"({type(error).__name__}: {error})") from None
        phase = next((p for p in scenario.workload if p.kind == "collective"), None)
        if phase is None or (result["op"], tuned_hosts) != (phase.op, list(phase.hosts)):
            raise TestbedError(f"--from {args.tuned}: its tuning.json tunes {result['op']} over other ranks "
                               f"than {args.scenario}'s first collective phase")
    else:
        out_dir = Path(args.runs_dir) / scenario.name / (time.strftime("%Y%m%d-%H%M%S") + "-tune")
        path = tune_scenario(scenario, args.sizes, args.algorithms, args.channels, args.chunks, out_dir,
                             progress=lambda m: print(m, flush=True), balancings=args.balancings,
                             jobs=args.jobs, cluster=args.cluster, switches=args.switches)
        print(path.read_text())
        print(f"tuning: {path}")
    if args.confirm:
        from testbed.simulation.confirm import confirm_on_fabric

        result = json.loads((out_dir / "tuning.json").read_text())
        from testbed import progress

        with progress.display():  # its simulations and emulated runs show as tasks
            confirmed = confirm_on_fabric(scenario, result, out_dir, args.confirm_budget_s,
                                          progress=lambda m: print(m, flush=True))
        print(confirmed.read_text())
        print(f"confirmation: {confirmed}")
    return 0


def sim_command(args) -> int:
    from testbed import progress
    from testbed.errors import TestbedError
    from testbed.scenario import expand_variants, load_scenario
    from testbed.simulation.variants import run_all
    from testbed.telemetry.collectives import write_sim_report
    from testbed.telemetry.rundir import keep_scenario_copy

    scenario = load_scenario(args.scenario)
    variants = expand_variants(scenario)
    if args.variant:
        unknown = sorted(set(args.variant) - {v.name for v in variants})
        if unknown:
            raise TestbedError(f"no variant {', '.join(unknown)}; variants: {', '.join(v.name for v in variants)}")
        variants = [v for v in variants if v.name in args.variant]
    if args.host_rate_mbps is not None:
        import dataclasses

        from testbed.scenario.timescale import slowed

        slow = []
        for v in variants:
            nominal = v.scenario.links.host.rate_mbps
            if not 0 < args.host_rate_mbps <= nominal:
                raise TestbedError(f"--host-rate-mbps {args.host_rate_mbps:g}: {v.name} runs its host links at "
                                   f"{nominal:g} Mbit/s; the rate must be above 0 and at most that")
            slow.append(dataclasses.replace(v, scenario=slowed(v.scenario, args.host_rate_mbps / nominal)))
        variants = slow
        scenario = slowed(scenario, args.host_rate_mbps / scenario.links.host.rate_mbps)  # the report's header
    switches = getattr(args, "switches", "model")
    isolated = sorted({v.scenario.fabric.tenant_isolation for v in variants} - {"none"})
    if switches == "model" and isolated:
        raise TestbedError(f"{args.scenario}: fabric.tenant_isolation ({', '.join(isolated)}) is done by fabric.p4 "
                           "and the traffic manager, and --switches model (sim.py's hand-written model) does not "
                           "model tenants: run it on the program (the default)")
    out_dir = Path(args.runs_dir) / scenario.name / (time.strftime("%Y%m%d-%H%M%S") + "-sim")
    keep_scenario_copy(scenario, out_dir)
    jobs, cluster = getattr(args, "jobs", 1), getattr(args, "cluster", None)  # each variant a unit of a sweep
    with sweep.workers(len(variants), jobs, cluster, ["testbed.simulation.variants"]) as pool, \
            progress.display(len(variants), "variants") as shown:  # the workers first: see sweep.workers
        run_dirs, summaries, unfinished = run_all(variants, out_dir, switches, shown, jobs, cluster, pool)
    report = write_sim_report(scenario, run_dirs, summaries, out_dir)
    if getattr(args, "diagnose", False):  # testbed diagnose registers the flag and its report section
        args.diagnose_report(run_dirs, Path(report))
    print(f"report: {report}")
    if unfinished:  # the report is written; the exit status says the traffic did not all arrive
        print(f"testbed: messages left unfinished at the end of the run in {', '.join(unfinished)} "
              f"(duration_s {scenario.duration_s:g} s)", file=sys.stderr)
        return 1
    return 0
