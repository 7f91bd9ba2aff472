"""`testbed plan`: the fabric that holds a GPU count, from the hardware."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from testbed.plan.clos import FabricPlan, groups_per_plane, plan, pod_tors
from testbed.plan.hardware import PlanError, make_hardware


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "plan", help="size a 1-3 tier Clos fabric for a GPU count from the hardware",
        description="From the GPU count and the hardware, the fabric that holds them: tiers needed, switches, "
                    "links and transceivers per tier, the most GPUs each tier count holds, bisection bandwidth "
                    "and where the design stops. The rules are in docs/planning.md.")
    p.add_argument("--gpus", type=int, required=True, help="GPUs to connect")
    p.add_argument("--switch-ports", type=int, default=None, help="switch radix at --port-gbps")
    p.add_argument("--switch-tbps", type=float, default=None,
                   help="switch capacity in Tbit/s (gives the radix with --port-gbps)")
    p.add_argument("--port-gbps", type=float, required=True, help="switch port speed, Gbit/s")
    p.add_argument("--nic-port-gbps", type=float, default=None,
                   help="NIC port speed, Gbit/s (default: the switch port speed; slower ports are broken out)")
    p.add_argument("--ports-per-gpu", type=int, default=1,
                   help="NIC ports each GPU has, each on its own ToR (2: dual-homed; default 1)")
    p.add_argument("--gpus-per-server", type=int, default=8, help="GPUs in one server (default 8)")
    p.add_argument("--rail-optimised", action="store_true",
                   help="GPU i of every server on rail i (reports the rail segment's size)")
    p.add_argument("--planes", type=int, default=1, help="independent fabric planes (default 1)")
    p.add_argument("--tor-oversubscription", type=float, default=1.0,
                   help="ToR downlink over uplink bandwidth (default 1)")
    p.add_argument("--agg-oversubscription", type=float, default=1.0,
                   help="aggregation switch downlink over uplink bandwidth, three tiers (default 1)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--scenario", metavar="OUT.yaml", default=None,
                   help="also write a scaled-down scenario of the same shape for testbed run / testbed sim")
    p.set_defaults(func=plan_command)


def plan_command(args: argparse.Namespace) -> int:
    hw = make_hardware(switch_ports=args.switch_ports, switch_tbps=args.switch_tbps, port_gbps=args.port_gbps,
                       nic_port_gbps=args.nic_port_gbps, ports_per_gpu=args.ports_per_gpu,
                       gpus_per_server=args.gpus_per_server, rail_optimised=args.rail_optimised,
                       planes=args.planes, tor_oversubscription=args.tor_oversubscription,
                       agg_oversubscription=args.agg_oversubscription)
    fabric = plan(hw, args.gpus)
    notes: list[str] = []
    if args.scenario:
        from testbed.plan.scaled import scenario_text

        text, notes = scenario_text(fabric)
        out = Path(args.scenario)
        try:
            out.write_text(text)
        except OSError as error:
            raise PlanError(f"{out}: cannot write the scenario: {error.strerror}") from None
    if args.json:
        data = fabric.as_json()
        if args.scenario:
            data["scenario"] = {"path": args.scenario, "not_kept": notes}
        print(json.dumps(data, indent=2))
    else:
        print(describe(fabric))
        if args.scenario:
            print(f"scenario: {args.scenario} (scaled down; " +
                  ("not kept: " + "; ".join(notes) if notes else "every ratio kept") + ")")
    return 0


def describe(p: FabricPlan) -> str:
    hw = p.hardware
    lines = [f"{p.gpus} GPUs: {_n(p.tiers, 'tier')}, {_n(p.switches, 'switch')}, {_n(p.links, 'link')}, "
             f"{p.optics} transceivers" + (f", {hw.planes} planes" if hw.planes > 1 else "")]
    for t in p.tier_list:
        lines.append(f"  {t.name:<6} {t.switches:>8} {'switch' if t.switches == 1 else 'switches':<8}  "
                     f"{t.links_down:>9} links down  "
                     f"{t.optics_down:>9} transceivers")
    lines.append(f"  host ports {p.host_ports} ({hw.ports_per_gpu} a GPU at {hw.nic_port_gbps:g} Gbit/s"
                 + (f", {hw.breakout} per switch port" if hw.breakout > 1 else "") + ")")
    if p.pods:
        lines.append(f"  pods {p.pods} of at most {p.pod_gpus} GPUs")
    elif p.pod_gpus:
        lines.append(f"  a pod of three tiers would hold at most {p.pod_gpus} GPUs")
    else:
        lines.append(f"  a pod of three tiers holds no whole rail segment: its {pod_tors(hw)} ToRs are fewer than "
                     f"a segment's {groups_per_plane(hw)} (a ToR per rail and NIC port)")
    if p.segment_gpus:
        rails = hw.gpus_per_server
        lines.append(f"  rail segment: {p.segment_gpus} GPUs ({p.segment_gpus // rails} servers; "
                     f"{groups_per_plane(hw)} ToRs a plane, one per rail and NIC port)")
    elif hw.rail_optimised and p.tiers == 1:
        lines.append("  rails: one switch holds every rail")
    if p.oversubscription:
        lines.append("  oversubscription " + ", ".join(f"{k} {v:g}:1" for k, v in p.oversubscription.items()))
    lines.append(f"  bisection bandwidth {p.bisection_gbps / 1000:g} Tbit/s")
    lines.append("  most GPUs: " + ", ".join(f"{_n(int(t), 'tier')} {n}" for t, n in p.max_gpus.items()))
    lines.append(f"  stops at: {p.limit}")
    return "\n".join(lines)


def _n(count: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("ch") else "s")
    return f"{count} {noun if count == 1 else plural}"
