"""Drive a TitaReceiver alone: every credit is answered at once by the DATA cell echoing it, so
only the receiver's choice of flow decides who gets each credit (the credit-order tests)."""

from __future__ import annotations

from testbed.cells import wire
from testbed.host.cc.tita import TitaReceiver

CELL = 1024


def request(rx: TitaReceiver, now: float, src: str, cells: int, last_seen: int = 0) -> None:
    """A CREDIT_REQUEST for `cells` on flow 1 from `src`, its sender's last credit `last_seen`."""
    rx.on_control(now, src, wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=1, aux=cells * CELL,
                                            credit_seq=last_seen))


def drive(rx: TitaReceiver, until: float, now: float = 0.0, arrivals=()) -> tuple[list[str], float]:
    """Poll at each deadline up to `until`, answering each credit at once; `arrivals`: (time, src,
    cells) requests made on the way. Returns who got each credit, in order, and the time reached."""
    order, pending = [], sorted(arrivals)
    while now < until:
        while pending and pending[0][0] <= now:
            _, src, cells = pending.pop(0)
            request(rx, now, src, cells)
        for src, credit in rx.poll(now):
            order.append(src)
            rx.on_data(now, src, wire.CellPacket(type=wire.DATA, flow_id=1, credit_seq=credit.credit_seq), False)
        due = rx.deadline()
        if pending and (due is None or pending[0][0] < due):
            due = pending[0][0]
        if due is None:
            break
        now = max(due, now + 1e-7)
    return order, now
