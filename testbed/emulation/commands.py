"""`testbed run`, `testbed clean` and `testbed shell`."""

from __future__ import annotations

import os
import time
from pathlib import Path

from testbed.emulation.runlock import hold_run_lock
from testbed.errors import TestbedError
from testbed.scenario import capacity
from testbed.telemetry.rundir import default_runs_dir, keep_scenario_copy

REPO_ROOT = Path(__file__).resolve().parents[2]


def need_root(what: str) -> None:
    if os.geteuid() != 0:
        raise TestbedError(f"{what} needs root (network namespaces, Mininet); run it with sudo")


def run_command(args) -> int:
    from testbed.emulation.run import refuse_servers
    from testbed.scenario import expand_variants, load_scenario

    scenario = load_scenario(args.scenario)
    variants = expand_variants(scenario)
    if args.variant:
        chosen = [v for v in variants if v.name in args.variant]
        unknown = set(args.variant) - {v.name for v in chosen}
        if unknown:
            raise TestbedError(f"{args.scenario}: no variant named {', '.join(sorted(unknown))} "
                               f"(variants: {', '.join(v.name for v in variants)})")
        variants = chosen
    refuse_servers(scenario)
    need_root("testbed run")
    with hold_run_lock(f"testbed run {args.scenario}"):
        _run_variants(args, scenario, variants)
        return 0


def run_scenario_file(path: str, runs_dir: str, fit: bool = True, what: str = "testbed run") -> Path:
    """`testbed run [--fit] PATH` from another command (testbed tune --confirm): its output directory."""
    import argparse

    from testbed.emulation.run import refuse_servers
    from testbed.scenario import expand_variants, load_scenario

    scenario = load_scenario(path)
    refuse_servers(scenario)
    need_root(what)
    args = argparse.Namespace(fit=fit, force=False, runs_dir=runs_dir)
    with hold_run_lock(f"{what} {path}"):
        return _run_variants(args, scenario, expand_variants(scenario))


