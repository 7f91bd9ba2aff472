"""Where packets were lost, by type and place, and whether every DATA cell is accounted for.

Places, each counted where it happens:
  * switch queue (traffic manager tail drop): per cell type (builtin target);
  * link loss (a degraded link's random loss, modelled by the upstream
    traffic manager): per cell type;
  * a cut link (switch port send errors; host NIC port transmit drops): not per type;
  * switch program (fabric.p4 drop counters): per reason, not per type, except
    credit_over_rate, which only credits can hit;
  * switch priority (a priority without a queue) and switch output (a frame
    for a port without an interface): not per type;
  * host qdisc (the tbf pacer of each host NIC): not per type;
  * host socket (UDP RcvbufErrors + InErrors in the host's namespace): not per type;
  * host without a listener (UDP NoPorts: a datagram to a port nobody had bound
    yet, e.g. a cell that reached an agent before it started): not per type.

Conservation of DATA cells, per variant: sent by the agents (handed to their
sockets) = received by the agents + dropped at switch queues + lost at a place
that does not say the type + in flight at the end.  `unaccounted` is what the
typed counts leave over; it balances when that is 0, or when it is no larger
than the untyped losses plus what was still queued at the end (the report
then says so); a larger remainder, or a negative one, is a cell the counters
lost or invented.
"""

from __future__ import annotations

from testbed.cells import wire
from testbed.telemetry.links import CELL_TYPES

CREDIT_PROGRAM_REASONS = ("credit_over_rate",)


def switch_queue_drops(tm_stats: dict) -> dict[str, int]:
    """Tail drops per cell type name, all switches; 'unclassified' when the TM was not told."""
    from testbed.cells.classify import CELL_CLASS_NAMES

    out: dict[str, int] = {}
    for stats in tm_stats.values():
        for q in stats.get("queues", []):
            for cls, counts in (q.get("by_class") or {}).items():
                if counts.get("dropped"):
                    name = CELL_CLASS_NAMES.get(int(cls), f"class_{cls}")
                    out[name] = out.get(name, 0) + counts["dropped"]
    return out


def link_losses(tm_stats: dict) -> dict[str, int]:
    """Packets a degraded link lost (TM `lost_link_by_class`), per cell type name, all switches."""
    from testbed.cells.classify import CELL_CLASS_NAMES

    out: dict[str, int] = {}
    for stats in tm_stats.values():
        for port in stats.get("tm", {}).get("ports", []):
            for cls, n in (port.get("lost_link_by_class") or {}).items():
                name = CELL_CLASS_NAMES.get(int(cls), f"class_{cls}")
                out[name] = out.get(name, 0) + n
    return out


def switch_queue_drops_total(tm_stats: dict) -> int:
    return sum(q.get("dropped_full", 0) for s in tm_stats.values() for q in s.get("queues", []))


def in_queue_at_end(tm_stats: dict) -> int:
    return sum(q.get("depth", 0) for s in tm_stats.values() for q in s.get("queues", []))


def switch_priority_drops(tm_stats: dict) -> int:
    return sum(p.get("dropped_priority", 0) for s in tm_stats.values() for p in s.get("tm", {}).get("ports", []))


def switch_port_send_errors(tm_stats: dict) -> int:
    """Frames the builtin switches could not send out of a port (its interface down)."""
    return sum(port.get("tx_errors", 0) for s in tm_stats.values() for port in (s.get("port_io") or {}).values())


def host_losses(host_counters: dict) -> dict[str, dict[str, int]]:
    """Per host: qdisc drops (all NICs) and UDP receive errors, after minus before."""
    from testbed.telemetry.host_counters import difference

    before, after = host_counters.get("before"), host_counters.get("after")
    if not before or not after:
        return {}
    out = {}
    for host, diff in difference(before, after).items():
        out[host] = {"qdisc_drops": sum(q.get("drops", 0) for q in diff["qdisc"].values()),
                     "nic_port_tx_dropped": sum(c.get("tx_dropped", 0) + c.get("tx_errors", 0)
                                                for c in diff.get("link", {}).values()),
                     "udp_rcvbuf_errors": diff["udp"].get("RcvbufErrors", 0),
                     "udp_in_errors": diff["udp"].get("InErrors", 0),
                     "udp_no_ports": diff["udp"].get("NoPorts", 0)}
    return out


