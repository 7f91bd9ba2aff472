"""The JSON Schema of a scenario file (draft 2020-12, checked by jsonschema).

The schema checks shape, types and ranges; defaults and cross-field rules
(thresholds against the buffer, host names against the topology) live in
`resolve` and `checks`, because they depend on derived quantities such as
the bandwidth-delay product.  `x-message` is our own keyword: when present
it replaces jsonschema's wording for a failed value check.
"""

from __future__ import annotations

LOAD_BALANCING = ["ecmp", "spray", "spray_rr_entropy", "spray_random_entropy", "spray_rr_switch",
                  "spray_random_switch"]
CC = ["tita", "dcqcn", "nscc", "none"]
TARGETS = ["auto", "builtin", "bmv2"]
LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "off"]
ECN_MODES = ["none", "step", "red"]
TENANT_ISOLATION = ["none", "queues", "meters"]  # fabric.tenant_isolation (p4src/README.md, "Tenants")
PHASE_KINDS = ["pingall", "incast", "permutation", "all_to_all", "ring_allreduce", "collective", "poisson",
               "stream", "training"]
COLLECTIVE_OPS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
COLLECTIVE_ALGORITHMS = ["ring", "tree", "hierarchical", "direct", "auto"]
FAULT_KINDS = ["link_down", "link_up", "host_down", "link_flap", "link_degrade", "agent_stall", "switch_restart",
               "host_slow", "gpu_slow"]


