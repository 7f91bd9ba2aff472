"""The two halves of a congestion-control algorithm.

A sender half lives in each outgoing flow and decides *when* the flow may
send its next cell (rate pacing) or whether sending is credit-gated. A
receiver half lives once per host and turns arriving cells into control
cells (CNPs, credits). Both are sans-IO: they get `now` and return cells;
timers are exposed as `deadline()` and serviced by `on_timer(now)`.
"""

from __future__ import annotations

from testbed.host.wire import CellPacket


class SenderCC:
    """Per-flow sender side. Rate-based by default."""

    credit_gated = False

    def next_send_time(self) -> float:
        """Earliest time the flow may send its next cell."""
        return 0.0

    def on_sent(self, now: float, nbytes: int) -> None:
        pass

    def on_cnp(self, now: float) -> None:
        pass

    def deadline(self) -> float | None:
        return None

    def on_timer(self, now: float) -> None:
        pass

    @property
    def rate_bps(self) -> float | None:
        return None

    def set_link_rate(self, rate_bps: float) -> None:
        """The NIC's rate changed (a port of a dual-port NIC went down or came back)."""


class ReceiverCC:
    """Per-host receiver side; returns (peer address, cell) pairs to send."""

    def on_data(self, now: float, src: str, cell: CellPacket, ce: bool) -> list[tuple[str, CellPacket]]:
        return []

    def on_control(self, now: float, src: str, cell: CellPacket) -> list[tuple[str, CellPacket]]:
        return []

    def on_nack_sent(self, src: str, flow_id: int, count: int) -> None:
        pass

    def on_downlink(self, now: float, nbytes: int) -> None:
        """A non-DATA frame of `nbytes` (on the wire) arrived on this host's link."""

    def poll(self, now: float) -> list[tuple[str, CellPacket]]:
        return []

    def deadline(self) -> float | None:
        return None

    def set_link_rate(self, rate_bps: float) -> None:
        """The host's link rate changed (a port of a dual-port NIC went down or came back)."""

    def stats(self) -> dict:
        return {}