def per_type_counts(host_stats: dict[str, dict], prefix: str) -> dict[str, int]:
    """Sum over hosts of tx_<TYPE> or rx_<TYPE> counts."""
    key = "tx_counts" if prefix == "tx" else "rx_counts"
    out: dict[str, int] = {}
    for stats in host_stats.values():
        for name, count in (stats.get(key) or {}).items():
            if name.startswith(prefix + "_"):
                t = name[len(prefix) + 1:]
                out[t] = out.get(t, 0) + count
    return out


def drops_and_balance(tm_stats: dict, program_drops: dict[str, int], host_stats: dict[str, dict],
                      host_counters: dict, target: str | None, restarts: list | None = None) -> dict:
    """The drop split and the DATA conservation check of one variant (see the module docstring)."""
    queue_by_type = switch_queue_drops(tm_stats)
    lost_by_type = link_losses(tm_stats)
    hosts = host_losses(host_counters)
    qdisc = sum(h["qdisc_drops"] for h in hosts.values())
    nic_ports = sum(h["nic_port_tx_dropped"] for h in hosts.values())
    port_errors = switch_port_send_errors(tm_stats)
    # InErrors counts RcvbufErrors too (the kernel adds both for a full buffer): take InErrors, the larger.
    socket = sum(max(h["udp_in_errors"], h["udp_rcvbuf_errors"]) for h in hosts.values())
    no_listener = sum(h["udp_no_ports"] for h in hosts.values())
    sender_socket = sum(s.get("socket_errors", 0) for s in host_stats.values())
    malformed = sum((s.get("errors") or {}).get("malformed", 0) for s in host_stats.values())
    program_untyped = sum(v for k, v in program_drops.items() if k not in CREDIT_PROGRAM_REASONS)
    priority = switch_priority_drops(tm_stats)
    counted_sends = any("tx_counts" in s for s in host_stats.values())
    sent = per_type_counts(host_stats, "tx")
    received = per_type_counts(host_stats, "rx")
    by_type = {}
    for name in CELL_TYPES.values():
        if sent.get(name) or received.get(name) or queue_by_type.get(name):
            by_type[name] = {"sent": sent.get(name, 0) if counted_sends else None,
                             "received": received.get(name, 0), "switch_queue_drops": queue_by_type.get(name, 0),
                             "link_losses": lost_by_type.get(name, 0)}
            by_type[name]["unaccounted"] = (None if not counted_sends else by_type[name]["sent"]
                                            - by_type[name]["received"] - by_type[name]["switch_queue_drops"]
                                            - by_type[name]["link_losses"])
    untyped = {"switch program (not credit)": program_untyped, "switch priority": priority,
               "host qdisc": qdisc, "host NIC port transmit (link down)": nic_ports,
               "switch port send errors (link down)": port_errors,
               "host socket receive": socket, "host without a listener": no_listener,
               "sender socket errors": sender_socket,
               "malformed at receiver": malformed}
    queued_at_end = in_queue_at_end(tm_stats)
    out = {"switch_queue_drops_by_type": queue_by_type, "link_losses_by_type": lost_by_type,
           "switch_queue_drops_packets": switch_queue_drops_total(tm_stats),
           "switch_program_drops_by_reason": dict(program_drops),
           "untyped_losses_packets": untyped, "hosts": hosts, "by_type": by_type,
           "queued_at_end_packets": queued_at_end}
    data = by_type.get(CELL_TYPES[wire.DATA])
    if data is None or data["sent"] is None or target != "builtin" or not host_counters.get("after") or restarts:
        out["data_balance"] = {"verdict": "not checked", "why": (
            "no DATA cells were sent" if data is None else
            "the agents did not count what they sent" if data["sent"] is None else
            f"{target} does not count its queue drops" if target != "builtin" else
            "the hosts' qdisc and socket counters were not read" if not host_counters.get("after") else
            f"{', '.join(sorted({r['switch'] for r in restarts}))} restarted: its counters started again "
            f"and what its queues held was lost uncounted")}
        return out
    slack = sum(untyped.values()) + queued_at_end
    unaccounted = data["unaccounted"]
    if unaccounted == 0:
        verdict = "balances"
    elif 0 < unaccounted <= slack:
        verdict = "balances within untyped losses"
    else:
        verdict = "does not balance"
    out["data_balance"] = {"verdict": verdict, "sent": data["sent"], "received": data["received"],
                           "switch_queue_drops": data["switch_queue_drops"], "link_losses": data["link_losses"],
                           "unaccounted": unaccounted,
                           "untyped_losses_and_queued": slack}
    return out
