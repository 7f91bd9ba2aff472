"""A small, fully consistent run directory on the default 4x2 leaf-spine, worked out by hand.

Two flows, h1->h3 and h2->h4, one message of 200,000 B each (196 DATA cells of
1090 B on the wire), both hashed onto spine1; their ACKs (one per cell, 74 B)
come back over spine2.  h1 retransmits 3 cells because leaf1's queue towards
spine1 dropped 3 DATA cells; spine2 dropped 1 ACK towards leaf1, so h2 got
195 of its 196 ACKs.  Pings added 98 B to every switch port before the first
sample (and so do not count).  Nothing else moved: leaf1:4->spine2 is idle
while its sibling leaf1:3->spine1 carried both flows.  Traffic window: 1.0 s
(both messages queued) to 3.0 s (last delivery).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

CELLS = 196
DATA_B = 1090
ACK_B = 74
PING_B = 98
SIZE = 200_000

# (switch, port) -> (data cells, ack cells) the traffic manager accepted (egress)
SWITCH_EGRESS = {
    ("leaf1", 3): (2 * CELLS, 0),  # both flows' DATA (after 3 drops) to spine1
    ("spine1", 2): (2 * CELLS, 0),  # to leaf2
    ("leaf2", 1): (CELLS, 0),  # to h3
    ("leaf2", 2): (CELLS, 0),  # to h4
    ("leaf2", 4): (0, 2 * CELLS),  # ACKs to spine2
    ("spine2", 1): (0, 2 * CELLS - 1),  # to leaf1, one ACK dropped here
    ("leaf1", 1): (0, CELLS),  # to h1
    ("leaf1", 2): (0, CELLS - 1),  # to h2
}
QUEUE_DROPS = {("leaf1", 3): {"0": 3}, ("spine2", 1): {"3": 1}}

HOST_TX = {"h1": {"tx_DATA": CELLS + 3}, "h2": {"tx_DATA": CELLS},
           "h3": {"tx_ACK": CELLS}, "h4": {"tx_ACK": CELLS}}
HOST_RX = {"h1": {"rx_ACK": CELLS}, "h2": {"rx_ACK": CELLS - 1},
           "h3": {"rx_DATA": CELLS}, "h4": {"rx_DATA": CELLS}}


def _bytes(cells: tuple[int, int]) -> int:
    return cells[0] * DATA_B + cells[1] * ACK_B


def make_run(run_dir: Path, scenario, load_balancing: str = "ecmp", lag_us: float = 10.0,
             lateness_p99_us: float = 200.0) -> Path:
    topology = scenario.topo
    run_dir.mkdir(parents=True)
    resolved = scenario.to_dict()
    resolved["fabric"]["load_balancing"] = load_balancing
    (run_dir / "scenario.resolved.yaml").write_text(yaml.safe_dump(resolved))
    (run_dir / "agents").mkdir()
    planned = [{"src": "h1", "dst": "h3", "msg_id": 0, "size_bytes": SIZE, "start_us": 1_000_000.0, "deps": []},
               {"src": "h2", "dst": "h4", "msg_id": 0, "size_bytes": SIZE, "start_us": 1_000_000.0, "deps": []}]
    (run_dir / "agents" / "workload.json").write_text(json.dumps({"seed": 1, "messages": planned}))
    records = [
        {"kind": "message_sent", "src": "h1", "dst": "h3", "msg_id": 0, "bytes": SIZE, "cells": CELLS,
         "start_us": 1_000_000.0, "first_tx_us": 1_000_000.0, "acked_us": 2_500_000.0, "fct_us": 1_500_000.0,
         "queueing_us": 0.0, "completion_us": 1_500_000.0, "retransmissions": 3, "collective": "p"},
        {"kind": "message_sent", "src": "h2", "dst": "h4", "msg_id": 0, "bytes": SIZE, "cells": CELLS,
         "start_us": 1_000_000.0, "first_tx_us": 1_200_000.0, "acked_us": 3_000_000.0, "fct_us": 2_000_000.0,
         "queueing_us": 200_000.0, "completion_us": 1_800_000.0, "retransmissions": 0, "collective": "p"},
    ]
    for src, dst, end in (("h1", "h3", 2_480_000.0), ("h2", "h4", 3_000_000.0)):
        records.append({"kind": "message_delivered", "src": src, "dst": dst, "msg_id": 0, "flow_id": 1,
                        "bytes": SIZE, "cells": CELLS, "first_cell_us": 1_010_000.0, "delivered_us": end,
                        "cells_out_of_order": 5, "max_ooo_distance_cells": 3, "peak_reorder_buffer_cells": 4,
                        "window_overflows": 0, "duplicate_cells": 0, "ce_cells": 1, "verified": True})
    (run_dir / "records").mkdir()
    for host in ("h1", "h2", "h3", "h4"):  # each agent writes its own: what it sent and what it received
        mine = [r for r in records if r["src" if r["kind"] == "message_sent" else "dst"] == host]
        (run_dir / "records" / f"{host}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))

    # host egress is seen by the ToR's rx counter
    host_rx = {}
    for host, counts in HOST_TX.items():
        port = topology.ports(host)[0]
        host_rx[(port.peer, port.peer_port)] = counts.get("tx_DATA", 0) * DATA_B + counts.get("tx_ACK", 0) * ACK_B
    samples = []
    for t, moved in ((0.5, False), (2.0, False), (3.5, True)):
        for switch in topology.switches:
            tx, rx = {}, {}
            for port in topology.ports(switch):
                sent = _bytes(SWITCH_EGRESS.get((switch, port.number), (0, 0))) if moved else 0
                got = host_rx.get((switch, port.number), 0) if moved else 0
                tx[str(port.number)] = {"packets": 1, "bytes": PING_B + sent}
                rx[str(port.number)] = {"packets": 1, "bytes": PING_B + got}
            samples.append({"t_s": t, "switch": switch, "tx": tx, "rx": rx, "drops_packets": {},
                            "ecn_marks_packets": {}, "max_qdepth_packets": {"3": 9} if switch == "leaf1" else {}})
    (run_dir / "telemetry.jsonl").write_text("\n".join(json.dumps(s) for s in samples) + "\n")

    tm_stats = {}
    for switch in topology.switches:
        queues = []
        for port in topology.ports(switch):
            data, acks = SWITCH_EGRESS.get((switch, port.number), (0, 0))
            by_class = {"14": {"packets": 1, "bytes": PING_B, "dropped": 0}}
            if data:
                by_class["0"] = {"packets": data, "bytes": data * DATA_B, "dropped": 0}
            if acks:
                by_class["3"] = {"packets": acks, "bytes": acks * ACK_B, "dropped": 0}
            for cls, dropped in QUEUE_DROPS.get((switch, port.number), {}).items():
                by_class.setdefault(cls, {"packets": 0, "bytes": 0, "dropped": 0})["dropped"] = dropped
            queues.append({"port": port.number, "priority": 0, "depth": 0, "max_depth": 12 if switch == "leaf1" else 2,
                           "dropped_full": sum(c["dropped"] for c in by_class.values()), "by_class": by_class})
        tm_stats[switch] = {"tm": {"fidelity": {"dequeue": {"p99_lag_us": lag_us if switch == "spine1" else 1.0}},
                                   "ports": [{"port": p.number, "dropped_priority": 0} for p in topology.ports(switch)]},
                            "queues": queues}
    zero = {h: {"qdisc": {f"{h}-eth0": {"kind": "tbf", "packets": 0, "bytes": 0, "drops": 0, "backlog_packets": 0}},
                "udp": {"InErrors": 0, "RcvbufErrors": 0}} for h in HOST_TX}
    (run_dir / "result.json").write_text(json.dumps({
        "variant": run_dir.name, "target": "builtin", "pingall": {"pairs": 56, "failed": []}, "notes": [],
        "tm_stats": tm_stats, "host_counters": {"before": zero, "after": zero}}))
    for host in HOST_TX:
        stats = {"host": host, "end_reason": "done", "tx_counts": HOST_TX[host], "rx_counts": HOST_RX[host],
                 "retransmissions": 3 if host == "h1" else 0, "timeouts": 0, "socket_errors": 0, "errors": {},
                 "pacer_lateness": {"samples": 100, "p50_us": 20.0, "p99_us": lateness_p99_us,
                                    "max_us": lateness_p99_us, "percentile": "nearest-rank"}}
        (run_dir / "records" / f"{host}.stats.json").write_text(json.dumps(stats))
    return run_dir


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


DEFAULT_VARIANTS = (("load_balancing=ecmp", "ecmp"), ("load_balancing=spray", "spray_entropy"))


def make_default_runs(root: Path, scenario) -> dict[str, Path]:
    """The default scenario's two variants as make_run directories under `root` (one per load
    balancing, each result.json naming its variant): variant name -> directory."""
    dirs = {}
    for name, lb in DEFAULT_VARIANTS:
        run = make_run(root / lb, scenario, load_balancing=lb)
        result = json.loads((run / "result.json").read_text())
        result["variant"] = name
        (run / "result.json").write_text(json.dumps(result))
        dirs[name] = run
    return dirs
