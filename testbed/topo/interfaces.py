"""The Linux interface name of each end of a cable, one rule per kind of port.

A switch port is `<switch>-eth<port>`; a host's NIC port n (from 1) is
`<host>-eth<n-1>`; the end of a local channel towards GPU g of the same
server is `<host>-nv<g>`, numbered LOCAL_PORT_BASE + g where a port number is
needed.  The emulation creates interfaces under these names and telemetry
finds them in a run's records by the same names.
"""

from __future__ import annotations

LOCAL_PORT_BASE = 100  # Mininet port number of a local-channel interface: 100 + the peer's GPU index


def switch_interface(switch: str, port: int) -> str:
    return f"{switch}-eth{port}"


def host_interface(host: str, nic_port: int) -> str:
    return f"{host}-eth{nic_port - 1}"


def local_interface(host: str, peer_gpu: int) -> str:
    return f"{host}-nv{peer_gpu}"
