"""Incast N:1 in the simulator, measured as the issue's acceptance states it.

`incast(cc, senders)` builds the leaf-spine of scenarios/incast.yaml (5 Mbit/s
links, 2.5 ms each, base RTT 27 ms, BDP 16 cells, 2-BDP buffers, spraying,
RED ECN for dcqcn and nscc) with as many leaves of two hosts as the senders need, runs
`count` messages per sender into h1 and returns:

* goodput_mbps: verified payload bytes delivered to the receiver over the
  window from its first DATA cell to its last delivery, Mbit/s;
* payload_rate_mbps: the link rate times cell payload / DATA frame bytes,
  what the receiver's link carries in payload when it sends nothing but DATA;
* goodput_over_payload_rate: the ratio of the two;
* data_drops: DATA cells dropped at switch data queues; queue_drops_all_kinds:
  every packet dropped there (ACKs, NACKs and requests share the queue);
  credit_drops: credits dropped by the switches' credit limiters; counts;
* peak_queue_cells: the deepest switch egress data queue, in DATA cells;
* jain: Jain's index over the senders' throughputs (each sender's payload
  over its own first-start-to-last-delivery time);
* last_over_ideal: last delivery minus first start, over the fluid ideal
  (all DATA frames back to back on the receiver's link plus one base RTT for
  the first credit round trip).

`wake_late_s` > 0 makes every timer wake-up of every host late by a uniform
draw in [0, wake_late_s], as a loaded operating system wakes the agent.

`from_run(variant_dir)` computes the same figures from an emulated run's
variant directory (its records, resolved scenario and the run's
summary.json), so the simulator and the fabric are held to one definition.
"""

from __future__ import annotations

import argparse
import json
import math

from testbed.cells import segment, wire

from testbed.host import workloads
from testbed.host.config import TransportConfig
from testbed.simulation.sim import LinkSpec, Network, leaf_spine

RATE_BPS = 5e6
DELAY_S = 2.5e-3
BDP = 16


def config(cc: str, **kw) -> TransportConfig:
    cfg = TransportConfig(cc=cc, link_rate_bps=RATE_BPS, bdp_cells=BDP)
    # Base RTT as the scenario derives it: 8 link delays and 4 serialisations; tita's credits
    # metered as `network` meters them (LinkSpec's default meter).
    meters = wire.credit_link_share(cfg.cell_size) if cc == "tita" else None
    return cfg.with_(base_rtt_s=8 * DELAY_S + 4 * cfg.cell_time_s, credit_meter_share=meters, **kw)


def network(cfg: TransportConfig, hosts: int, seed: int = 1, wake_late_s: float = 0.0,
            pfc: tuple[int, int] | None = None) -> Network:
    ecn = (0.2 * BDP, 1.0 * BDP, 0.2) if cfg.cc in ("dcqcn", "nscc") else None
    spec = LinkSpec(rate_bps=RATE_BPS, delay_s=DELAY_S, buffer_cells=2 * BDP, ecn=ecn,
                    credit_limit=cfg.cc == "tita", pfc=pfc)
    late = (lambda rng: rng.random() * wake_late_s) if wake_late_s > 0 else None
    return leaf_spine(math.ceil(hosts / 2), 2, 2, cfg, spec, seed=seed, wake_lateness=late)


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else 0.0


def incast(cc: str, senders: int, message_bytes: int = 128 * 1024, count: int = 1, seed: int = 1,
           wake_late_s: float = 0.0, until_s: float = 120.0, pfc: tuple[int, int] | None = None,
           **cfg_kw) -> dict:
    cfg = config(cc, **cfg_kw)
    net = network(cfg, senders + 1, seed, wake_late_s, pfc)
    names = [f"h{i}" for i in range(2, senders + 2)]
    names = names[1:] + names[:1]  # remote leaves first, as the scenario's incast does
    wl = workloads.incast(names, "h1", message_bytes, messages_per_sender=count)
    net.load(wl, seed=seed)
    net.run(until_s)
    got = [r for r in net.records() if r["kind"] == "message_delivered" and r["dst"] == "h1"]
    rx = net.hosts["h1"].ep.stats()
    out = {"cc": cc, "senders": senders, "messages": len(wl), "finished": net.finished()}
    out.update(goodput_figures([m.size_bytes for m in wl], got, [m.start_us / 1e6 for m in wl], RATE_BPS, cfg.rtt_s,
                        cfg.cell_size, cfg.data_wire_bytes))
    out.update(completion_figures([r for r in net.records() if r["kind"] == "message_sent"], cfg.rtt_s))
    out.update({
        "data_drops": net.data_drops(), "queue_drops_all_kinds": net.drops(),
        "credit_drops": sum(p.stats.credit_drops for p in net.ports),
        "pfc": list(pfc) if pfc else None, "pause_frames": net.pause_frames,
        "peak_queue_cells": round(net.max_queue_cells(), 2),
        "retransmissions": sum(h.ep.stats()["retransmissions"] for h in net.hosts.values()),
        "credits_sent": rx.get("credits_sent"), "credits_lost": rx.get("credits_lost"),
    })
    return out

