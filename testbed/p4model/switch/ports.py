"""Switch ports as AF_PACKET raw sockets bound to network interfaces.

The switch runs in the root namespace and owns the switch-side end of each
veth, as bmv2 does in Mininet.  Per socket:

* bound to one interface and ETH_P_ALL, so it sees every frame arriving on it;
* PACKET_IGNORE_OUTGOING (Linux >= 4.20) so frames the switch itself sends
  are never delivered back to it; on older kernels the receive path checks
  the packet type (PACKET_OUTGOING) instead, at the cost of recvfrom();
* promiscuous membership, so frames for other MAC addresses arrive too;
* 4 MiB send and receive buffers (SO_*BUFFORCE as root), so a burst from a
  host does not overflow while the event loop is busy;
* non-blocking; the event loop drains a port until EAGAIN (bounded per turn).

Frames shorter than 14 bytes cannot reach a port from the wire (the kernel
refuses or pads such AF_PACKET sends), and sends that the kernel refuses
(EMSGSIZE above the interface MTU, ENOBUFS when the buffer is full, the
interface going down) are counted as tx_errors, never raised: one bad frame
must not stop the switch.
"""

from __future__ import annotations

import errno
import socket

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32
BUFFER_BYTES = 4 << 20
MAX_FRAME = 65536
_RETRY = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR)


class PortError(OSError):
    pass


class RawPort:
    """One switch port on one interface."""

    __slots__ = ("number", "iface", "sock", "fd", "ignore_outgoing", "rx_frames", "tx_frames",
                 "tx_errors", "rx_bytes", "tx_bytes", "_recv", "_send", "_recvfrom")

    def __init__(self, number: int, iface: str, buffer_bytes: int = BUFFER_BYTES) -> None:
        self.number = number
        self.iface = iface
        try:
            index = socket.if_nametoindex(iface)
        except OSError:
            raise PortError(f"port {number}: there is no network interface {iface!r}") from None
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
                try:
                    sock.setsockopt(socket.SOL_SOCKET, force, buffer_bytes)
                except OSError:
                    sock.setsockopt(socket.SOL_SOCKET, plain, buffer_bytes)
            try:
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                self.ignore_outgoing = True
            except OSError:
                self.ignore_outgoing = False
            mreq = index.to_bytes(4, "little") + PACKET_MR_PROMISC.to_bytes(2, "little") + bytes(10)
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            sock.bind((iface, ETH_P_ALL))
            sock.setblocking(False)
        except OSError as error:
            sock.close()
            raise PortError(f"port {number}: cannot open interface {iface!r}: {error.strerror or error}") from None
        self.sock = sock
        self.fd = sock.fileno()
        self._recv = sock.recv
        self._recvfrom = sock.recvfrom
        self._send = sock.send
        self.rx_frames = self.tx_frames = self.tx_errors = self.rx_bytes = self.tx_bytes = 0

    def receive(self, budget: int) -> list[bytes]:
        """Up to `budget` frames that are waiting (never blocks)."""
        out = []
        recv = self._recv
        try:
            if self.ignore_outgoing:
                for _ in range(budget):
                    out.append(recv(MAX_FRAME))
            else:
                recvfrom = self._recvfrom
                for _ in range(budget):
                    data, addr = recvfrom(MAX_FRAME)
                    if addr[2] != PACKET_OUTGOING:
                        out.append(data)
        except OSError as error:
            if error.errno not in _RETRY and error.errno != errno.ENETDOWN:
                raise
        self.rx_frames += len(out)
        return out

    def send(self, data: bytes) -> bool:
        try:
            self._send(data)
        except OSError:
            self.tx_errors += 1
            return False
        self.tx_frames += 1
        self.tx_bytes += len(data)
        return True

    def stats(self) -> dict:
        return {"port": self.number, "iface": self.iface, "rx_frames": self.rx_frames,
                "tx_frames": self.tx_frames, "tx_errors": self.tx_errors, "tx_bytes": self.tx_bytes}

    def close(self) -> None:
        self.sock.close()
