"""No congestion control: every flow paced at the host's line rate.

The flow's pacer catches up like the NIC's (TransportConfig.nic_catchup_cells),
otherwise a single flow would lose every late wake-up of the agent anyway.

Shows what happens without control: an N:1 incast offers N times the
receiver's link and the fabric's buffers overflow.
"""

from __future__ import annotations

from testbed.host.cc.base import ReceiverCC, SenderCC
from testbed.host.config import TransportConfig
from testbed.host.pacing import Pacer


class NoneSender(SenderCC):
    def __init__(self, cfg: TransportConfig, now: float) -> None:
        self._pacer = Pacer(cfg.link_rate_bps, cfg.nic_catchup_s)

    def next_send_time(self) -> float:
        return self._pacer.next_free

    def on_sent(self, now: float, nbytes: int) -> None:
        self._pacer.consume(now, nbytes)

    @property
    def rate_bps(self) -> float:
        return self._pacer.rate_bps

    def set_link_rate(self, rate_bps: float) -> None:
        self._pacer.set_rate(rate_bps)


class NoneReceiver(ReceiverCC):
    def __init__(self, cfg: TransportConfig) -> None:
        pass
