"""Pluggable congestion control: `tita`, `dcqcn`, `nscc`, `none` (see base.py)."""

from __future__ import annotations

from testbed.host.cc.base import ReceiverCC, SenderCC
from testbed.host.cc.dcqcn import DcqcnReceiver, DcqcnSender
from testbed.host.cc.none import NoneReceiver, NoneSender
from testbed.host.cc.nscc import NsccReceiver, NsccSender
from testbed.host.cc.tita import TitaReceiver, TitaSender
from testbed.host.config import TransportConfig

_ALGOS = {
    "none": (NoneSender, NoneReceiver),
    "dcqcn": (DcqcnSender, DcqcnReceiver),
    "tita": (TitaSender, TitaReceiver),
    "nscc": (NsccSender, NsccReceiver),
}
ALGORITHMS = tuple(_ALGOS)  # every `cc` a scenario may name


def make_sender_cc(cfg: TransportConfig, now: float) -> SenderCC:
    return _ALGOS[cfg.cc][0](cfg, now)


def make_receiver_cc(cfg: TransportConfig) -> ReceiverCC:
    return _ALGOS[cfg.cc][1](cfg)


__all__ = ["ALGORITHMS", "ReceiverCC", "SenderCC", "make_receiver_cc", "make_sender_cc"]
