"""What the P4Runtime server needs from the switch it controls.

The server never touches a Pipeline while packets flow through it: every
read, write, pipeline swap and packet-out runs through `Device.call(fn)`,
which executes `fn` in the packet thread between two packets (the switch
process queues it to its event loop) and returns its result or raises its
exception in the caller.  That keeps the packet path free of locks and
makes each control-plane operation atomic with respect to packets.

`DirectDevice` is the in-process implementation used by tests and tools:
`call` holds a lock, and `process(port, data)` pushes one packet through
`pipeline.process` (the ideal-queue path) under the same lock, handing
packets for the CPU port to the server as PacketIn; what PacketOuts
produce is kept in `transmitted` (the last 1024 frames).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable


class Device:
    """Interface; see the module docstring."""

    clock = None
    cpu_port: int | None = None
    drop_port: int = 511  # programs are compiled for it (mark_to_drop)

    def call(self, fn: Callable[[], Any]) -> Any:
        raise NotImplementedError

    def install(self, config) -> None:
        """Inside call(): start using config.pipeline (or no pipeline for None)."""
        raise NotImplementedError

    def inject(self, data: bytes) -> None:
        """Inside call(): a PacketOut's bytes enter the pipeline on the CPU port."""
        raise NotImplementedError

    def attach(self, server) -> None:
        """The server that receives PacketIn and digests (server.packet_in(data), server.after_packets(now))."""
        self.server = server


class DirectDevice(Device):
    def __init__(self, clock=None, cpu_port: int | None = None) -> None:
        from testbed.p4model.clock import MonotonicClock

        self.clock = clock or MonotonicClock()
        self.cpu_port = cpu_port
        self.lock = threading.RLock()
        self.pipeline = None
        self.server = None
        self.transmitted: deque = deque(maxlen=1024)  # outputs of PacketOuts (port, data)

    def call(self, fn: Callable[[], Any]) -> Any:
        with self.lock:
            return fn()

    def install(self, config) -> None:
        self.pipeline = config.pipeline if config is not None else None
        if self.pipeline is not None:
            self.pipeline.cpu_port = self.cpu_port

    def inject(self, data: bytes) -> None:
        if self.pipeline is None or self.cpu_port is None:
            return
        self.transmitted.extend(self._route(self.pipeline.process(self.cpu_port, data)))

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """One packet in; the non-CPU outputs out (CPU-port outputs become PacketIns)."""
        with self.lock:
            if self.pipeline is None:
                return []
            return self._route(self.pipeline.process(port, data))

    def _route(self, outputs) -> list[tuple[int, bytes]]:
        out = []
        for port, data in outputs:
            if port == self.cpu_port and self.server is not None:
                self.server.packet_in(data)
            else:
                out.append((port, data))
        if self.server is not None:
            self.server.after_packets(self.clock.now_ns())
        return out
