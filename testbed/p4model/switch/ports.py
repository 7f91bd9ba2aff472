"""Switch ports as AF_PACKET raw sockets bound to network interfaces.

The switch runs in the root namespace and owns the switch-side end of each
veth, as bmv2 does in Mininet.  Each port's socket is bound to one interface
with ETH_P_ALL (bound last, so no other interface's frame is queued first),
promiscuous, non-blocking, with 4 MiB buffers, and PACKET_IGNORE_OUTGOING so
the switch never receives its own frames (on kernels before 4.20 the receive
path checks PACKET_OUTGOING instead).

By default a port has PACKET_MMAP rings (TPACKET_V2, RX and TX in one mmap):
receive() copies frames out of the RX ring without a syscall, send() writes
into the next TX slot, and flush() hands every queued frame to the kernel
with one send().  When the ring setup fails the port uses plain recv() and
send() (`rings` is False; `RawPort(..., rings=False)` forces it).

The rules:

* A port's frame order never changes.  A frame the ring cannot carry (too
  short, longer than a slot or MTU + 14, or its slot still held by the
  kernel) goes out after a flush, on a second ring-less socket.  An RX frame
  longer than a slot is read with recv(); an empty slot on a readable port
  resumes at the oldest frame the kernel wrote (`rx_resyncs`).
* A send the kernel refuses (EMSGSIZE, ENOBUFS, interface down) is counted in
  tx_errors, never raised: one bad frame must not stop the switch.  Frames a
  flush finds queued on a down link are dropped into tx_errors, as a wire
  would lose them.
* The ring protocol relies on x86 store/load order: Python has no memory
  barriers (the kernel's side has its own).

docs/p4model-switch.md ("Ports") gives the sizes and the details.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import select
import socket
import struct

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_RX_RING = 5
PACKET_COPY_THRESH = 7
PACKET_VERSION = 10
TPACKET_V2 = 1
PACKET_TX_RING = 13
PACKET_LOSS = 14
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32
SIOCGIFMTU = 0x8921
TP_STATUS_USER = 1          # RX: the frame is ours (0 hands it back to the kernel)
TP_STATUS_COPY = 2          # RX: truncated in the ring, whole on the socket's queue
TP_STATUS_SEND_REQUEST = 1  # TX: 0 = the slot is free
BUFFER_BYTES = 4 << 20
MAX_FRAME = 65536
ETH_HLEN = 14
FRAME_SIZE = 2048   # one slot: a 1514-byte frame plus the 66-byte RX header; jumbo frames take the plain path
RX_FRAMES = 1024    # 2 MiB: absorbs a burst of 1024 frames while the loop is busy (80 ports per machine)
TX_FRAMES = 512     # 1 MiB: more than one service pass sends to a port; a full ring just flushes early
BLOCK_SIZE = max(1 << 16, mmap.PAGESIZE)  # ring blocks must be whole pages; 32 slots each
TX_DATA = 32        # TX frame data offset: TPACKET2_HDRLEN (52) - sizeof(struct sockaddr_ll) (20)
_RX_END = RX_FRAMES * FRAME_SIZE               # the TX ring follows the RX ring in the mapping
_TX_END = (RX_FRAMES + TX_FRAMES) * FRAME_SIZE
_RX_HDR = struct.Struct("=IIIH")  # tp_status, tp_len, tp_snaplen, tp_mac of struct tpacket2_hdr
_RX_STATUS = struct.Struct("=I")
_RX_TIME = struct.Struct("=II")   # tp_sec, tp_nsec: when the kernel took the frame
_RX_TIME_OFF = 16
_TX_HDR = struct.Struct("=III")   # tp_status, tp_len, tp_snaplen
_RELEASE = bytes(4)
_RETRY = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR)
_LINK_GONE = (errno.ENETDOWN, errno.ENXIO, errno.ENODEV)


class PortError(OSError):
    pass


class RawPort:
    """One switch port on one interface (PACKET_MMAP rings unless `rings=False` or unavailable)."""

    __slots__ = ("number", "iface", "sock", "fd", "ignore_outgoing", "rings", "mtu", "rx_frames", "tx_frames",
                 "tx_errors", "rx_bytes", "tx_bytes", "rx_truncated", "rx_resyncs", "socket_errors", "_recv", "_send",
                 "_recvfrom", "_mm",
                 "_plain", "_rx_off", "_tx_off", "_tx_last", "_tx_max", "_pending")

    def __init__(self, number: int, iface: str, buffer_bytes: int = BUFFER_BYTES, rings: bool = True) -> None:
        self.number = number
        self.iface = iface
        try:
            index = socket.if_nametoindex(iface)
        except OSError:
            raise PortError(f"port {number}: there is no network interface {iface!r}") from None
        self._mm = self._plain = None
        self.rings = False
        if rings:
            try:
                self._open(index, buffer_bytes, rings=True)
                self.rings = True
            except OSError:
                pass  # the plain path below; a real problem (interface gone) fails there too
        if not self.rings:
            try:
                self._open(index, buffer_bytes, rings=False)
            except OSError as error:
                raise PortError(f"port {number}: cannot open interface {iface!r}: "
                                f"{error.strerror or error}") from None
        self.fd = self.sock.fileno()
        self._recv = self.sock.recv
        self._recvfrom = self.sock.recvfrom
        self._send = (self._plain or self.sock).send
        self._rx_off = 0
        self._tx_off = self._tx_last = _RX_END
        self._pending = False
        self.rx_frames = self.tx_frames = self.tx_errors = self.rx_bytes = self.tx_bytes = self.rx_truncated = 0
        self.rx_resyncs = 0  # times the RX ring was found written elsewhere than our slot (_resync)
        self.socket_errors = 0  # pending errors cleared (a link that went down)

    def _open(self, index: int, buffer_bytes: int, rings: bool) -> None:
        """Set up self.sock (and with rings: the mmap and the plain TX socket); on error leave nothing open."""
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        mm = plain = None
        try:
            self._buffers(sock, buffer_bytes)
            try:
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                self.ignore_outgoing = True
            except OSError:
                if rings:
                    raise
                self.ignore_outgoing = False
            ifreq = fcntl.ioctl(sock, SIOCGIFMTU, struct.pack("16si20x", self.iface.encode(), 0))
            self.mtu = struct.unpack_from("i", ifreq, 16)[0]
            if rings:
                for option, value in ((PACKET_VERSION, TPACKET_V2), (PACKET_LOSS, 1), (PACKET_COPY_THRESH, 1)):
                    sock.setsockopt(SOL_PACKET, option, value)
                for option, frames in ((PACKET_RX_RING, RX_FRAMES), (PACKET_TX_RING, TX_FRAMES)):
                    sock.setsockopt(SOL_PACKET, option, struct.pack(
                        "IIII", BLOCK_SIZE, frames * FRAME_SIZE // BLOCK_SIZE, FRAME_SIZE, frames))
                mm = mmap.mmap(sock.fileno(), _TX_END)
                self._tx_max = min(FRAME_SIZE - TX_DATA, self.mtu + ETH_HLEN)
                plain = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0: never receives
                self._buffers(plain, buffer_bytes)
                plain.bind((self.iface, 0))
                plain.setblocking(False)
            mreq = index.to_bytes(4, "little") + PACKET_MR_PROMISC.to_bytes(2, "little") + bytes(10)
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            sock.bind((self.iface, ETH_P_ALL))
            sock.setblocking(False)
        except BaseException:
            for resource in (mm, plain, sock):
                if resource is not None:
                    resource.close()
            raise
        self.sock, self._mm, self._plain = sock, mm, plain

    @staticmethod
    def _buffers(sock: socket.socket, buffer_bytes: int) -> None:
        for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
            try:
                sock.setsockopt(socket.SOL_SOCKET, force, buffer_bytes)
            except OSError:
                sock.setsockopt(socket.SOL_SOCKET, plain, buffer_bytes)

    def receive(self, budget: int) -> list[bytes]:
        """Up to `budget` frames that are waiting (never blocks)."""
        mm = self._mm
        if mm is None:
            return self._receive_plain(budget)
        out = []
        off = self._rx_off
        unpack = _RX_HDR.unpack_from
        for _ in range(budget):
            status, length, snap, mac = unpack(mm, off)
            if not status & TP_STATUS_USER:
                break
            if snap == length:
                out.append(mm[off + mac:off + mac + snap])  # a copy: the slot is handed back next
            elif status & TP_STATUS_COPY:
                try:
                    out.append(self._recv(MAX_FRAME))
                except OSError:
                    self.rx_truncated += 1
            else:  # longer than a slot and the socket's receive buffer was full: only a prefix exists
                self.rx_truncated += 1
            mm[off:off + 4] = _RELEASE
            off += FRAME_SIZE
            if off == _RX_END:
                off = 0
        self._rx_off = off
        self.rx_frames += len(out)
        if not out:
            # Readable with an empty ring: a pending socket error (ENETDOWN when the
            # link goes down). Reading SO_ERROR clears it; else select() would report
            # the port readable forever and the loop would spin.
            error = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            self.socket_errors += bool(error)
            if not error and select.select((self.fd,), (), (), 0)[0]:
                self._resync()  # still readable with our slot empty: read next where the kernel writes
        return out

    def _resync(self) -> bool:
        """Readable, no error, and nothing at our slot: find where the kernel is writing.

        Seen after a flood of random jumbo frames (1 run in 5 of the robustness test):
        the kernel went on filling slots elsewhere in the ring while ours stayed empty, so
        the port never read again, and whole copies of truncated frames that no slot
        named any more piled up on the socket.  The oldest frame the kernel handed over
        (ring timestamps) is where reading resumes; with none, the queued copies belong to
        no slot and are dropped (counted as truncated), which also ends the readability.
        Returns True when there are frames to read again."""
        mm = self._mm
        oldest = None
        for off in range(0, _RX_END, FRAME_SIZE):
            if _RX_STATUS.unpack_from(mm, off)[0] & TP_STATUS_USER:
                stamp = _RX_TIME.unpack_from(mm, off + _RX_TIME_OFF)
                if oldest is None or stamp < oldest[0]:
                    oldest = (stamp, off)
        if oldest is not None:
            self._rx_off = oldest[1]
            self.rx_resyncs += 1
            return True
        while True:
            try:
                self._recv(MAX_FRAME)
            except OSError:
                return False
            self.rx_truncated += 1

    def _receive_plain(self, budget: int) -> list[bytes]:
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
        """Queue (rings) or send one frame; False (counted in tx_errors) if it cannot go out."""
        mm = self._mm
        if mm is None:
            return self._send_plain(data)
        n = len(data)
        off = self._tx_off
        if mm[off] or n < ETH_HLEN or n > self._tx_max:  # slot still the kernel's, or not a ring frame
            return self._send_slow(data, n)
        mm[off + TX_DATA:off + TX_DATA + n] = data
        _TX_HDR.pack_into(mm, off, TP_STATUS_SEND_REQUEST, n, n)
        self._tx_last = off
        off += FRAME_SIZE
        self._tx_off = off if off < _TX_END else _RX_END
        self._pending = True
        self.tx_frames += 1
        self.tx_bytes += n
        return True

    def _send_slow(self, data: bytes, n: int) -> bool:
        """send() of a frame that cannot go into the next slot as it is: flush first, keep the order."""
        if self._pending:
            self.flush()
            if self._pending:  # the kernel kept the queued frames (send buffer full, link down)
                self.tx_errors += 1
                return False
            if not self._mm[self._tx_off] and ETH_HLEN <= n <= self._tx_max:
                return self.send(data)
        return self._send_plain(data)

    def _send_plain(self, data: bytes) -> bool:
        try:
            self._send(data)
        except OSError:
            self.tx_errors += 1
            return False
        self.tx_frames += 1
        self.tx_bytes += len(data)
        return True

    def flush(self) -> None:
        """Transmit the frames send() queued in the TX ring (one syscall; nothing without rings)."""
        if self._pending:
            try:
                self.sock.send(b"", socket.MSG_DONTWAIT)
            except OSError as error:
                if error.errno in _LINK_GONE:
                    self._drop_queued()
            self._pending = self._mm[self._tx_last] == TP_STATUS_SEND_REQUEST

    def _drop_queued(self) -> None:
        """The link is down: the frames waiting in the TX ring are lost, as on a
        wire (kept, they would go out stale when the link comes back).  Their
        length becomes 0, a frame the kernel refuses: with PACKET_LOSS it
        skips it and frees the slot at the next flush (handing the slot back
        ourselves would leave the kernel's ring position behind ours)."""
        mm = self._mm
        for off in range(_RX_END, _TX_END, FRAME_SIZE):
            status, length, _ = _TX_HDR.unpack_from(mm, off)
            if status == TP_STATUS_SEND_REQUEST and length:  # queued, not yet taken by the kernel
                _TX_HDR.pack_into(mm, off, TP_STATUS_SEND_REQUEST, 0, 0)
                self.tx_frames -= 1
                self.tx_bytes -= length
                self.tx_errors += 1

    def stats(self) -> dict:
        return {"port": self.number, "iface": self.iface, "rx_frames": self.rx_frames,
                "tx_frames": self.tx_frames, "tx_errors": self.tx_errors, "tx_bytes": self.tx_bytes,
                "socket_errors": self.socket_errors, "rx_truncated": self.rx_truncated,
                "rx_resyncs": self.rx_resyncs}

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._plain.close()
        self.sock.close()
