"""The two halves of a congestion-control algorithm.

A sender half lives in each outgoing flow and decides *when* the flow may
send its next cell (rate pacing), how many cells it may have in flight (a
window, `window_cells`; None = no window) or whether sending is
credit-gated. A
receiver half lives once per host and turns arriving cells into control
cells (CNPs, credits). Both are sans-IO: they get `now` and return cells;
timers are exposed as `deadline()` and serviced by `on_timer(now)`.
"""

from __future__ import annotations

from testbed.cells.wire import CellPacket


class SenderCC:
    """Per-flow sender side. Rate-based by default."""

    credit_gated = False
    # Cells the flow may have in flight (sent, not yet acknowledged nor queued for
    # retransmission); None: no window beyond the reliability window.
    window_cells: float | None = None

    def next_send_time(self) -> float:
        """Earliest time the flow may send its next cell."""
        return 0.0

    def on_sent(self, now: float, nbytes: int) -> None:
        pass

    def on_cnp(self, now: float) -> None:
        pass

    def on_ack(self, now: float, acked_cells: int, sent_s: float | None, rtt_s: float | None,
               ece: bool) -> None:
        """An ACK acknowledged `acked_cells` new cells; `sent_s` and `rtt_s` are the send time and
        round trip of the newest of them sent only once (None: no sample, Karn), `ece` whether it
        echoes a CE mark (the newest cell it acknowledges was marked)."""

    def on_loss(self, now: float, timeout: bool = False) -> None:
        """The reliability layer inferred a loss: a NACK it acted on, or (`timeout`) a
        retransmission timeout."""

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