def _rank(xs: list[float], q: float) -> float | None:
    xs = sorted(xs)
    return xs[max(1, math.ceil(q * len(xs))) - 1] if xs else None


def completion_figures(sent: list[dict], rtt_s: float) -> dict:
    """Per message, nearest-rank, in ms and in base RTTs: the FCT (the message posted to its last
    ACK: what the application waits, the sender's wait for credits or for its pacer included) and
    the completion (its first DATA cell sent to its last ACK: the network's share of it)."""
    rtt_ms = rtt_s * 1e3
    out = {"base_rtt_ms": round(rtt_ms, 3)}
    for name, key in (("fct", "fct_us"), ("completion", "completion_us")):
        xs = [r[key] / 1e3 for r in sent]
        p50, p99 = _rank(xs, 0.5), _rank(xs, 0.99)
        out.update({f"{name}_p50_ms": round(p50, 1), f"{name}_p99_ms": round(p99, 1),
                    f"{name}_p50_rtts": round(p50 / rtt_ms, 1), f"{name}_p99_rtts": round(p99 / rtt_ms, 1)})
    return out


def goodput_figures(wl_sizes: list[int], got: list[dict], starts: list[float], rate_bps: float, rtt_s: float,
             cell_size: int, data_wire: int) -> dict:
    ok = [r for r in got if r["verified"]]
    first = min(r["first_cell_us"] for r in got) / 1e6
    last = max(r["delivered_us"] for r in got) / 1e6
    start = min(starts)
    payload = sum(r["bytes"] for r in ok)
    goodput = payload * 8 / (last - first)
    payload_rate = rate_bps * cell_size / data_wire
    per_sender = []
    for s in sorted({r["src"] for r in ok}):
        mine = [r for r in ok if r["src"] == s]
        per_sender.append(sum(r["bytes"] for r in mine) * 8 / (max(r["delivered_us"] for r in mine) / 1e6 - start))
    frames = sum(segment.cell_count(n + segment.TRAILER_LEN, cell_size) for n in wl_sizes)
    ideal = frames * data_wire * 8 / rate_bps + rtt_s
    return {"delivered_verified": len(ok), "payload_bytes": payload,
            "goodput_mbps": round(goodput / 1e6, 4), "payload_rate_mbps": round(payload_rate / 1e6, 4),
            "goodput_over_payload_rate": round(goodput / payload_rate, 4), "jain": round(jain(per_sender), 4),
            "last_s": round(last - start, 4), "ideal_last_s": round(ideal, 4),
            "last_over_ideal": round((last - start) / ideal, 4)}


def variant_summary(vdir) -> dict:
    """A `testbed run` variant's entry of its run's summary.json (its name from its result.json)."""
    from pathlib import Path

    vdir = Path(vdir)
    result = vdir / "result.json"
    name = json.loads(result.read_text()).get("variant") if result.exists() else None
    return json.loads((vdir.parent / "summary.json").read_text()).get(name or vdir.name.replace("-", "=", 1), {})


