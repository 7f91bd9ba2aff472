"""Link carrier of network interfaces: read now, and told at once when it changes.

A NIC port is usable when its interface is up and running (it has carrier:
the far end of the cable is up): IFF_UP and IFF_RUNNING.  `link_flags` reads them with
one ioctl; `LinkEvents` is an rtnetlink socket subscribed to link changes
(RTMGRP_LINK), so a driver learns of a pulled cable from the kernel in
microseconds instead of polling.  Both see the network namespace of the
process that opens them: a host agent sees its own NIC ports, the run (in
the root namespace) sees the switches' ends of every cable.
"""

from __future__ import annotations

import fcntl
import socket
import struct

SIOCGIFFLAGS = 0x8913
IFF_UP = 0x1
IFF_RUNNING = 0x40
RTMGRP_LINK = 0x1
RTM_NEWLINK, RTM_DELLINK = 16, 17
IFLA_IFNAME = 3
NLMSG_HEADER = struct.Struct("=IHHII")  # length, type, flags, sequence, pid
IFINFOMSG = struct.Struct("=BxHiII")  # family, (pad), type, index, flags, change
RTATTR = struct.Struct("=HH")  # length, type


def link_flags(name: str) -> int | None:
    """The interface's flags (IFF_*), or None if it does not exist here."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            raw = fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, struct.pack("16sH14x", name.encode()[:15], 0))
        except OSError:
            return None
    return struct.unpack_from("16sH", raw)[1]


def usable(flags: int | None) -> bool:
    return flags is not None and bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)


def parse_link_messages(data: bytes) -> list[tuple[str, bool]]:
    """(interface name, usable) for each RTM_NEWLINK / RTM_DELLINK in one netlink datagram."""
    out = []
    offset = 0
    while offset + NLMSG_HEADER.size <= len(data):
        length, kind, _flags, _seq, _pid = NLMSG_HEADER.unpack_from(data, offset)
        if length < NLMSG_HEADER.size or offset + length > len(data):
            break
        if kind in (RTM_NEWLINK, RTM_DELLINK) and length >= NLMSG_HEADER.size + IFINFOMSG.size:
            body = offset + NLMSG_HEADER.size
            _family, _type, _index, flags, _change = IFINFOMSG.unpack_from(data, body)
            name = _attribute(data, body + IFINFOMSG.size, offset + length, IFLA_IFNAME)
            if name is not None:
                out.append((name.rstrip(b"\0").decode(errors="replace"),
                            kind == RTM_NEWLINK and usable(flags)))
        offset += (length + 3) & ~3
    return out


def _attribute(data: bytes, start: int, end: int, wanted: int) -> bytes | None:
    while start + RTATTR.size <= end:
        length, kind = RTATTR.unpack_from(data, start)
        if length < RTATTR.size:
            return None
        if kind == wanted:
            return data[start + RTATTR.size:start + length]
        start += (length + 3) & ~3
    return None


class LinkEvents:
    """A non-blocking rtnetlink socket that receives every link change of this namespace."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind((0, RTMGRP_LINK))
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def read(self) -> list[tuple[str, bool]]:
        """Every change queued so far, oldest first."""
        out = []
        while True:
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return out
            out += parse_link_messages(data)

    def close(self) -> None:
        self.sock.close()
