"""The addressing plan: IPs, MACs, device ids and management ports.

Host addresses (one per host, /24 per ToR group, /16 per pod):

* leaf-spine, single-homed: ``10.<leaf>.0.<j>`` for host j (1-based) of leaf
  ``leaf<leaf>``.
* leaf-spine, dual-homed: ``10.<pair>.0.<j>`` where leaves ``2*pair-1`` and
  ``2*pair`` form the pair.
* fat-tree, single-homed: ``10.<pod>.<edge>.<j>`` (pod 1..k, edge 1..k/2,
  j 1..k/2).
* fat-tree, dual-homed: ``10.<pod>.<pair>.<j>`` where the pod's edges
  ``2*pair-1`` and ``2*pair`` form the pair.

A dual-homed host keeps one address on both NIC ports, so a failed port
moves traffic to the other without renumbering; every switch routes the
host's address towards both of its ToRs.

MACs are locally administered and derived, so they are stable and readable:
host NIC port p of 10.a.b.c is ``02:0a:aa:bb:cc:pp``; switch port p of device
d is ``02:5e:DD:DD:00:pp`` (d as 16 bits).

Switches get device ids 1..n in build order (leaves then spines; edges,
aggregations, cores), P4Runtime gRPC port ``9559 + id - 1`` and bmv2 Thrift
port ``9090 + id - 1``, matching simple_switch_grpc's defaults for id 1.
"""

from __future__ import annotations

GRPC_BASE_PORT = 9559
THRIFT_BASE_PORT = 9090
HOST_PREFIX_LEN = 24


def host_ip(a: int, b: int, c: int) -> str:
    return f"10.{a}.{b}.{c}"


def host_mac(ip: str, nic_port: int) -> str:
    _, a, b, c = (int(x) for x in ip.split("."))
    return f"02:0a:{a:02x}:{b:02x}:{c:02x}:{nic_port:02x}"


def switch_port_mac(device_id: int, port: int) -> str:
    return f"02:5e:{device_id >> 8:02x}:{device_id & 0xFF:02x}:00:{port:02x}"


def grpc_port(device_id: int) -> int:
    return GRPC_BASE_PORT + device_id - 1


def thrift_port(device_id: int) -> int:
    return THRIFT_BASE_PORT + device_id - 1


def group_prefix(ip: str) -> str:
    """The /24 a host's ToR group announces."""
    a, b, c, _ = ip.split(".")
    return f"{a}.{b}.{c}.0/{HOST_PREFIX_LEN}"
