"""The ports of a host's NIC: which one each datagram leaves by, and each port's wire.

A dual-homed host's NIC has one port on each of two ToRs and uses both at
once (active-active).  Which port a cell takes:

* `entropy` (the entropy spraying schemes): the entropy value's lowest
  digit, `nic` (testbed/topo/entropy.py), so the switches' path model and
  the mirrored echoes hold: an ACK or a credit's DATA cell leaves by the port
  its cell arrived on, and comes back to the ToR it left from.
* `flow` (ECMP and switch spraying): one port per flow, so a flow keeps one
  path as flow-hash ECMP expects: the port of the peer's channel-0 flow
  (its UDP source port modulo the ports), and channel c of a collective
  c ports further on, so a pair's channels use every port in turn.

A port that is down is not used: its cells take a live port, and in
`entropy` mode their `nic` digit is rewritten to that port, so whatever
answers them is mirrored to a ToR that can still reach this host.  A port
is down when it has no carrier (told by `testbed.host.carrier`: a cut
cable), or, in `entropy` mode, when it has gone silent: it has been sending
cells that are answered (DATA is acknowledged, a CREDIT brings DATA) for
`silence_s` and nothing has arrived on it for as long (its ToR died with
the cable still up; since answers are mirrored to the port their cell left
by, a live port always hears back).  A silent port is tried again
after `retry_s`; if it is still dead it goes silent again.  Each port is its own link: a cell starts on its
port's wire no earlier than the port is free, and reaches the ToR at the end
of its serialisation plus the link's delay (the host->ToR half of the link
model; the ToR's traffic manager models the other half).
"""

from __future__ import annotations

from dataclasses import dataclass

ENTROPY_OFFSET = 2  # the cell header's 16-bit entropy field (testbed/cells/wire.py)
ANSWERED = (0, 1)  # DATA and CREDIT cells (the low nibble of the first byte): each brings an answer back
CHOICES = ("entropy", "flow")


@dataclass
class NicPort:
    name: str
    carrier: bool = True
    silent_until: float | None = None  # gone silent: not used until then
    next_free: float = 0.0  # when this port's wire is free
    tx: int = 0  # datagrams sent by this port
    rerouted: int = 0  # datagrams that chose this port because theirs was down
    sending_since: float | None = None  # first send since something last arrived here
    last_rx: float = 0.0
    silences: int = 0

    @property
    def up(self) -> bool:
        return self.carrier and self.silent_until is None


class NicPorts:
    def __init__(self, names: list[str], port_rate_bps: float, choice: str = "flow",
                 silence_s: float | None = None) -> None:
        if not names:
            raise ValueError("a NIC needs at least one port")
        if choice not in CHOICES:
            raise ValueError(f"NIC port choice {choice!r} is not one of {', '.join(CHOICES)}")
        self.ports = [NicPort(n) for n in names]
        self.port_rate_bps = port_rate_bps
        # A host_slow fault's NIC rate (bit/s, all ports together); None: the ports' own rates.
        self.rate_cap_bps: float | None = None
        self.choice = choice
        # Silence means something only where answers come back by the port their cell left by.
        self.silence_s = silence_s if choice == "entropy" and len(names) > 1 else None
        self.retry_s = None if self.silence_s is None else 4 * self.silence_s
        self.changes: list[tuple[float, str, bool, str]] = []  # (time, port, up, why): for the records

    @property
    def live(self) -> int:
        return sum(1 for p in self.ports if p.up)

    def rate_bps(self) -> float:
        """What the NIC can send: every live port at its link's rate (at least one port's,
        so a host whose ports are all down still paces as if one came back), at most the
        slow-down's cap."""
        rate = max(1, self.live) * self.port_rate_bps
        return rate if self.rate_cap_bps is None else min(rate, self.rate_cap_bps)

    def wire_rate_bps(self) -> float:
        """One port's serialisation rate: its link's, or its share of the slow-down's cap."""
        if self.rate_cap_bps is None:
            return self.port_rate_bps
        return min(self.port_rate_bps, self.rate_cap_bps / max(1, self.live))

    def set_carrier(self, name: str, up: bool, now: float) -> bool:
        """Record a port's carrier; True if that changed whether it is used."""
        for port in self.ports:
            if port.name == name and port.carrier != up:
                was = port.up
                port.carrier = up
                port.sending_since, port.last_rx = None, now
                if port.up != was:
                    self.changes.append((now, name, port.up, "carrier"))
                    return True
        return False

    def heard(self, index: int, now: float) -> None:
        """Something arrived on port `index`."""
        port = self.ports[index]
        port.last_rx = now
        port.sending_since = None

    def check_silence(self, now: float) -> bool:
        """Ports gone silent leave, silent ones whose wait is over come back; True if any changed."""
        if self.silence_s is None:
            return False
        changed = False
        for port in self.ports:
            if not port.carrier:
                continue
            if port.silent_until is not None:
                if now >= port.silent_until:  # try it again
                    port.silent_until, port.sending_since, port.last_rx = None, None, now
                    self.changes.append((now, port.name, True, "retry"))
                    changed = True
            elif (port.sending_since is not None and now - port.sending_since >= self.silence_s
                  and now - port.last_rx >= self.silence_s and self.live > 1):
                port.silent_until = now + self.retry_s
                port.silences += 1
                self.changes.append((now, port.name, False, "silence"))
                changed = True
        return changed

    def choose(self, data: bytes, flow_port: int, channel: int = 0) -> tuple[int, bytes]:
        """(port index, datagram to send) for one cell of channel `channel`'s flow to a peer whose
        channel-0 flow has UDP source port `flow_port`."""
        n = len(self.ports)
        if n == 1:
            return 0, data
        if self.choice == "entropy":
            entropy = int.from_bytes(data[ENTROPY_OFFSET:ENTROPY_OFFSET + 2], "big")
            wanted = entropy % n
        else:
            entropy, wanted = None, (flow_port + channel) % n
        if self.ports[wanted].up:
            return wanted, data
        for step in range(1, n):
            other = (wanted + step) % n
            if self.ports[other].up:
                self.ports[other].rerouted += 1
                if entropy is not None:
                    value = entropy - wanted + other
                    data = data[:ENTROPY_OFFSET] + value.to_bytes(2, "big") + data[ENTROPY_OFFSET + 2:]
                return other, data
        return wanted, data  # every port is down: it is lost on the wire, as on a dead NIC

    def on_wire(self, index: int, start: float, wire_bytes: int, delay_s: float, cell_type: int = 0) -> float:
        """A datagram the pacer released at `start` goes on port `index`'s wire: when it reaches the ToR."""
        port = self.ports[index]
        begin = start if start > port.next_free else port.next_free
        port.next_free = begin + wire_bytes * 8 / self.wire_rate_bps()
        self.sent(index, start, cell_type)
        return port.next_free + delay_s

    def sent(self, index: int, now: float, cell_type: int = 0) -> None:
        """A cell left by port `index` (on_wire calls this; without a wire model, the driver)."""
        port = self.ports[index]
        port.tx += 1
        if port.sending_since is None and cell_type in ANSWERED:
            port.sending_since = now

    def stats(self) -> dict:
        return {p.name: {"tx": p.tx, "rerouted_to": p.rerouted, "up_at_end": p.up, "silences": p.silences}
                for p in self.ports}
