"""A planned fabric scaled down to a scenario of the same shape.

What is kept: the tier count (two tiers become a 4-leaf x 2-spine
leaf-spine, three tiers a k=4 fat-tree), dual-homing (a GPU with two NIC
ports is dual-homed to two ToRs), servers of several GPUs and whether they
are rail-optimised (with at most 2 GPUs a server, so that the small
fabric has whole rails), and the ToR's oversubscription, carried by the
fabric links' rate against the host links' as `scenarios/README.md`
defines it. What a small fabric cannot keep is said in the notes: planes
(the scenario is one plane), a ToR oversubscription that the fat-tree's
equal tiers cannot give separately from the aggregation one, and more than
two NIC ports a GPU. The traffic is one permutation of 1 MiB messages,
sprayed, with TiTa, at the scenario defaults' 5 Mbit/s host links.
"""

from __future__ import annotations

import math

import yaml

from testbed.plan.clos import FabricPlan
from testbed.plan.hardware import PlanError

HOST_RATE_MBPS = 5.0
MESSAGE_BYTES = 1 << 20
START_S = 1.0


def scaled_scenario(p: FabricPlan) -> tuple[dict, list[str]]:
    """The scenario (as a YAML-ready mapping) and the notes on what it does not keep."""
    hw = p.hardware
    if p.tiers < 2:
        raise PlanError(f"{p.gpus} GPUs fit on one switch; a scenario needs at least a leaf-spine "
                        f"(ask for more than {p.max_gpus['1']} GPUs)")
    if hw.ports_per_gpu > 2:
        raise PlanError(f"a scenario gives a GPU one or two NIC ports, not {hw.ports_per_gpu}")
    notes: list[str] = []
    gpus_per_server = min(hw.gpus_per_server, 2)
    if gpus_per_server != hw.gpus_per_server:
        notes.append(f"servers of {hw.gpus_per_server} GPUs become servers of {gpus_per_server}")
    if hw.planes > 1:
        notes.append(f"{hw.planes} planes become one (a scenario is one plane)")
    tor_over = p.oversubscription.get("tor", 1.0)
    topology: dict = {}
    links: dict = {"rate_mbps": HOST_RATE_MBPS, "delay_us": 1000}
    if p.tiers == 2:
        hosts_per_leaf, spines = 2, 2
        topology = {"kind": "leaf_spine", "leaves": 4, "spines": spines, "hosts_per_leaf": hosts_per_leaf,
                    "uplinks_per_spine": 1}
        fabric_rate = HOST_RATE_MBPS * hosts_per_leaf / (spines * tor_over)
        if tor_over != 1:
            topology["oversubscription"] = round(tor_over, 6)
    else:
        topology = {"kind": "fat_tree", "k": 4}
        fabric_rate = HOST_RATE_MBPS / tor_over
        if p.oversubscription.get("agg", 1.0) != 1:
            notes.append(f"the aggregation tier's {p.oversubscription['agg']:g}:1 is not kept: the fat-tree's "
                         f"fabric links share one rate")
    if fabric_rate != HOST_RATE_MBPS:
        links["fabric"] = {"rate_mbps": round(fabric_rate, 6)}
    if hw.ports_per_gpu == 2:
        topology["dual_homed"] = True
    if gpus_per_server > 1:
        topology["gpus_per_server"] = gpus_per_server
        topology["rail_optimised"] = hw.rail_optimised
    line_s = MESSAGE_BYTES * 8 / (HOST_RATE_MBPS * 1e6)
    duration = math.ceil(START_S + 3 * max(1.0, tor_over) * line_s) + 2
    scenario = {
        "name": f"plan-{p.gpus}-gpus",
        "description": (f"the shape of a {p.tiers}-tier fabric of {p.gpus} GPUs ({hw.switch_ports}-port switches, "
                        f"{hw.ports_per_gpu} NIC port(s) a GPU), scaled down by testbed plan"),
        "duration_s": duration,
        "topology": topology,
        "links": links,
        "fabric": {"load_balancing": "spray"},
        "transport": {"cc": "tita"},
        "workload": [{"kind": "permutation", "start_s": START_S, "message_bytes": MESSAGE_BYTES}],
    }
    return scenario, notes


def scenario_text(p: FabricPlan) -> tuple[str, list[str]]:
    scenario, notes = scaled_scenario(p)
    head = "# Written by `testbed plan`.\n" + "".join(f"# not kept: {n}\n" for n in notes)
    return head + yaml.safe_dump(scenario, sort_keys=False, default_flow_style=None), notes