def from_run(variant_dir, summary: dict | None = None) -> dict:
    """The incast figures of one emulated variant (records of every host into the receiver);
    drops, queue and fidelity from its summary (default: the run's summary.json)."""
    from pathlib import Path

    import yaml

    from testbed.host import records

    from testbed.cells import wire

    vdir = Path(variant_dir)
    resolved = yaml.safe_load((vdir / "scenario.resolved.yaml").read_text())
    rate = resolved["links"]["host"]["rate_mbps"] * 1e6
    cell = resolved["fabric"]["cell_size"]
    rtt = resolved["derived"]["base_rtt_us"] / 1e6
    recs = [r for f in sorted((vdir / "records").glob("*.jsonl")) for r in records.read_jsonl(f)]
    sent = [r for r in recs if r["kind"] == "message_sent"]
    receiver = max({r["dst"] for r in sent}, key=lambda d: sum(1 for r in sent if r["dst"] == d))
    got = [r for r in recs if r["kind"] == "message_delivered" and r["dst"] == receiver]
    ours = [r for r in sent if r["dst"] == receiver]
    out = {"variant": vdir.name, "receiver": receiver, "senders": len({r["src"] for r in ours}),
           "messages": len(ours), "link_rate_mbps": rate / 1e6}
    out.update(goodput_figures([r["bytes"] for r in ours], got, [r["start_us"] / 1e6 for r in ours], rate, rtt, cell,
                        wire.wire_bytes(cell, wire.DATA)))
    out.update(completion_figures(ours, rtt))
    if summary is None:
        summary = variant_summary(vdir)
    drops = summary.get("drops", {})
    out.update({"data_drops": drops.get("switch_queue_drops_by_type", {}).get("DATA", 0),
                "drops_by_place": drops.get("untyped_losses_packets"),
                "peak_queue_cells": summary.get("max_queue_depth_packets"),
                "behind_real_time": summary.get("fidelity", {}).get("behind_real_time")})
    return out


def mixed(cc: str, long_senders: int = 4, long_bytes: int = 512 * 1024, short_bytes: int = 8 * 1024,
          shorts: int = 60, short_gap_s: float = 0.03, seed: int = 1, wake_late_s: float = 0.0,
          pfc: tuple[int, int] | None = None) -> dict:
    """Short messages into a receiver that long flows keep busy (tail latency): `long_senders`
    hosts send `long_bytes` each to h1 from time 0; three other hosts take turns sending a
    `short_bytes` message to h1 every `short_gap_s`, from 0.1 s on. FCT and completion of the short
    and the long messages (completion_figures)."""
    cfg = config(cc)
    hosts = long_senders + 4
    net = network(cfg, hosts, seed, wake_late_s, pfc)
    names = [f"h{i}" for i in range(2, hosts + 1)]
    longs, short_src = names[:long_senders], names[long_senders:]
    wl_long = workloads.incast(longs, "h1", long_bytes)
    wl_short = [workloads.MessageSpec(short_src[k % len(short_src)], "h1", k // len(short_src), short_bytes,
                                      start_us=(0.1 + k * short_gap_s) * 1e6) for k in range(shorts)]
    wl = workloads.combine(wl_long, wl_short)
    net.load(wl, seed=seed)
    net.run(120.0)
    sent = [r for r in net.records() if r["kind"] == "message_sent"]
    short = [r for r in sent if r["src"] in short_src]
    long = [r for r in sent if r["src"] in longs]
    out = {"cc": cc, "finished": net.finished(), "short_messages": len(short), "long_messages": len(long),
           "data_drops": net.data_drops(), "queue_drops_all_kinds": net.drops(), "pfc": list(pfc) if pfc else None,
           "pause_frames": net.pause_frames}
    out.update({f"short_{k}": v for k, v in completion_figures(short, cfg.rtt_s).items()})
    out.update({f"long_{k}": v for k, v in completion_figures(long, cfg.rtt_s).items() if k != "base_rtt_ms"})
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cc", nargs="+", default=["tita", "dcqcn", "none"])
    p.add_argument("--senders", nargs="+", type=int, default=[7, 15])
    p.add_argument("--message-bytes", type=int, default=128 * 1024)
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--wake-late-us", type=float, default=0.0)
    p.add_argument("--pfc", type=int, nargs=2, metavar=("XOFF", "XON"), default=None,
                   help="PFC on every link into a switch: pause at XOFF DATA cells queued from one link, resume at XON")
    p.add_argument("--run", nargs="+", default=[], metavar="VARIANT_DIR",
                   help="instead: the same figures from emulated variant directories")
    a = p.parse_args(argv)
    if a.run:
        for d in a.run:
            print(json.dumps(from_run(d)))
        return
    for n in a.senders:
        for cc in a.cc:
            print(json.dumps(incast(cc, n, a.message_bytes, a.count, wake_late_s=a.wake_late_us / 1e6,
                                    pfc=tuple(a.pfc) if a.pfc else None)))


if __name__ == "__main__":
    main()
