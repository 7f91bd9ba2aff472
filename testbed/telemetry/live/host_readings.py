"""One reading of where a host loses packets outside the switches: its NIC qdisc, its NIC ports
and its UDP sockets.

Read once before the agents start and once after they end, inside each
host's namespace: `tc -s -j qdisc show dev IF` (packets the tbf pacer sent
and dropped per interface), `ip -s -j link show dev IF` (frames the
interface dropped on transmit: a veth whose far end is down drops what it
is given, so a port sends into a cut cable until its host notices) and
`/proc/net/snmp` (UDP InErrors, RcvbufErrors: datagrams the kernel dropped
on the receive side, e.g. a full socket buffer).  The run keeps both
readings in result.json; telemetry/host_counters.py subtracts them.
"""

from __future__ import annotations

import json

UDP_FIELDS = ("InDatagrams", "InErrors", "RcvbufErrors", "SndbufErrors", "OutDatagrams", "NoPorts")


def parse_snmp_udp(text: str) -> dict[str, int]:
    """The Udp: header and value lines of /proc/net/snmp as {field: value}."""
    rows = [line.split()[1:] for line in text.splitlines() if line.startswith("Udp:")]
    if len(rows) < 2:
        return {}
    values = dict(zip(rows[0], (int(v) for v in rows[1])))
    return {k: values[k] for k in UDP_FIELDS if k in values}


def parse_qdisc(text: str) -> dict[str, int]:
    """The root qdisc's counters from `tc -s -j qdisc show dev IF`."""
    try:
        rows = json.loads(text)
    except json.JSONDecodeError:
        return {}
    root = next((r for r in rows if r.get("root")), rows[0] if rows else None)
    if not root:
        return {}
    return {"kind": root.get("kind"), "packets": int(root.get("packets", 0)), "bytes": int(root.get("bytes", 0)),
            "drops": int(root.get("drops", 0)), "backlog_packets": int(root.get("qlen", 0))}


def parse_link(text: str) -> dict[str, int]:
    """Transmit drops and errors from `ip -s -j link show dev IF`."""
    try:
        rows = json.loads(text)
        tx = rows[0]["stats64"]["tx"]
        return {"tx_dropped": int(tx.get("dropped", 0)), "tx_errors": int(tx.get("errors", 0))}
    except (json.JSONDecodeError, IndexError, KeyError, TypeError, ValueError):
        return {}


def read_host(node, interfaces: list[str], run_in) -> dict:
    """One reading of a host: {"qdisc": {interface: counters}, "link": {interface: counters}, "udp": counters}.

    run_in(node, argv, what=...) runs argv in the host's namespace and returns its output (the
    emulation's emulation.network.run_in); the readings are parsed here.
    """
    qdisc = {i: parse_qdisc(run_in(node, ["tc", "-s", "-j", "qdisc", "show", "dev", i], what=f"read qdisc of {i}"))
             for i in interfaces}
    link = {i: parse_link(run_in(node, ["ip", "-s", "-j", "link", "show", "dev", i], what=f"read counters of {i}"))
            for i in interfaces}
    udp = parse_snmp_udp(run_in(node, ["cat", "/proc/net/snmp"], what="read /proc/net/snmp"))
    return {"qdisc": qdisc, "link": link, "udp": udp}