def _int(minimum: int, maximum: int | None = None) -> dict:
    schema = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _num(minimum: float = 0, maximum: float | None = None, exclusive: bool = True) -> dict:
    schema = {"type": "number", ("exclusiveMinimum" if exclusive else "minimum"): minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _obj(properties: dict, **extra) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": properties, **extra}


BOOL = {"type": "boolean"}
TEXT = {"type": "string", "minLength": 1}

LINK_PARAMS = {
    "rate_mbps": _num(0, 100_000),
    "delay_us": _num(0, 10_000_000, exclusive=False),
    "buffer_packets": _int(1, 1_000_000),
}

LEAF_SPINE = _obj({
    "kind": {},
    "leaves": _int(1, 255),
    "spines": _int(1, 255),
    "hosts_per_leaf": _int(1, 254),
    "uplinks_per_spine": _int(1, 64),
    "oversubscription": _num(0),
    "dual_homed": BOOL,
    "gpus_per_server": _int(1, 16),
    "rail_optimised": BOOL,
})

FAT_TREE = _obj({
    "kind": {},
    "k": {"type": "integer", "minimum": 2, "maximum": 254, "multipleOf": 2,
          "x-message": "must be an even integer (the fat-tree arity k)"},
    "dual_homed": BOOL,
    "gpus_per_server": _int(1, 16),
    "rail_optimised": BOOL,
})

HOST_SELECTION = {
    "type": ["string", "array"],
    "pattern": "^all$",
    "items": {"type": "string"},
    "minItems": 2,
    "uniqueItems": True,
    "x-message": "must be 'all' or a list of at least two distinct host names",
}

_COMMON_PHASE = {"kind": {}, "name": TEXT, "start_s": _num(0, exclusive=False),
                 "hosts": HOST_SELECTION}
_MESSAGE = {"message_bytes": _int(1, 1 << 40), "count": _int(1, 1_000_000)}
_INTO_ONE = {"senders": {"type": ["integer", "array"], "minimum": 1, "items": {"type": "string"},
                         "minItems": 1, "uniqueItems": True,
                         "x-message": "must be a number of senders or a list of host names"},
             "receiver": TEXT}
PHASES = {
    "pingall": {"count": _int(1, 1000)},
    "incast": {**_MESSAGE, **_INTO_ONE},
    "permutation": {**_MESSAGE, "cross_tor": BOOL},
    "all_to_all": {**_MESSAGE, "zipf_s": _num(0, 10, exclusive=False)},
    "ring_allreduce": dict(_MESSAGE),
    "collective": {"op": {"enum": COLLECTIVE_OPS}, "algorithm": {"enum": COLLECTIVE_ALGORITHMS},
                   "sizes_bytes": {"type": "array", "minItems": 1, "items": _int(2, 1 << 32)},
                   "channels": _int(1, 64), "chunk_bytes": _int(0, 1 << 32),
                   "count": _int(1, 1000), "tuning": TEXT, "scheduling": {"enum": ["static", "dynamic"]}},
    "poisson": {"load": _num(0, 1), "message_bytes": _MESSAGE["message_bytes"], "arrivals_s": _num(0, 86_400)},
    "stream": {**_MESSAGE, **_INTO_ONE, "interval_s": _num(0, 86_400)},
    # a data-parallel training job (host/training.py; scenarios/README.md, "Training jobs")
    "training": {
        "iterations": _int(1, 10_000),
        "model": _obj({"parameters": _int(1, 1 << 44), "layers": _int(1, 100_000),
                       "dtype": {"enum": ["fp32", "bf16", "fp16"]}},
                      required=["parameters", "layers"]),
        "parallelism": _obj({"data": _int(2, 100_000), "tensor": _int(1, 1024), "pipeline": _int(1, 1024),
                             "expert": _int(1, 1024)}),
        "compute": _obj({"forward_ms": _num(0, 3_600_000), "backward_ms": _num(0, 3_600_000),
                         "jitter": _num(0, 1, exclusive=False), "expert_share": _num(0, 1),
                         "slow_gpu": _obj({"host": TEXT, "factor": _num(0, 1000)}, required=["host", "factor"])},
                        required=["forward_ms", "backward_ms"]),
        "bucket_bytes": _int(1, 1 << 40), "first_bucket_bytes": _int(1, 1 << 40),
        "small_bucket": {"enum": ["first", "last"]},
        # pipeline stages: point-to-point activations and gradients (host/pipeline.py; "Pipeline jobs")
        "pipeline": _obj({"microbatches": _int(1, 100_000), "tokens": _int(1, 1 << 30), "hidden": _int(1, 1 << 20),
                          "vocab": _int(1, 1 << 24), "schedule": {"enum": ["1f1b", "gpipe"]}},
                         required=["microbatches", "tokens", "hidden", "vocab"]),
        # an MoE model: expert-parallel all-to-alls (host/moe.py; scenarios/README.md, "MoE jobs")
        "moe": _obj({"experts": _int(2, 1 << 20), "top_k": _int(1, 64), "hidden": _int(1, 1 << 20),
                     "tokens": _int(1, 1 << 30), "capacity_factor": _num(0, 1000),
                     "min_capacity": _int(0, 1 << 30)},
                    required=["experts", "top_k", "hidden", "tokens"]),
        "algorithm": {"enum": ["ring", "tree", "hierarchical"]}, "channels": _int(1, 64),
        "chunk_bytes": _int(0, 1 << 32), "scheduling": {"enum": ["static", "dynamic"]},
    },
}
PHASE_REQUIRED = {"poisson": ["load"], "training": ["model", "compute"]}

PHASE = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": {"enum": PHASE_KINDS}},
    "allOf": [
        {"if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
         "then": _obj({**_COMMON_PHASE, **fields}, required=PHASE_REQUIRED.get(kind, []))}
        for kind, fields in PHASES.items()
    ],
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    **_obj({
        "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                 "x-message": "may use only letters, digits, '_', '.' and '-' (it names the run directory)"},
        "description": {"type": "string"},
        "duration_s": _num(0, 86_400),
        "seed": _int(0, 2**32 - 1),
        "topology": {
            "type": "object",
            "required": ["kind"],
            "properties": {"kind": {"enum": ["leaf_spine", "fat_tree"]}},
            "allOf": [
                {"if": {"required": ["kind"], "properties": {"kind": {"const": "leaf_spine"}}},
                 "then": LEAF_SPINE},
                {"if": {"required": ["kind"], "properties": {"kind": {"const": "fat_tree"}}},
                 "then": FAT_TREE},
            ],
        },
        "links": _obj({**LINK_PARAMS, "host": _obj(LINK_PARAMS), "fabric": _obj(LINK_PARAMS),
                       # the intra-server GPU channel: no switch queue, so no buffer
                       "local": _obj({"rate_mbps": LINK_PARAMS["rate_mbps"],
                                      "delay_us": LINK_PARAMS["delay_us"]})}),
        "switch": _obj({
            "target": {"enum": TARGETS},
            "program": TEXT,
            "priority_queues": _int(1, 8),
            "pcap": BOOL,
            "log_level": {"enum": LOG_LEVELS},
            "processes": {"oneOf": [{"enum": ["auto", "per_switch"]}, _int(1, 64)]},
            "backend": {"enum": ["auto", "native", "python"]},
            "control_tls": BOOL,
        }),
        "fabric": _obj({
            "load_balancing": {"enum": LOAD_BALANCING},
            "cell_size": _int(256, 1500),
            "entropy_values": _int(1, 65536),
            "ecn": _obj({
                "mode": {"enum": ECN_MODES},
                "k_cells": _int(1),
                "kmin_cells": _int(0),
                "kmax_cells": _int(1),
                "pmax": _num(0, 1),
            }),
            "credits": _obj({
                "enabled": BOOL,
                "rate_fraction": {**_num(0), "exclusiveMaximum": 1},
                "burst_credits": _int(1, 1024),
                "queue_credits": _int(1, 1024),
            }),
            "pfc": _obj({
                "enabled": BOOL,
                "xoff_cells": _int(1, 4096),
                "xon_cells": _int(0, 4096),
            }),
            "tenant_isolation": {"enum": TENANT_ISOLATION},
            "int": _obj({
                "enabled": BOOL,
                "sample": _int(1, 1 << 16),
                "max_hops": _int(1, 8),
            }),
        }),
        "transport": _obj({
            "cc": {"enum": CC},
            "reorder_window_cells": _int(1, 1 << 20),
            "rto_low_rtt": _num(0, 10_000),
            "rto_high_rtt": _num(0, 10_000),
            "tita": _obj({
                "max_outstanding_bdp": _num(0, 100),
                "initial_w": _num(0, 1),
                "target_loss_factor": {**_num(0), "exclusiveMaximum": 1},
                "credit_order": {"enum": ["fair", "srpt"]},
                "overcommit": _int(1, 4096),
            }),
            "dcqcn": _obj({
                "g": _num(0, 1),
                "r_ai_fraction": _num(0, 1),
                "hyper_factor": _num(0, 1000),
                "timer_rtt": _num(0, 10_000),
                "byte_counter_bytes": _int(1),
                "cnp_interval_rtt": _num(0, 10_000),
                "fast_recovery_steps": _int(0, 1000),
            }),
            "nscc": _obj({
                "target_qdelay_rtt": _num(0, 100),
                "max_wnd_bdp": _num(0, 100),
                "initial_wnd_bdp": _num(0, 100),
                "min_wnd_cells": _num(0, 1 << 20),
                "md_gain": _num(0, 1),
                "md_floor": {**_num(0), "exclusiveMaximum": 1},
                "delay_ewma": _num(0, 1),
                "quick_adapt_x_target": _num(1, 1000, exclusive=False),
                "pi_bdp": _num(0, 100, exclusive=False),
                "fi_bdp": _num(0, 100, exclusive=False),
            }),
        }),
        "workload": {"type": "array", "minItems": 1, "items": PHASE},
        "faults": {"type": "array", "items": _obj(
            {"at_s": _num(0, exclusive=False), "kind": {"enum": FAULT_KINDS}, "target": TEXT,
             "period_s": _num(0), "count": _int(1, 10_000), "duration_s": _num(0),
             "rate_mbps": _num(0), "extra_delay_us": _num(0, 10_000_000, exclusive=False),
             "loss": _num(0, 1, exclusive=False), "delay_ms": _num(0, 86_400_000),
             "factor": _num(1, 1000)},
            required=["at_s", "kind", "target"])},
        "tenants": {"type": "array", "minItems": 1, "maxItems": 63, "items": _obj({
            "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                     "x-message": "may use only letters, digits, '_', '.' and '-'"},
            "hosts": {"type": "array", "uniqueItems": True, "items": TEXT,
                      "x-message": "must be a list of distinct host names"},
            "servers": {"type": "array", "uniqueItems": True, "items": _int(1),
                        "x-message": "must be a list of distinct server numbers (1, 2, ...)"},
            "share": _num(0, 1),
        }, required=["name"])},
        "placement": _obj({
            "servers": {"type": "array", "minItems": 1, "items": _obj({
                "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                         "x-message": "may use only letters, digits, '_', '.' and '-'"},
                "address": TEXT,
                "user": TEXT,
                "switches": {"type": "array", "minItems": 1, "uniqueItems": True, "items": TEXT,
                             "x-message": "must be a list of distinct switch names"},
            }, required=["name", "address"])},
        }, required=["servers"]),
        "variants": {
            "type": "object",
            "propertyNames": {"pattern": r"^[a-z_][a-z0-9_]*(\.([a-z_][a-z0-9_]*|[0-9]+))*$",
                              "x-message": "is not a field name or dotted path such as fabric.cell_size"},
            "additionalProperties": {"type": "array", "minItems": 1,
                                     "x-message": "must be a list of at least one value to try"},
        },
    }, required=["topology", "workload"]),
}
