"""The hosts' counters a run keeps: the difference of its two readings.

An emulated run reads each host's qdisc, NIC port and UDP counters just
before the agents start and just after they end (live/host_readings.py) and
keeps both in result.json under `host_counters` ("before", "after").  What a
host lost during the run is after minus before, for each counter both
readings hold.  The qdisc's kind and its backlog are states, not counts:
they are kept as the later reading gives them.
"""

from __future__ import annotations


def difference(before: dict, after: dict) -> dict:
    """after - before, per host, for every counter both readings hold (kind kept)."""
    out = {}
    for host, late in after.items():
        early = before.get(host, {})
        qdisc = {}
        for interface, counters in late.get("qdisc", {}).items():
            base = early.get("qdisc", {}).get(interface, {})
            qdisc[interface] = {k: (v if k in ("kind", "backlog_packets") else v - base.get(k, 0))
                                for k, v in counters.items()}
        link = {i: {k: v - early.get("link", {}).get(i, {}).get(k, 0) for k, v in counters.items()}
                for i, counters in late.get("link", {}).items()}
        udp = {k: v - early.get("udp", {}).get(k, 0) for k, v in late.get("udp", {}).items()}
        out[host] = {"qdisc": qdisc, "link": link, "udp": udp}
    return out
