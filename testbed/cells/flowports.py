"""One UDP source port per flow, so that flow-hash ECMP hashes flows, not hosts."""

from __future__ import annotations

import hashlib
import socket

from testbed.errors import TestbedError


class FlowPortError(TestbedError):
    """No source port could be bound for a flow."""


FLOW_PORT_BASE, FLOW_PORTS = 49152, 16384


def flow_source_port(seed: int, src: str, dst: str, channel: int = 0) -> int:
    """The UDP source port of the flow from `src` to `dst` on `channel`: what ECMP hashes.

    RoCE NICs give each queue pair its own source port so that flow-hash
    ECMP sees flows, not hosts; here each peer of a host is one flow per
    collective channel (channel 0: every other message), and the run's seed
    moves every flow's port (and so its ECMP path)."""
    key = f"{seed}/{src}/{dst}" if channel == 0 else f"{seed}/{src}/{dst}/{channel}"
    digest = hashlib.blake2b(key.encode(), digest_size=4).digest()
    return FLOW_PORT_BASE + int.from_bytes(digest, "big") % FLOW_PORTS


class FlowSocket:
    """The socket one flow sends from, bound to its own source port; every
    cell still goes to the peer's cell port, where one socket receives all."""

    __slots__ = ("sock", "sport", "_tos")

    def __init__(self, sock: socket.socket, sport: int) -> None:
        self.sock, self.sport, self._tos = sock, sport, None

    @classmethod
    def open(cls, addr: str, dst: str, seed: int, taken: set[int], device: str | None = None,
             channel: int = 0) -> "FlowSocket":
        first = flow_source_port(seed, addr, dst, channel)
        for step in range(FLOW_PORTS):
            sport = FLOW_PORT_BASE + (first - FLOW_PORT_BASE + step) % FLOW_PORTS
            if sport in taken:
                continue
            try:
                return cls.on_port(addr, sport, device)
            except OSError:
                continue
        raise FlowPortError(f"no free UDP source port on {addr} for the flow to {dst} (channel {channel})")

    @classmethod
    def on_port(cls, addr: str, sport: int, device: str | None = None) -> "FlowSocket":
        """A socket bound to (addr, sport), and to one NIC port's interface if `device` is
        given: a dual-port NIC's flow sends from the same source port on each of its ports
        (the address is the same on both, so only the device binding picks the port)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if device is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
            sock.bind((addr, sport))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        return cls(sock, sport)

    def send(self, data: bytes, to: tuple[str, int], tos: int) -> None:
        if tos != self._tos:
            self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            self._tos = tos
        self.sock.sendto(data, to)
