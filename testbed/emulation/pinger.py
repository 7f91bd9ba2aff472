"""Ping many hosts from one process: the ping-all check of a large fabric.

`python -m testbed.emulation.pinger --timeout S --window N IP...` sends one ICMP
echo request to each address, at most N unanswered at a time, and prints
`{"failed": [addresses that did not answer within S seconds]}`.

Why not one `ping` per pair: a k=8 fat-tree has 16,256 ordered host pairs. Started
at once they are 16,256 processes (tens of CPU-seconds to fork) and a burst of as
many packets, which overflows queues on a fabric slowed to its fitted rate, where a
round trip is seconds. One process per host with a window keeps each host's pings
in flight below what the queues hold; the caller staggers the target lists so the
hosts do not all aim at the same receiver at once.

With tenants (`tenants:`), a host's targets are split in two (`targets`): the hosts
of its own tenant, which must answer, and every other host, which its ToR must not
let it reach (the caller pings them too and counts each answer as a breach).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct
import sys
import time

ECHO_REQUEST, ECHO_REPLY = 8, 0


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def echo_request(ident: int, seq: int) -> bytes:
    payload = b"testbed-pingall"
    header = struct.pack("!BBHHH", ECHO_REQUEST, 0, 0, ident, seq)
    return struct.pack("!BBHHH", ECHO_REQUEST, 0, checksum(header + payload), ident, seq) + payload


def targets(hosts: list[str], tenant_of: dict[str, int]) -> dict[str, tuple[list[str], list[str]]]:
    """Per host, (the hosts it must reach, the hosts it must not), each staggered: host i aims at
    i+1, i+2, ...  Without tenants (`tenant_of` empty) every other host is in the first list."""
    out = {}
    for i, src in enumerate(hosts):
        order = hosts[i + 1:] + hosts[:i]
        if not tenant_of:
            out[src] = (order, [])
            continue
        mine = tenant_of.get(src)
        within = [h for h in order if mine is not None and tenant_of.get(h) == mine]
        out[src] = (within, [h for h in order if h not in within])
    return out


def ping_all(targets: list[str], timeout_s: float, window: int) -> list[str]:
    """The targets that did not answer (each gets one request and `timeout_s` to answer)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.setblocking(False)
    ident = os.getpid() & 0xFFFF
    waiting: dict[int, float] = {}  # seq -> deadline
    answered: set[int] = set()
    failed: list[int] = []
    nxt = 0
    try:
        while nxt < len(targets) or waiting:
            now = time.monotonic()
            while nxt < len(targets) and len(waiting) < window:
                try:
                    sock.sendto(echo_request(ident, nxt), (targets[nxt], 0))
                    waiting[nxt] = now + timeout_s
                except OSError:
                    failed.append(nxt)
                nxt += 1
            for seq in [s for s, deadline in waiting.items() if deadline <= now]:
                del waiting[seq]
                failed.append(seq)
            if not waiting:
                continue
            wait = max(0.0, min(waiting.values()) - now)
            if select.select([sock], [], [], wait)[0]:
                while True:
                    try:
                        packet = sock.recv(2048)
                    except BlockingIOError:
                        break
                    ihl = (packet[0] & 0x0F) * 4
                    kind, _, _, rid, seq = struct.unpack("!BBHHH", packet[ihl:ihl + 8])
                    if kind == ECHO_REPLY and rid == ident and seq in waiting:
                        del waiting[seq]
                        answered.add(seq)
    finally:
        sock.close()
    return [targets[s] for s in sorted(failed)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.emulation.pinger",
                                     description="Ping many addresses from one process (one echo each).")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds each address has to answer")
    parser.add_argument("--window", type=int, default=8, help="requests unanswered at a time")
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args(argv)
    if args.timeout <= 0 or args.window < 1:
        print("pinger: --timeout must be > 0 and --window >= 1", file=sys.stderr)
        return 2
    try:
        failed = ping_all(args.targets, args.timeout, args.window)
    except OSError as error:
        print(f"pinger: cannot ping: {error.strerror}", file=sys.stderr)
        return 1
    print(json.dumps({"failed": failed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
