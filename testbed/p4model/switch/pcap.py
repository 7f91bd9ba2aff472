"""Standard libpcap files, one per port and direction, as bmv2 writes them.

bmv2's `--pcap DIR` writes `<iface>_in.pcap` and `<iface>_out.pcap`; tcpdump
and Wireshark read them.  Format: the classic pcap header (magic
0xa1b2c3d4, version 2.4, microsecond timestamps, link type 1 = Ethernet)
and one record per frame.  Writes go through a buffered file so the packet
path pays one struct.pack and one buffered write per frame; `flush()` /
`close()` push the buffer to disk (the switch does both on exit, and
flushes every second while running so a crash loses at most a second).
"""

from __future__ import annotations

import os
import struct
import time

LINKTYPE_ETHERNET = 1
SNAPLEN = 262144
_FILE_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Append frames to one pcap file."""

    __slots__ = ("path", "_file", "frames")

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self._file = open(self.path, "wb", buffering=1 << 16)
        self._file.write(_FILE_HEADER)
        self.frames = 0

    def write(self, data: bytes, timestamp: float | None = None) -> None:
        if timestamp is None:
            timestamp = time.time()
        sec = int(timestamp)
        usec = int((timestamp - sec) * 1_000_000)
        length = len(data)
        captured = data if length <= SNAPLEN else data[:SNAPLEN]
        self._file.write(_RECORD.pack(sec, usec, len(captured), length))
        self._file.write(captured)
        self.frames += 1

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def read_pcap(path: str | os.PathLike) -> list[tuple[float, bytes]]:
    """(timestamp, frame) of every record; for tests and tools."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, _, _, _, _, linktype = struct.unpack_from("<IHHiIII", data, 0)
    if magic != 0xA1B2C3D4 or linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"{path}: not a microsecond Ethernet pcap file")
    out, off = [], len(_FILE_HEADER)
    while off + _RECORD.size <= len(data):
        sec, usec, caplen, _ = _RECORD.unpack_from(data, off)
        off += _RECORD.size
        out.append((sec + usec / 1e6, data[off:off + caplen]))
        off += caplen
    return out


class PortCapture:
    """The in/out pair of one port, named after its interface like bmv2."""

    __slots__ = ("rx", "tx")

    def __init__(self, directory: str, iface: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self.rx = PcapWriter(os.path.join(directory, f"{iface}_in.pcap"))
        self.tx = PcapWriter(os.path.join(directory, f"{iface}_out.pcap"))

    def flush(self) -> None:
        self.rx.flush()
        self.tx.flush()

    def close(self) -> None:
        self.rx.close()
        self.tx.close()
