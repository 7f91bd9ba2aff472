"""The signals a switch process (or a fabric process) answers.

SIGTERM and SIGINT stop the loop (pcaps are flushed, servers stopped, exit 0).

SIGXCPU: what the loop does when it exceeds its real-time budget.

The emulation runs a switch's packet loop under SCHED_FIFO with an
RLIMIT_RTTIME soft limit (testbed/emulation/realtime.py): a thread that
uses that much CPU without once blocking gets SIGXCPU. A loop that is
overloaded (more packets due than it can handle, so select() never waits)
does that legitimately, and dying would lose the run and every counter in
it. So on SIGXCPU the loop thread returns to normal scheduling, says so
in its log once, and carries on: the run's fidelity verdict then reports
the lag it ran with. The hard limit still kills a loop that also ignores
this.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Callable


def handle_signals(stop: Callable[[], None], log: logging.Logger) -> dict:
    """Install the handlers (main thread: the packet loop's); returns what to restore()."""

    def on_stop(signum, frame):
        log.info("signal %d: stopping", signum)
        stop()

    previous = {sig: signal.signal(sig, on_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGXCPU] = signal.getsignal(signal.SIGXCPU)
    fall_back_to_normal_scheduling(log)
    return previous


def restore(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def fall_back_to_normal_scheduling(log: logging.Logger) -> None:
    """Install the SIGXCPU handler (main thread only: that is the packet loop's thread)."""

    def on_xcpu(signum, frame):
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError as error:
            log.error("real-time budget exceeded and normal scheduling refused (%s)", error)
            return
        log.warning("real-time budget exceeded (the loop ran without blocking for the RLIMIT_RTTIME soft "
                    "limit): running at normal priority from now on; departures may run late")

    signal.signal(signal.SIGXCPU, on_xcpu)
