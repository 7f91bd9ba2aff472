"""One meter cell of bmv2 simple_switch: MeterState, and the colours it gives.

Both kinds of P4 meter are made of it: a meter array (externs.MeterArray)
holds one per index, and a table with a direct meter (tables.Table) gives
each entry its own.  It lives below both so that neither imports the other
for it.
"""

from __future__ import annotations

from typing import Optional

from testbed.p4model.clock import Clock, MonotonicClock
from testbed.p4model.errors import ControlPlaneError

GREEN, YELLOW, RED = 0, 1, 2


class MeterState:
    """One two-rate three-colour meter (RFC 2698, colour-blind) as bmv2
    runs it.

    bmv2 keeps, per rate, an integer token count capped at the burst size
    and refills it from a single time origin (the switch start; here the
    clock's zero): tokens_since_origin = floor(microseconds_since_origin *
    rate_per_microsecond), and a packet adds the increase since the
    previous packet (since configuration, for the first).  The peak bucket is
    tested first: short -> RED (nothing taken); else its tokens are taken
    and the committed bucket is tested: short -> YELLOW; else taken ->
    GREEN.  Configuring fills both buckets.  Unconfigured -> GREEN.
    Rates are per second (packets or bytes as the meter's kind), bursts in
    packets or bytes, as in a P4Runtime MeterConfig."""

    __slots__ = ("kind", "clock", "_config", "_rates")

    def __init__(self, kind: str, clock: Optional[Clock] = None) -> None:
        if kind not in ("packets", "bytes"):
            raise ValueError(f"bad meter kind {kind!r}")
        self.kind = kind
        self.clock = clock if clock is not None else MonotonicClock()
        self._config = None
        # per rate, peak first: [rate_per_us, burst, tokens, tokens_last, colour]
        self._rates = None

    def set_config(self, cir: int, cburst: int, pir: int, pburst: int) -> None:
        for name, v in (("cir", cir), ("cburst", cburst), ("pir", pir), ("pburst", pburst)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ControlPlaneError("INVALID_ARGUMENT",
                                        f"meter {name} {v!r} must be a non-negative integer")
        if cir > pir:
            raise ControlPlaneError("INVALID_ARGUMENT",
                                    f"meter committed rate {cir} exceeds peak rate {pir}")
        self._config = (cir, cburst, pir, pburst)
        # bmv2 stores rates per microsecond as doubles.
        self._rates = [
            [pir / 1e6, pburst, pburst, 0, RED],
            [cir / 1e6, cburst, cburst, 0, YELLOW],
        ]

    def get_config(self) -> Optional[tuple]:
        """(cir, cburst, pir, pburst), or None when unconfigured."""
        return self._config

    def reset_config(self) -> None:
        self._config = None
        self._rates = None

    def execute(self, packet_length_bytes: int) -> int:
        rates = self._rates
        if rates is None:
            return GREEN
        micros = self.clock.now_ns() // 1000
        need = 1 if self.kind == "packets" else packet_length_bytes
        for rate in rates:
            since_origin = int(micros * rate[0])
            new_tokens = since_origin - rate[3]
            rate[3] = since_origin
            tokens = rate[2] + new_tokens
            if tokens > rate[1]:
                tokens = rate[1]
            if tokens < need:
                rate[2] = tokens
                return rate[4]
            rate[2] = tokens - need
        return GREEN
