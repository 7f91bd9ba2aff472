"""Traffic manager of the builtin switch: egress queues, link rate and delay.

model       TrafficManager (bmv2 egress-queue semantics + the link model)
transmit    TransmitSchedule (hold dequeued packets until transmit_at)
lag         LagStats (fidelity: how far the event loop fell behind schedule)
commands    TMCommands (the text control commands, usable without sockets)
control     the control port: CommandQueue, ControlServer, SwitchControlClient
            (imported from tm.control, not here: it needs sockets and threads)
switch_cli  `testbed switch-cli`, a client of the control port
"""

from testbed.p4model.tm.command_language import TMCommandError, TMCommands
from testbed.p4model.tm.lag import LagStats
from testbed.p4model.tm.model import (
    DEFAULT_DEPTH,
    DROP_FULL,
    DROP_PRIORITY,
    Departure,
    EnqueueResult,
    TMConfigError,
    TrafficManager,
)
from testbed.p4model.tm.transmit import TransmitSchedule

__all__ = [
    "DEFAULT_DEPTH",
    "DROP_FULL",
    "DROP_PRIORITY",
    "Departure",
    "EnqueueResult",
    "LagStats",
    "TMCommandError",
    "TMCommands",
    "TMConfigError",
    "TrafficManager",
    "TransmitSchedule",
]
