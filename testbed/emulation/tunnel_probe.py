"""The one-way delay and jitter of the tunnels between servers, from echoed probes.

`send` puts `count` probe frames on each of its interfaces, one per
interface every `gap_ms`, each carrying its sequence number and the send
time on this machine's monotonic clock; `reflect`, on the far end's server,
sends every probe it receives back on the interface it came in on. The
sender's clock alone times each round trip, so the servers' clocks need not
agree: the one-way delay is half the round trip (a tunnel's two directions
take the same path through the same processes). Jitter is the mean absolute
difference of successive one-way delays (RFC 3550's estimator without its
smoothing). The frames are of a local experimental EtherType (0x88B5),
which nothing else on the interfaces sends or answers.

Output of `send`: one JSON line, interface -> {sent, received, one_way_us:
{mean, p50, p99, max}, jitter_us}.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import statistics
import struct
import sys
import time

ETHERTYPE = 0x88B5
MAGIC = b"TBPR"
PACKET_OUTGOING = 4
_BODY = struct.Struct("!4sIQ")  # magic, sequence, send time (ns)


def _open(interface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    sock.bind((interface, ETHERTYPE))
    sock.setblocking(False)
    return sock


def frame(sequence: int, sent_ns: int) -> bytes:
    header = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + struct.pack("!H", ETHERTYPE)
    return (header + _BODY.pack(MAGIC, sequence, sent_ns)).ljust(60, b"\0")


def parse(data: bytes) -> tuple[int, int] | None:
    """(sequence, send time) of a probe frame, None for anything else."""
    if len(data) < 14 + _BODY.size:
        return None
    magic, sequence, sent_ns = _BODY.unpack_from(data, 14)
    return (sequence, sent_ns) if magic == MAGIC else None


def figures(sent: int, one_way_us: list[float]) -> dict:
    """Summary of one interface's one-way delays (in the order the probes were sent)."""
    if not one_way_us:
        return {"sent": sent, "received": 0, "one_way_us": None, "jitter_us": None}
    ordered = sorted(one_way_us)
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    jitter = (statistics.fmean(abs(b - a) for a, b in zip(one_way_us, one_way_us[1:]))
              if len(one_way_us) > 1 else 0.0)
    return {"sent": sent, "received": len(one_way_us),
            "one_way_us": {"mean": round(statistics.fmean(one_way_us), 1), "p50": round(p(0.5), 1),
                           "p99": round(p(0.99), 1), "max": round(ordered[-1], 1)},
            "jitter_us": round(jitter, 1)}


def send(interfaces: list[str], count: int, gap_s: float, linger_s: float = 1.0) -> dict:
    sockets = {name: _open(name) for name in interfaces}
    by_fd = {s.fileno(): name for name, s in sockets.items()}
    rtt_ns: dict[str, dict[int, int]] = {name: {} for name in interfaces}

    def receive(until: float) -> None:
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select(list(sockets.values()), [], [], left)
            now = time.monotonic_ns()
            for sock in ready:
                name = by_fd[sock.fileno()]
                while True:
                    try:
                        data, address = sock.recvfrom(2048)
                    except BlockingIOError:
                        break
                    probe = parse(data)
                    if probe is not None and address[2] != PACKET_OUTGOING:
                        rtt_ns[name].setdefault(probe[0], now - probe[1])

    start = time.monotonic()
    for sequence in range(count):
        for sock in sockets.values():
            sock.send(frame(sequence, time.monotonic_ns()))
        receive(start + (sequence + 1) * gap_s)
    receive(time.monotonic() + linger_s)
    for sock in sockets.values():
        sock.close()
    return {name: figures(count, [rtt_ns[name][s] / 2e3 for s in sorted(rtt_ns[name])]) for name in interfaces}


def reflect(interfaces: list[str], seconds: float) -> None:
    """Echo probes for at most `seconds`, or until stdin closes (its starter is done with it)."""
    sockets = [_open(name) for name in interfaces]
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select(sockets + [sys.stdin], [], [], left)
        if sys.stdin in ready and not sys.stdin.buffer.read1(4096):
            return
        for sock in ready:
            if sock is sys.stdin:
                continue
            while True:
                try:
                    data, address = sock.recvfrom(2048)
                except BlockingIOError:
                    break
                if address[2] != PACKET_OUTGOING and parse(data) is not None:
                    sock.send(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.emulation.tunnel_probe")
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("send")
    s.add_argument("--count", type=int, default=200)
    s.add_argument("--gap-ms", type=float, default=2.0)
    s.add_argument("interfaces", nargs="+")
    r = sub.add_parser("reflect")
    r.add_argument("--seconds", type=float, required=True)
    r.add_argument("interfaces", nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.mode == "send":
            print(json.dumps(send(args.interfaces, args.count, args.gap_ms / 1e3)), flush=True)
        else:
            reflect(args.interfaces, args.seconds)
    except OSError as error:
        print(f"tunnel probe: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
