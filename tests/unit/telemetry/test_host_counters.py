"""Parsing the hosts' qdisc and UDP counters (live), and subtracting the two readings (offline)."""

from testbed.telemetry import host_counters
from testbed.telemetry.live import host_readings

SNMP = """Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 3218 81 7 3300 5 0 0 0 0
UdpLite: InDatagrams NoPorts
UdpLite: 0 0
"""

QDISC = ('[{"kind":"tbf","handle":"8001:","root":true,"refcnt":2,"options":{},"bytes":90000,"packets":100,'
         '"drops":3,"overlimits":9,"requeues":0,"backlog":0,"qlen":0}]')


def test_parse_snmp_takes_the_udp_line_only():
    udp = host_readings.parse_snmp_udp(SNMP)
    assert udp["InErrors"] == 7 and udp["RcvbufErrors"] == 5 and udp["InDatagrams"] == 3218
    assert "IgnoredMulti" not in udp


def test_parse_qdisc_and_difference():
    q = host_readings.parse_qdisc(QDISC)
    assert q == {"kind": "tbf", "packets": 100, "bytes": 90000, "drops": 3, "backlog_packets": 0}
    before = {"h1": {"qdisc": {"h1-eth0": {"kind": "tbf", "packets": 10, "bytes": 900, "drops": 1,
                                           "backlog_packets": 0}},
                     "udp": {"RcvbufErrors": 2, "InErrors": 2}}}
    after = {"h1": {"qdisc": {"h1-eth0": q}, "udp": {"RcvbufErrors": 5, "InErrors": 7}}}
    diff = host_counters.difference(before, after)
    assert diff["h1"]["qdisc"]["h1-eth0"]["drops"] == 2
    assert diff["h1"]["qdisc"]["h1-eth0"]["packets"] == 90
    assert diff["h1"]["udp"] == {"RcvbufErrors": 3, "InErrors": 5}