def _run_variants(args, scenario, variants) -> Path:
    from testbed import progress
    from testbed.emulation.run import VariantRun
    from testbed.emulation.switches import resolve_target
    from testbed.telemetry.report import write_report
    from testbed.telemetry.summary import summarize_variant

    if args.fit:
        variants = fitted_together(variants)
    for variant in variants:  # refuse before anything is built: every variant's target and rates
        resolve_target(variant.scenario.switch.target)
        try:
            print(f"{variant.name or scenario.name}: {capacity.check(variant.scenario)}", flush=True)
        except capacity.CapacityError:
            if not args.force:
                raise
            print(f"warning: --force: {variant.name or scenario.name} may exceed this machine", flush=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = Path(args.runs_dir) / scenario.name / stamp
    keep_scenario_copy(scenario, out_dir)
    run_dirs, summaries = {}, {}
    with progress.display(len(variants), "variants") as shown:
        for number, variant in enumerate(variants, start=1):
            prefix = f"[{number}/{len(variants)} {variant.name}]"
            print(f"{prefix} starting", flush=True)
            run_dir = out_dir / variant.name.replace("=", "-").replace(",", "_")
            started = time.monotonic()
            VariantRun(variant, run_dir, REPO_ROOT,
                       progress=lambda message: print(f"{prefix} {message}", flush=True),
                       agents_per_process=getattr(args, "agents_per_process", None)).run()
            run_dirs[variant.name] = run_dir
            summaries[variant.name] = summarize_variant(run_dir, variant.scenario.topo, variant.scenario)
            print(f"{prefix} done in {time.monotonic() - started:.0f} s", flush=True)
            shown.advance(variant.name)
    report = write_report(scenario, run_dirs, summaries, out_dir)
    if getattr(args, "diagnose", False):  # testbed diagnose registers the flag and its report section
        args.diagnose_report(run_dirs, Path(report))
    print(f"report: {report}")
    return out_dir


FIT_MARGIN = 0.9  # run a little below the rate the check computes, not on its edge


def fit_factor(variant) -> float:
    """How much this variant's clock must slow to fit (1: not at all), by the capacity check."""
    s = variant.scenario
    memory = capacity.memory_problem(s)
    if memory is not None:  # no clock makes a fabric fit in memory
        raise TestbedError(f"{s.file}: {variant.name}: {memory}")
    fits = capacity.fitting_rate(s) * FIT_MARGIN
    if fits <= 0:
        raise TestbedError(f"{s.file}: {variant.name}: even its idle processes do not fit this machine; "
                           "choose a smaller fabric")
    return min(1.0, fits / s.links.host.rate_mbps)


def fitted_together(variants: list) -> list:
    """Every variant slowed by the same factor, the one the most demanding variant needs: a
    side-by-side report compares variants on the same links (rates down, times up,
    `scenario.timescale`; every ratio kept), not each at the fastest clock it alone holds."""
    import dataclasses

    from testbed.scenario.timescale import slowed

    factor = min(fit_factor(v) for v in variants)
    if factor >= 1.0:
        return variants
    out = []
    for variant in variants:
        s = variant.scenario
        slow = slowed(s, factor)
        print(f"{variant.name}: --fit: host links {s.links.host.rate_mbps:g} -> {slow.links.host.rate_mbps:.3g} "
              f"Mbit/s, every time x{1 / factor:.3g} (duration {slow.duration_s:g} s, base RTT "
              f"{slow.derived.base_rtt_us / 1000:.1f} ms, BDP still {slow.derived.bdp_cells} cells; one factor "
              "for every variant)", flush=True)
        out.append(dataclasses.replace(variant, scenario=slow))
    return out


def clean_command(args) -> int:
    from testbed.emulation.cleanup import clean_all

    results = clean_all(confirm=_ask_to_stop if args.force else None)
    if not results:
        print("nothing to clean: no run left anything behind")
    for manifest, report in results:
        if report.live is not None:
            print(f"{manifest.run_id}: left alone, the run is live: {report.live}"
                  + ("" if args.force else "; `testbed clean --force` stops a wedged run (it asks first)"))
            continue
        what = ", ".join(filter(None, [
            f"{len(report.killed)} processes" if report.killed else "",
            f"{len(report.interfaces)} interfaces" if report.interfaces else "",
            f"{len(report.namespaces)} namespaces" if report.namespaces else ""])) or "nothing left"
        print(f"{manifest.run_id}: removed {what}")
        for problem in report.problems:
            print(f"  problem: {problem}")
    return 1 if any(r.problems for _, r in results) else 0


def _ask_to_stop(manifest, why: str) -> bool:
    """--force: kill a live run only on a yes typed at a terminal; no terminal is a no."""
    import sys

    if not sys.stdin.isatty():
        print(f"{manifest.run_id}: not stopped: --force asks before killing a live run, and there is no "
              "terminal to answer on", file=sys.stderr)
        return False
    try:
        answer = input(f"{manifest.run_id} is live ({why}). Kill it and remove what it created? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def running_switch_address(name: str) -> tuple[str, int]:
    """(gRPC address, device id) of switch `name` in a running scenario, from its manifest."""
    argv = running_switch_argv(name)
    return argv[argv.index("--grpc-server-addr") + 1], int(argv[argv.index("--device-id") + 1])


def running_switch_argv(name: str) -> list[str]:
    """The command line switch `name` of a running scenario was started with, from its manifest."""
    from testbed.emulation.manifest import Manifest, registered_manifests

    for path in registered_manifests():
        manifest = Manifest.load(path)
        records = [(p.role, p.argv) for p in manifest.processes]
        records += [(p["role"], p["argv"]) for part in manifest.remote.values() for p in part["processes"]]
        for role, argv in records:  # a switch on another server listens on that server's address
            if role == f"switch {name}":
                return argv
            if role.startswith("fabric") and argv:  # its switches' argv are in its spec file
                found = _fabric_switch_argv(argv[-1], name)
                if found is not None:
                    return found
    raise TestbedError(f"no running switch named {name!r} (is a scenario running? "
                       "give HOST:PORT to attach to any switch)")


def _fabric_switch_argv(spec_path: str, name: str) -> list[str] | None:
    """Switch `name`'s argv in a fabric process's spec (None: not there, or no spec to read)."""
    import json

    try:
        spec = json.loads(Path(spec_path).read_text())
    except (OSError, ValueError):
        return None
    for switch in spec.get("switches", []) if isinstance(spec, dict) else []:
        if isinstance(switch, dict) and switch.get("name") == name:
            return list(switch.get("argv", []))
    return None


def shell_command(args) -> int:
    """p4runtime-shell attached to a switch of a running scenario (by name or address)."""
    if ":" in args.switch:
        address, device_id, argv = args.switch, args.device_id, []
    else:
        argv = running_switch_argv(args.switch)
        address, device_id = running_switch_address(args.switch)
    import p4runtime_sh.shell as sh
    from p4runtime_sh.p4runtime import SSLOptions

    ssl_options = None
    if "--grpc-server-cacert" in argv:  # switch.control_tls: the run made the shell a certificate
        from testbed.p4model.certs import run_client

        tls = run_client(argv[argv.index("--grpc-server-cacert") + 1], "shell")
        ssl_options = SSLOptions(False, str(tls.ca), str(tls.cert), str(tls.key))
    elif args.cacert:
        ssl_options = SSLOptions(False, args.cacert, args.cert, args.private_key)
    # Election id above the run's controller (0, 1): the shell becomes primary so its user can
    # write entries; the run's telemetry only reads, which needs no arbitration.
    sh.setup(device_id=device_id, grpc_addr=address, election_id=(0, 2), ssl_options=ssl_options)
    print(f"p4runtime-shell on {args.switch} (device {device_id}, {address}) as its primary controller "
          "(election id 0,2, above the run's 0,1): your writes take effect, and the run's controller "
          "cannot write to this switch until you leave", flush=True)
    try:
        from IPython import embed

        embed(user_ns={name: getattr(sh, name) for name in dir(sh) if not name.startswith("_")})
    finally:
        sh.teardown()
    return 0


def whole_number_at_least_1(text: str) -> int:
    """An argparse type: a count of processes or agents, 1 or more."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number, 1 or more")
    return value


def register(sub) -> None:
    run = sub.add_parser("run", help="run a scenario: every variant on a fresh fabric, then a report",
                         description="Build the fabric of a YAML scenario in Mininet, run its workload for "
                                     "each variant, and write a side-by-side report (needs root).")
    run.add_argument("scenario", help="scenario YAML file")
    run.add_argument("--variant", action="append", help="run only this variant (repeatable), e.g. load_balancing=spray")
    run.add_argument("--runs-dir", default=default_runs_dir(),
                     help="where results go (default: runs/, or $TESTBED_RUNS_DIR when set)")
    run.add_argument("--fit", action="store_true",
                     help="slow a fabric this machine cannot hold down to a rate it can: every link rate "
                          "times f, every delay and time over f (ratios such as the BDP in cells unchanged)")
    run.add_argument("--force", action="store_true",
                     help="run even when the pre-flight capacity check says this machine cannot hold the fabric")
    run.add_argument("--agents-per-process", type=whole_number_at_least_1, default=None, metavar="N",
                     help="at most N hosts' agents in one process (1: a process per host; default: the "
                          "hosts shared out over one process per core)")
    run.set_defaults(func=run_command)

    clean = sub.add_parser("clean", help="remove what killed runs left behind (only what their manifests list)",
                           description="Kill the processes and delete the interfaces and namespaces that "
                                       "unfinished runs recorded in their manifests; nothing else is touched. "
                                       "A run that is still going (its owner process alive and the run lock "
                                       "held) is listed and left alone.")
    clean.add_argument("--force", action="store_true",
                       help="also stop a live run (a wedged one), after a yes typed at the terminal")
    clean.set_defaults(func=clean_command)

    shell = sub.add_parser("shell", help="open p4runtime-shell on a switch of a running scenario",
                           description="Attach p4runtime-shell to SWITCH (a switch name of a running "
                                       "scenario, or HOST:PORT).")
    shell.add_argument("switch", help="switch name (e.g. leaf1) or gRPC address HOST:PORT")
    shell.add_argument("--device-id", type=int, default=1, help="device id when SWITCH is an address")
    shell.add_argument("--cacert", help="when SWITCH is an address: TLS, trusting this CA certificate "
                                        "(a switch of a running scenario with control_tls needs none of these)")
    shell.add_argument("--cert", help="with --cacert: the client certificate")
    shell.add_argument("--private-key", help="with --cacert: the client's private key")
    shell.set_defaults(func=shell_command)
